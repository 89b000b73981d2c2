import APNs
import FCM
import Foundation
import Logging
import PaperboyCore
import PaperboyStore

/// What must hold before an edition is published or broadcast, checked up front so that a broadcast that
/// could never send anything is refused with the field at fault instead of failing every batch until the
/// deadline: every tier's push fits APNs' 4096 bytes, and the app can send through the providers of the
/// broadcast's audience.
public enum BroadcastPreflight {
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

    /// Refuses an edition one of whose pushes (background, or the last-resort alert) cannot be built, checked
    /// with the longest wave number a push may carry and a `sentAt` (always 20 characters).
    /// - Throws: `StoreError` (invalid) naming `tiers.<tier>.bundles`, the list that makes a push too large.
    public static func checkPushes(_ edition: Edition) throws(StoreError) {
        do {
            _ = try readyNotification(for: edition, wave: EditionPush.largestWave, sentAt: edition.publishedAt)
        } catch {
            let bundles = edition.manifest.tiers[ImageTier.small.rawValue]?.bundles.count ?? 0
            throw StoreError(
                code: .invalid,
                field: "tiers.small.bundles",
                message: "the ready alert (the small tier, for a Notification Service Extension) cannot be sent: \(error); it lists \(bundles) "
                    + "bundle URLs in the push, so use fewer, shorter URLs or larger bundles"
            )
        }
        for tier in ImageTier.allCases {
            for kind in [BroadcastProgress.Wave.Kind.background, .alert] {
                do {
                    _ = try notification(for: edition, tier: tier, kind: kind, wave: EditionPush.largestWave, sentAt: edition.publishedAt)
                    for platform in DevicePlatform.allCases {
                        _ = try fcmMessage(
                            for: edition,
                            tier: tier,
                            kind: kind,
                            wave: EditionPush.largestWave,
                            platform: platform,
                            priority: .normal,
                            sentAt: edition.publishedAt
                        )
                    }
                } catch {
                    let bundles = edition.manifest.tiers[tier.rawValue]?.bundles.count ?? 0
                    throw StoreError(
                        code: .invalid,
                        field: "tiers.\(tier.rawValue).bundles",
                        message: "the \(tier.rawValue) tier's \(kind.rawValue) push cannot be sent: \(error); it lists \(bundles) bundle URLs "
                            + "in the push, so use fewer, shorter URLs or larger bundles"
                    )
                }
            }
        }
    }

    /// Refuses to broadcast an edition whose pushes cannot be built, or whose audience in `environment` has
    /// devices of a provider the app cannot send through: APNs devices and no APNs credentials, or a key or
    /// service account that cannot be loaded. Only the providers the audience uses are checked: an FCM-only
    /// app needs no APNs key, and a sandbox broadcast (APNs only) no service account. FCM devices of an app
    /// without a service account are not refused: the dispatcher skips them (`fcmNotConfigured`).
    /// - Throws: `StoreError`: not found (`edition`), invalid naming `tiers.<tier>.bundles` or `app`.
    public static func check(
        editionID: UUID,
        environment: APNsEnvironment,
        editions: EditionRepository,
        apps: AppRepository,
        logger: Logger
    ) async throws {
        guard let edition = try await editions.find(id: editionID, logger: logger) else {
            throw StoreError(code: .notFound, field: "edition", message: "there is no edition \(editionID.uuidString.lowercased())")
        }
        try checkPushes(edition)
        guard let app = try await apps.find(id: edition.appID, logger: logger) else { return }
        let providers = try await editions.audienceProviders(editionID: editionID, environment: environment, logger: logger)
        try checkCredentials(app, for: providers)
    }

    /// Refuses an app that cannot send through one of `providers` (those of a broadcast's audience).
    /// - Throws: `StoreError` (invalid) naming `app`, with the provider in the message.
    public static func checkCredentials(_ app: App, for providers: Set<PushProvider>) throws(StoreError) {
        if providers.contains(.apns) {
            guard app.apns != nil else {
                throw StoreError(
                    code: .invalid,
                    field: "app",
                    message: "app \(app.id) (\(app.bundleID)) has APNs devices in this audience but no APNs credentials; "
                        + "add them with `paperboy apps set-apns` (or PUT /v1/apps/\(app.id)/apns)"
                )
            }
            try checkAPNsKey(app, field: "app")
        }
        if providers.contains(.fcm) {
            do {
                _ = try FCMChannels.loadAccount(app)
            } catch {
                throw StoreError(
                    code: .invalid,
                    field: "app",
                    message: "\(error); its FCM devices cannot be sent until the service account is readable where Paperboy runs"
                )
            }
        }
    }

    /// Loads the app's APNs key as the sender does (a P-256 key at the path, or in `env:VARIABLE`), here,
    /// where Paperboy runs: the check an API call makes before it stores new APNs credentials.
    /// - Throws: `StoreError` (invalid) naming `field` when the app has no APNs credentials or the key cannot
    ///   be loaded; the message never holds the key.
    public static func checkAPNsKey(_ app: App, field: String) throws(StoreError) {
        do {
            _ = try APNsChannels.loadKey(app)
        } catch {
            throw StoreError(code: .invalid, field: field, message: "\(error); nothing can be sent until the key is readable where Paperboy runs")
        }
    }
}
