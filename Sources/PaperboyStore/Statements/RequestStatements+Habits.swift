import Foundation
import PaperboyCore
import PostgresNIO

extension RequestStatements {
    /// ``ReadDeviceHabit`` with its values bound, as the catalogue explains it.
    static func readDeviceHabit(appID: Int, candidates: [PushToken]) -> PostgresQuery {
        PostgresQuery(unsafeSQL: ReadDeviceHabit.sql, binds: ReadDeviceHabit(appID: appID, candidates: candidates).makeBindings())
    }

    /// ``WriteOpen`` with its values bound, as the catalogue explains it.
    static func writeOpen(deviceID: Int64, now: Date, learned: ReadingHabit?, key: Int32?) -> PostgresQuery {
        PostgresQuery(unsafeSQL: WriteOpen.sql, binds: WriteOpen(deviceID: deviceID, now: now, learned: learned, key: key).makeBindings())
    }

    /// A broadcast's first opens counted: all, those that found the edition held, those that waited for a receipt
    /// that came (with the median and 90th percentile of the wait, in seconds), and those still without one. One read
    /// of the broadcast's `broadcast_opens` rows by their primary key, and a receipt probe per opener who waited; with
    /// many opens the planner hashes the edition's receipts instead (300,000 opens at 1,000,000 devices: 659 ms). Either
    /// way it is O(opens) on every status: docs/limits.md.
    static func readyAtOpen(broadcastID: UUID, editionID: UUID) -> PostgresQuery {
        var binds = PostgresBindings(capacity: 2)
        binds.append(broadcastID)
        binds.append(editionID)
        return PostgresQuery(unsafeSQL: readyAtOpenSelect(broadcast: "$1", edition: "$2"), binds: binds)
    }

    /// ``readyAtOpen(broadcastID:editionID:)``'s statement for broadcast `broadcast` of edition `edition` (SQL
    /// expressions): one row, also as a part of the status (``BroadcastStatus``).
    static func readyAtOpenSelect(broadcast: String, edition: String) -> String {
        """
        SELECT count(*)::bigint, count(*) FILTER (WHERE o.waiting_since IS NULL)::bigint, count(r.received_at)::bigint,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY greatest(0, extract(epoch FROM r.received_at - o.waiting_since))::float8),
            percentile_cont(0.9) WITHIN GROUP (ORDER BY greatest(0, extract(epoch FROM r.received_at - o.waiting_since))::float8),
            count(*) FILTER (WHERE o.waiting_since IS NOT NULL AND r.received_at IS NULL)::bigint
        FROM broadcast_opens o
        LEFT JOIN receipts r ON o.waiting_since IS NOT NULL AND r.device_id = o.device_id AND r.edition_id = \(edition)
            AND r.result <> 'failed'
        WHERE o.broadcast_id = \(broadcast)
        """
    }

    /// The broadcasts created since `since` (of a publication, of an app), oldest first: `paperboy insights
    /// ready-at-open`'s list, through the index of broadcasts by creation.
    static func broadcastsForReadiness(publication: String?, appID: Int?, since: Date) -> PostgresQuery {
        """
        SELECT b.id, b.edition_id, p.app_id, p.slug, e.issue_date::text, b.environment, b.created_at
        FROM broadcasts b JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
        WHERE b.created_at >= \(since) AND b.state <> 'cancelled'
            AND (\(publication)::text IS NULL OR p.slug = \(publication)) AND (\(appID)::integer IS NULL OR p.app_id = \(appID))
        ORDER BY b.created_at
        """
    }
}
