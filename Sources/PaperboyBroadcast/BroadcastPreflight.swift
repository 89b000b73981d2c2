import APNs
import Foundation
import Logging
import PaperboyCore
import PaperboyStore

/// What must hold before an edition is published or broadcast, checked up front so that a broadcast that
/// could never send anything is refused with the field at fault instead of failing every batch until the
/// deadline: every tier's push fits APNs' 4096 bytes, and the app's APNs key can be loaded.
public enum BroadcastPreflight {
    /// The push per tier for `edition`, as the dispatcher sends it: one definition for sending and checking.
    /// - Throws: `APNsNotificationError` when a push breaks APNs' rules (too large).
    public static func notifications(
        for edition: Edition,
        kind: BroadcastProgress.Wave.Kind
    ) throws -> [ImageTier: APNsNotification] {
        var notifications: [ImageTier: APNsNotification] = [:]
        for tier in ImageTier.allCases {
            notifications[tier] = try notification(for: edition, tier: tier, kind: kind)
        }
        return notifications
    }

    static func notification(for edition: Edition, tier: ImageTier, kind: BroadcastProgress.Wave.Kind) throws -> APNsNotification {
        let push = EditionPush(edition: edition, tier: tier)
        switch kind {
        case .background:
            return try .background(push, expiration: edition.deadline)
        case .alert:
            return try .alert(
                title: "Your \(edition.manifest.publication) edition is ready",
                body: "The edition of \(edition.manifest.issueDate) is waiting to be downloaded.",
                appKeys: push,
                expiration: edition.deadline
            )
        }
    }

    /// Refuses an edition one of whose pushes (background, or the last-resort alert) cannot be built.
    /// - Throws: `StoreError` (invalid) naming `tiers.<tier>.bundles`, the list that makes a push too large.
    public static func checkPushes(_ edition: Edition) throws(StoreError) {
        for tier in ImageTier.allCases {
            for kind in [BroadcastProgress.Wave.Kind.background, .alert] {
                do {
                    _ = try notification(for: edition, tier: tier, kind: kind)
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

    /// Refuses to broadcast an edition whose pushes cannot be built or whose app's APNs key cannot be loaded.
    /// - Throws: `StoreError`: not found (`edition`), invalid naming `tiers.<tier>.bundles` or `app`.
    public static func check(editionID: UUID, editions: EditionRepository, apps: AppRepository, logger: Logger) async throws {
        guard let edition = try await editions.find(id: editionID, logger: logger) else {
            throw StoreError(code: .notFound, field: "edition", message: "there is no edition \(editionID.uuidString.lowercased())")
        }
        try checkPushes(edition)
        guard let app = try await apps.find(id: edition.appID, logger: logger) else { return }
        do {
            _ = try APNsChannels.loadKey(app)
        } catch {
            throw StoreError(code: .invalid, field: "app", message: "\(error); nothing can be sent until the key is readable where Paperboy runs")
        }
    }
}
