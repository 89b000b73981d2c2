import Foundation
import Logging
import PaperboyCore
import PaperboyTesting
import PostgresNIO
import Testing

@testable import PaperboyStore

/// Ready at open's tallies (migration 0041) against the full count they replace: the status's old statement over
/// every open of the broadcast and the edition's receipts, run here as the reference.
@Suite("Ready-at-open tallies")
struct ReadyAtOpenTallyTests {
    typealias Fleet = ReceiptTallyTests.Fleet

    /// An open as the open report stores it: held when a successful receipt is there, else waiting since now;
    /// `unseen` stores it waiting although a receipt is there (a receipt committed while the open ran).
    static func open(_ fleet: Fleet, _ device: Int, broadcast: UUID, unseen: Bool = false) async throws {
        try await fleet.db.client.query(
            """
            INSERT INTO broadcast_opens (broadcast_id, device_id, waiting_since)
            SELECT \(broadcast), \(fleet.devices[device].id),
                CASE WHEN NOT \(unseen) AND EXISTS (
                    SELECT 1 FROM receipts r WHERE r.device_id = \(fleet.devices[device].id) AND r.edition_id = \(fleet.edition)
                        AND r.result <> 'failed')
                THEN NULL ELSE now() END
            ON CONFLICT DO NOTHING
            """,
            logger: fleet.db.logger
        )
    }

    /// The old statement's counts, with every waiter's wait bucketed in Swift (``ReadyAtOpen/WaitBuckets``).
    static func fullCount(_ fleet: Fleet, broadcast: UUID) async throws -> ReadyAtOpen {
        let rows = try await fleet.db.client.query(
            """
            SELECT count(*) FILTER (WHERE o.waiting_since IS NULL)::bigint, count(*) FILTER (WHERE o.waiting_since IS NOT NULL)::bigint,
                coalesce(array_agg(extract(epoch FROM r.received_at - o.waiting_since)::float8) FILTER (WHERE r.received_at IS NOT NULL), '{}')
            FROM broadcast_opens o
            LEFT JOIN receipts r ON o.waiting_since IS NOT NULL AND r.device_id = o.device_id AND r.edition_id = \(fleet.edition)
                AND r.result <> 'failed'
            WHERE o.broadcast_id = \(broadcast)
            """,
            logger: fleet.db.logger
        )
        for try await (ready, notReady, waits) in rows.decode((Int, Int, [Double]).self) {
            var counts: [Int: Int] = [:]
            for wait in waits { counts[ReadyAtOpen.WaitBuckets.bucket(ofSeconds: wait), default: 0] += 1 }
            let buckets = counts.keys.sorted()
            return ReadyAtOpen(ready: ready, notReady: notReady, waitBuckets: buckets, waitCounts: buckets.map { counts[$0]! })
        }
        throw CancellationError()
    }

