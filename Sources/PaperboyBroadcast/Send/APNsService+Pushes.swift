import APNs
import Foundation
import PaperboyCore
import PaperboyStore

/// APNs' pushes for an edition: one definition for sending and for checking before an edition is published or
/// broadcast (``BroadcastPreflight``).
extension APNsService {
    /// The push per tier for `edition` in `wave`, as the dispatcher sends it: one definition for sending and
    /// checking.
    ///
    /// `sentAt` is the instant the push goes to APNs: the send path passes the `sentAt` of the group it sends
    /// (``BatchSendMachine``'s send instant, the one recorded in the ledger), so that the app can measure
    /// `secondsFromPush` from it. Nil leaves `sentAt` out of the payload (the app then counts from the push's
    /// arrival, which on iOS is the run).
    /// - Throws: `APNsNotificationError` when a push breaks APNs' rules (too large).
    public static func notifications(
        for edition: Edition,
        kind: BroadcastProgress.Wave.Kind,
        wave: Int,
        sentAt: Date? = nil
    ) throws -> [ImageTier: APNsNotification] {
        var notifications: [ImageTier: APNsNotification] = [:]
        for tier in ImageTier.allCases {
            notifications[tier] = try notification(for: edition, tier: tier, kind: kind, wave: wave, sentAt: sentAt)
        }
        return notifications
    }

    /// A background push names the device's tier. The alert last resort reaches an app that background pushes did
    /// not wake, through its Notification Service Extension when it has one: it carries what the extension can
    /// fetch in its 30 seconds and 24 MB, the small tier with the `extension` limits, as the ready alert does, so
    /// that one extension handles both (the app fetches the device's own tier when the reader opens it).
    static func notification(
        for edition: Edition,
        tier: ImageTier,
        kind: BroadcastProgress.Wave.Kind,
        wave: Int,
        sentAt: Date? = nil
    ) throws -> APNsNotification {
        switch kind {
        case .background:
            return try .background(EditionPush(edition: edition, tier: tier, wave: wave, sentAt: sentAt), expiration: edition.deadline)
        case .alert:
            return try alert(for: edition, wave: wave, sentAt: sentAt)
        }
    }

    /// The ready alert, sent in place of the last background follow-up to APNs devices whose reader asked to
    /// be told when the edition is ready: an alert with `mutable-content: 1`, for the app's Notification Service
    /// Extension to fetch the small tier (``EditionPush/ready(edition:wave:sentAt:)``) before iOS shows it.
    /// `sentAt` as for ``notifications(for:kind:wave:sentAt:)``.
    static func readyNotification(for edition: Edition, wave: Int, sentAt: Date? = nil) throws -> APNsNotification {
        try alert(for: edition, wave: wave, sentAt: sentAt)
    }

    /// An alert for the extension, in the app's words (``EditionAlertText``): they say the edition is out, never
    /// that it is ready on the phone, since iOS shows them as they are when the extension could not fetch it.
    private static func alert(for edition: Edition, wave: Int, sentAt: Date?) throws -> APNsNotification {
        let text = edition.alert
        return try .alert(
            title: text.title,
            body: text.body,
            appKeys: EditionPush.ready(edition: edition, wave: wave, sentAt: sentAt),
            expiration: edition.deadline
        )
    }

    /// Refuses an edition one of whose APNs pushes (the ready alert, each tier's background push and alert last
    /// resort) cannot be built, checked with the longest wave number a push may carry and a `sentAt` (always 20
    /// characters).
    public static func checkPushes(_ edition: Edition) throws(PushCheckFailure) {
        do {
            _ = try readyNotification(for: edition, wave: EditionPush.largestWave, sentAt: edition.publishedAt)
        } catch {
            throw PushCheckFailure(tier: .small, push: "the ready alert (the small tier, for a Notification Service Extension)", underlying: error)
        }
        for tier in ImageTier.allCases {
            for kind in [BroadcastProgress.Wave.Kind.background, .alert] {
                do {
                    _ = try notification(for: edition, tier: tier, kind: kind, wave: EditionPush.largestWave, sentAt: edition.publishedAt)
                } catch {
                    throw PushCheckFailure(tier: tier, push: "the \(tier.rawValue) tier's \(kind.rawValue) push", underlying: error)
                }
            }
        }
    }

    /// Refuses an app with APNs devices in an audience and no APNs key, or one this process cannot load.
    public static func checkCredentials(_ app: App) throws(ChannelError) {
        guard let credentials = credentials(of: app) else {
            throw ChannelError(
                message: "app \(app.id) (\(app.bundleID)) has APNs devices in this audience but no APNs credentials; "
                    + "add them with `paperboy apps set-apns` (or PUT /v1/apps/\(app.id)/apns)"
            )
        }
        do {
            _ = try load(credentials, app: app)
        } catch {
            throw ChannelError(message: "\(error); nothing can be sent until the key is readable where Paperboy runs")
        }
    }
}
