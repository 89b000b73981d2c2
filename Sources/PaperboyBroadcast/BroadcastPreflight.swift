import Foundation
import Logging
import PaperboyCore
import PaperboyStore

/// What must hold before an edition is published or broadcast, checked up front so that a broadcast that
/// could never send anything is refused with the field at fault instead of failing every batch until the
/// deadline: every push of every provider can be built (4,096 bytes at APNs and at FCM), and the app can send through the providers of the
/// broadcast's audience.
public enum BroadcastPreflight {
    /// The providers a broadcast sends through, as their preflight checks: a new provider is one more line here (and
    /// its channels in the ``Dispatcher``'s list).
    static let services: [any PushService.Type] = [APNsService.self, FCMService.self]

    /// Refuses an edition one of whose pushes, through any provider, cannot be built (too large for the provider).
    /// - Throws: `StoreError` (invalid) naming `tiers.<tier>.bundles`, the list that makes a push too large.
    public static func checkPushes(_ edition: Edition) throws(StoreError) {
        for service in services {
            do {
                try service.checkPushes(edition)
            } catch {
                let bundles = edition.manifest.tiers[error.tier.rawValue]?.bundles.count ?? 0
                throw StoreError(
                    code: .invalid,
                    field: "tiers.\(error.tier.rawValue).bundles",
                    message: "\(error.push) cannot be sent: \(error.underlying); it lists \(bundles) bundle URLs in the push, "
                        + "so use fewer, shorter URLs or larger bundles"
                )
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
        for service in services where providers.contains(service.provider) {
            do {
                try service.checkCredentials(app)
            } catch {
                throw StoreError(code: .invalid, field: "app", message: error.message)
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