    /// The tallies as the status and `paperboy insights ready-at-open` read them equal the full count, for both
    /// broadcasts; `waited`, the expected number of waits that ended for the running one.
    static func expectEqualToFullCount(
        _ fleet: Fleet,
        waited: Int,
        _ comment: Comment,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        for broadcast in [fleet.cancelled, fleet.running] {
            let tallied = try await HabitRepository(client: fleet.db.client).readyAtOpen(broadcastID: broadcast, logger: fleet.db.logger)
            #expect(tallied == (try await fullCount(fleet, broadcast: broadcast)), comment, sourceLocation: sourceLocation)
        }
        let status = try #require(
            try await BroadcastRepository(client: fleet.db.client).progress(id: fleet.running, logger: fleet.db.logger),
            sourceLocation: sourceLocation
        )
        #expect(status.readyAtOpen == (try await fullCount(fleet, broadcast: fleet.running)), comment, sourceLocation: sourceLocation)
        #expect(status.readyAtOpen?.waited == waited, comment, sourceLocation: sourceLocation)
    }

    @Test(
        "opens and receipts in either order, in one step or across steps, upgrades, second opens, a receipt the open did not see: each wait counted once, equal to the full count"
    )
    func equalToFullCount() async throws {
        try await TestDatabase.with { db in
            let fleet = try await ReceiptTallyTests.seed(db)
            let tallies = fleet.tallies
            try await Self.expectEqualToFullCount(fleet, waited: 0, "before any open")

            // Step 1: device 0 holds the edition when it opens; 1 and 2 open first, 2's receipt comes in the same
            // step; 3 fails before opening; 4 opens the cancelled broadcast only.
            try await fleet.receipt(0, .newData)
            try await Self.open(fleet, 0, broadcast: fleet.running)
            try await Self.open(fleet, 1, broadcast: fleet.running)
            try await Self.open(fleet, 2, broadcast: fleet.running)
            try await fleet.receipt(2, .noData)
            try await fleet.receipt(3, .failed)
            try await Self.open(fleet, 3, broadcast: fleet.running)
            try await Self.open(fleet, 4, broadcast: fleet.cancelled)
            let first = try #require(try await tallies.step(logger: db.logger))
            #expect(first.opens == 5 && first.waits == 1)
            try await Self.expectEqualToFullCount(fleet, waited: 1, "step 1")

            // Step 2: device 1's receipt comes a step after its open; 3's failure is upgraded; 1 opens again (not a
            // first open: nothing changes); 5 opens, waiting, with a receipt it did not see.
            try await fleet.receipt(1, .newData)
            try await fleet.receipt(3, .newData)
            try await Self.open(fleet, 1, broadcast: fleet.running)
            try await fleet.receipt(5, .newData)
            try await Self.open(fleet, 5, broadcast: fleet.running, unseen: true)
            let second = try #require(try await tallies.step(logger: db.logger))
            #expect(second.opens == 1 && second.waits == 3)
            try await Self.expectEqualToFullCount(fleet, waited: 4, "step 2")

            // Step 3: device 6 opens after its receipt was counted by an earlier step (held: nothing to wait for);
            // device 7's receipt was counted by step 2 and its open, which did not see it, comes now: the wait ends
            // with the open, counted once.
            try await fleet.receipt(7, .newData)
            try await tallies.step(logger: db.logger)
            try await fleet.receipt(6, .newData)
            try await tallies.step(logger: db.logger)
            try await Self.open(fleet, 6, broadcast: fleet.running)
            try await Self.open(fleet, 7, broadcast: fleet.running, unseen: true)
            let third = try #require(try await tallies.step(logger: db.logger))
            #expect(third.opens == 2 && third.waits == 1)
            try await Self.expectEqualToFullCount(fleet, waited: 5, "step 3: a wait ended by its open")
            let fourth = try #require(try await tallies.step(logger: db.logger))
            #expect(fourth.opens == 0 && fourth.waits == 0)

            // A recount gives the same; so does the migration's count of opens stored before it (no time).
            for broadcast in [fleet.cancelled, fleet.running] {
                try await tallies.recount(broadcastID: broadcast, now: Date(), logger: db.logger)
            }
            try await Self.expectEqualToFullCount(fleet, waited: 5, "recounted")
            try await db.client.query("DELETE FROM ready_at_open_tallies", logger: db.logger)
            try await db.client.query("UPDATE broadcast_opens SET opened_at = NULL", logger: db.logger)
            let migration = try #require(Migration.bundled.first { $0.name == "0041_ready_at_open_tallies.sql" })
            let backfill = try #require(migration.sql.range(of: "INSERT INTO ready_at_open_tallies"))
            try await db.client.query(PostgresQuery(unsafeSQL: String(migration.sql[backfill.lowerBound...])), logger: db.logger)
            try await Self.expectEqualToFullCount(fleet, waited: 5, "the migration's count")

            // An open stored before the migration whose receipt comes after it: the step ends its wait.
            try await db.client.query(
                "INSERT INTO broadcast_opens (broadcast_id, device_id, waiting_since, opened_at) VALUES (\(fleet.running), \(fleet.devices[8].id), now(), NULL)",
                logger: db.logger
            )
            try await db.client.query(
                "INSERT INTO ready_at_open_tallies VALUES (\(fleet.running), 1, 0, 1) ON CONFLICT (broadcast_id, kind, bucket) DO UPDATE SET count = ready_at_open_tallies.count + 1",
                logger: db.logger
            )
            try await fleet.receipt(8, .newData)
            let fifth = try #require(try await tallies.step(logger: db.logger))
            #expect(fifth.opens == 0 && fifth.waits == 1)
            try await Self.expectEqualToFullCount(fleet, waited: 6, "an open from before the migration")
        }
    }

    @Test(
        "the waits' median and 90th percentile are those of the openers who waited: held opens and openers still waiting are not waits of 0"
    )
    func percentilesOfTheWaitsOnly() async throws {
        try await TestDatabase.with { db in
            let fleet = try await ReceiptTallyTests.seed(db)
            // 1,000 first opens of devices beyond the fleet (the table keeps no foreign key): 500 held, 200 still
            // waiting, 300 that waited 1 to 300 minutes for a receipt that came now.
            try await db.client.query(
                """
                INSERT INTO broadcast_opens (broadcast_id, device_id, waiting_since)
                SELECT \(fleet.running), 1000000 + i, CASE WHEN i < 500 THEN NULL ELSE now() - (i - 699) * interval '1 minute' END
                FROM generate_series(0, 999) AS i
                """,
                logger: db.logger
            )
            try await db.client.query(
                """
                INSERT INTO receipts (device_id, edition_id, result, provider)
                SELECT 1000000 + i, \(fleet.edition), 'newData', 0 FROM generate_series(700, 999) AS i
                """,
                logger: db.logger
            )
            try await fleet.tallies.step(logger: db.logger)
            let ready = try #require(try await BroadcastRepository(client: db.client).progress(id: fleet.running, logger: db.logger)?.readyAtOpen)
            #expect(ready.opens == 1_000 && ready.ready == 500 && ready.waited == 300 && ready.stillWaiting == 200)
            // Nearest rank: the 150th and 270th of 1 … 300 minutes, within the buckets' 2.6 % of 1 s + the wait.
            let median = try #require(ready.medianWaitMinutes)
            let p90 = try #require(ready.p90WaitMinutes)
            #expect(abs(median - 150) <= (150 + 1.0 / 60) * 0.026, "median \(median) min")
            #expect(abs(p90 - 270) <= (270 + 1.0 / 60) * 0.026, "p90 \(p90) min")
        }
    }

    @Test("a wait's bucket is the same in the database as in Swift, from a millisecond to a week")
    func bucketsAgree() async throws {
        try await TestDatabase.with { db in
            let waits: [Double] = [-5, 0, 0.001, 0.05, 0.9, 1, 59.5, 61, 3_599, 86_400, 604_800]
            var binds = PostgresBindings()
            binds.append(waits)
            let rows = try await db.client.query(
                PostgresQuery(
                    unsafeSQL: "SELECT \(ReadyAtOpen.WaitBuckets.sql(wait: "w")) FROM unnest($1::float8[]) WITH ORDINALITY AS u(w, i) ORDER BY i",
                    binds: binds
                ),
                logger: db.logger
            )
            var buckets: [Int] = []
            for try await bucket in rows.decode(Int32.self) { buckets.append(Int(bucket)) }
            #expect(buckets == waits.map(ReadyAtOpen.WaitBuckets.bucket(ofSeconds:)))
        }
    }
}
