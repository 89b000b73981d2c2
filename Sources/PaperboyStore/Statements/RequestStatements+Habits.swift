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

    /// A broadcast's first opens as the tallies count them (migration 0041, counted by the receipt tallies' steps:
    /// ``ReceiptTallies``): those that found the edition held, those that did not, and the waits that ended since,
    /// by bucket (``ReadyAtOpen/WaitBuckets``). A few dozen rows by the tallies' primary key, whatever the opens.
    static func readyAtOpen(broadcastID: UUID) -> PostgresQuery {
        var binds = PostgresBindings(capacity: 1)
        binds.append(broadcastID)
        return PostgresQuery(unsafeSQL: readyAtOpenSelect(broadcast: "$1"), binds: binds)
    }

    /// ``readyAtOpen(broadcastID:)``'s statement for broadcast `broadcast` (an SQL expression): one row of `bigint`,
    /// `bigint`, `bigint[]`, `bigint[]` (``ReadyAtOpen/init(ready:notReady:waitBuckets:waitCounts:)``), also as a
    /// part of the status (``BroadcastStatus``) and of `paperboy insights ready-at-open`'s list.
    static func readyAtOpenSelect(broadcast: String) -> String {
        """
        SELECT coalesce(sum(count) FILTER (WHERE kind = 0), 0)::bigint, coalesce(sum(count) FILTER (WHERE kind = 1), 0)::bigint,
            coalesce(array_agg(bucket::bigint ORDER BY bucket) FILTER (WHERE kind = 2), '{}'),
            coalesce(array_agg(count ORDER BY bucket) FILTER (WHERE kind = 2), '{}')
        FROM ready_at_open_tallies WHERE broadcast_id = \(broadcast)
        """
    }

    /// The broadcasts created since `since` (of a publication, of an app), oldest first, each with its ready at open
    /// (``readyAtOpenSelect(broadcast:)``): `paperboy insights ready-at-open`'s list in one statement, through the
    /// index of broadcasts by creation.
    static func broadcastsForReadiness(publication: String?, appID: Int?, since: Date) -> PostgresQuery {
        """
        SELECT b.id, p.app_id, p.slug, e.issue_date::text, b.environment, b.created_at, r.*
        FROM broadcasts b JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
        CROSS JOIN LATERAL (\(unescaped: readyAtOpenSelect(broadcast: "b.id"))) r
        WHERE b.created_at >= \(since) AND b.state <> 'cancelled'
            AND (\(publication)::text IS NULL OR p.slug = \(publication)) AND (\(appID)::integer IS NULL OR p.app_id = \(appID))
        ORDER BY b.created_at
        """
    }
}
