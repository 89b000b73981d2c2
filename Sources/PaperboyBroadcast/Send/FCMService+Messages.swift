import FCM
import Foundation
import PaperboyCore
import PaperboyStore

/// FCM's messages for an edition: one definition for sending and for checking before an edition is published or
/// broadcast (``BroadcastPreflight``).
extension FCMService {
    /// The FCM message for a device of `platform` in `tier`, sent at `sentAt`: the APNs payload's keys as data
    /// (``EditionPush/fcmData()``), `sentAt` among them. Android: `android.priority` as the broadcast asks (an
    /// alert is always high), `ttl` the time left until the deadline (FCM drops it after), `collapse_key` the
    /// publication (a newer edition replaces an undelivered older one). iOS through FCM: the APNs headers of a
    /// background push, or of an alert, expiring at the deadline; an alert carries the extension's keys (the small
    /// tier and `extension`), as through APNs.
    /// - Throws: `FCMMessageError` when the message breaks FCM's rules (too large).
    public static func fcmMessage(
        for edition: Edition,
        tier: ImageTier,
        kind: BroadcastProgress.Wave.Kind,
        wave: Int,
        platform: DevicePlatform,
        priority: BroadcastOptions.AndroidPriority,
        sentAt: Date
    ) throws -> FCMMessage {
        let push =
            kind == .alert && platform == .ios
            ? EditionPush.ready(edition: edition, wave: wave, sentAt: sentAt)
            : EditionPush(edition: edition, tier: tier, wave: wave, sentAt: sentAt)
        let data = try push.fcmData()
        let target: FCMMessage.Target
        switch platform {
        case .android:
            let left = min(max(0, edition.deadline.timeIntervalSince(sentAt).rounded(.down)), 2_419_200)
            target = .android(
                priority: priority == .high ? .high : .normal,
                ttl: .seconds(Int(left)),
                collapseKey: edition.manifest.publication
            )
        case .ios:
            target = .ios(expiration: edition.deadline, collapseID: nil)
        }
        switch kind {
        case .background:
            return try .data(data, for: target)
        case .alert:
            let text = edition.alert
            return try .alert(title: text.title, body: text.body, data: data, for: target)
        }
    }

    /// Refuses an edition one of whose FCM messages (each tier, kind and platform) cannot be built, checked with the
    /// longest wave number a push may carry.
    public static func checkPushes(_ edition: Edition) throws(PushCheckFailure) {
        for tier in ImageTier.allCases {
            for kind in [BroadcastProgress.Wave.Kind.background, .alert] {
                for platform in DevicePlatform.allCases {
                    do {
                        _ = try fcmMessage(
                            for: edition,
                            tier: tier,
                            kind: kind,
                            wave: EditionPush.largestWave,
                            platform: platform,
                            priority: .normal,
                            sentAt: edition.publishedAt
                        )
                    } catch {
                        throw PushCheckFailure(
                            tier: tier,
                            push: "the \(tier.rawValue) tier's \(kind.rawValue) FCM message to \(platform.rawValue)",
                            underlying: error
                        )
                    }
                }
            }
        }
    }

    /// Refuses an app whose FCM service account this process cannot load. An app without one is not refused: its
    /// FCM devices are skipped (`fcmNotConfigured`).
    public static func checkCredentials(_ app: App) throws(ChannelError) {
        guard let credentials = app.fcm else { return }
        do {
            _ = try load(credentials, app: app)
        } catch {
            throw ChannelError(message: "\(error); its FCM devices cannot be sent until the service account is readable where Paperboy runs")
        }
    }
}
