import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// Wave 1's pushes counted towards dormancy after the wave (migration 0029), against PostgreSQL: nothing is counted
/// while the wave runs, everything once after it, whoever counts and however the broadcast ended.
@Suite("Wave 1's pushes counted after the wave")
struct PushCountTests {
    @Test(
        "nothing is counted while wave 1 runs; a broadcast cancelled meanwhile has its recorded pushes counted by a worker's next round, each device once"
    )
    func cancelledBroadcastCounted() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await DispatcherTests.startOneCohort(devices: 20, fixture: &fixture, now: t0)
            let id = started.broadcast.id
            let dispatcher = fixture.dispatcher()
            _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(10), dispatcher)
            let sent = try await fixture.scalar("SELECT count(*) FROM deliveries WHERE broadcast_id = \(id) AND outcome = 'accepted'")
            #expect(sent > 0 && sent < 20, "half of wave 1 recorded: \(sent)")
            #expect(try await fixture.scalar("SELECT count(*) FROM device_pushes") == 0, "counted while the wave runs")
            #expect(
                try await fixture.scalar("SELECT coalesce(sum(cardinality(device_ids)), 0) FROM uncounted_pushes WHERE broadcast_id = \(id)")
                    == sent
            )

            _ = try await fixture.repository.cancel(id: id, now: started.broadcast.start.addingTimeInterval(10), logger: fixture.logger)
            _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(40), dispatcher)
            let recorded = try await fixture.scalar("SELECT count(*) FROM deliveries WHERE broadcast_id = \(id) AND outcome = 'accepted'")
            #expect(try await fixture.scalar("SELECT count(*) FROM uncounted_pushes") == 0)
            #expect(try await fixture.scalar("SELECT count(*) FROM device_pushes") == recorded)
            #expect(
                try await fixture.scalar(
                    "SELECT count(*) FROM device_pushes p JOIN deliveries d ON d.device_id = p.device_id AND d.broadcast_id = \(id) AND d.wave = 1 WHERE p.pushed_edition = \(started.broadcast.editionID)"
                ) == recorded
            )
        }
    }

    @Test(
        "two workers counting one broadcast at once, a batch at a time, count each device once, however often it is listed; the dormant ones are flagged and tallied on their cohorts"
    )
    func concurrentCountsOnce() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await DispatcherTests.startOneCohort(devices: 60, fixture: &fixture, now: t0)
            let broadcast = started.broadcast
            var ids: [Int64] = []
            for try await id in try await fixture.db.client.query("SELECT id FROM devices ORDER BY id", logger: fixture.logger).decode(Int64.self) {
                ids.append(id)
            }
            // The first 10 devices were pushed the default dormantAfter - 1 editions before without answering: this
            // push makes them dormant.
            let before = UUID()
            try await fixture.db.client.query(
                """
                INSERT INTO device_pushes (device_id, pushed_edition, editions_unanswered)
                SELECT id, \(before), \(BroadcastOptions.defaultDormantAfter - 1) FROM unnest(\(Array(ids.prefix(10)))::bigint[]) AS u(id)
                """,
                logger: fixture.logger
            )
            // Batches of 5, the last ten devices listed twice (in two batches).
            var batches = stride(from: 0, to: ids.count, by: 5).map { Array(ids[$0..<min($0 + 5, ids.count)]) }
            batches.append(Array(ids.suffix(10)))
            try await fixture.recordPushes(batches, of: broadcast.id)
            let repository = fixture.repository
            let logger = fixture.logger
            let counts = try await withThrowingTaskGroup(of: BroadcastRepository.PushCount.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        var total = BroadcastRepository.PushCount()
                        while true {
                            let count = try await repository.countPushes(of: broadcast, batches: 1, logger: logger)
                            guard !count.isEmpty else { return total }
                            total = total + count
                        }
                    }
                }
                return try await group.reduce(into: [BroadcastRepository.PushCount]()) { $0.append($1) }
            }
            #expect(counts.map(\.sorted).reduce(0, +) == batches.count, "every batch sorted once: \(counts)")
            #expect(counts.map(\.devices).reduce(0, +) == 60, "every device counted once: \(counts)")
            #expect(counts.map(\.dormant).reduce(0, +) == 10)
            #expect(try await fixture.scalar("SELECT count(*) FROM device_pushes WHERE pushed_edition = \(broadcast.editionID)") == 60)
            #expect(try await fixture.scalar("SELECT count(*) FROM devices WHERE dormant") == 10)
            #expect(
                try await fixture.scalar("SELECT dormant FROM broadcast_cohorts WHERE broadcast_id = \(broadcast.id) AND wave = 1 AND cohort = 0")
                    == 10
            )
            #expect(try await fixture.scalar("SELECT count(*) FROM uncounted_pushes") == 0)
            // Counting again finds nothing and changes nothing.
            #expect(try await repository.countAllPushes(of: broadcast, logger: logger) == BroadcastRepository.PushCount())
        }
    }

    @Test(
        "the recorded batches are sorted by key range first, then counted a range a statement in key order, each device once, the dormant ones tallied on their cohort"
    )
    func sortedThenCountedByRange() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await DispatcherTests.startOneCohort(devices: 2, fixture: &fixture, now: t0)
            let broadcast = started.broadcast
            let logger = fixture.logger
            // Device ids in four key ranges of 16,384 (device_pushes has no foreign key: migration 0027); 5 and 40000
            // were pushed dormantAfter - 1 editions before without answering, so this push makes them dormant.
            let before = UUID()
            try await fixture.db.client.query(
                """
                INSERT INTO device_pushes (device_id, pushed_edition, editions_unanswered)
                SELECT id, \(before), \(BroadcastOptions.defaultDormantAfter - 1) FROM unnest(ARRAY[5, 40000]::bigint[]) AS u(id)
                """,
                logger: logger
            )
            try await fixture.recordPushes([[70_000, 5, 40_000], [16_390, 6, 70_001, 5]], of: broadcast.id)
            let repository = fixture.repository
            #expect(try await repository.countPushes(of: broadcast, logger: logger) == .init(sorted: 2))
            var ranges: [String] = []
            let rows = try await fixture.db.client.query(
                "SELECT key_range || ':' || device_ids::text FROM uncounted_pushes ORDER BY key_range",
                logger: logger
            )
            for try await range in rows.decode(String.self) { ranges.append(range) }
            #expect(ranges == ["0:{5,5,6}", "1:{16390}", "2:{40000}", "4:{70000,70001}"], "one row per range and cohort, sorted")
            #expect(try await fixture.scalar("SELECT count(*) FROM device_pushes WHERE pushed_edition = \(broadcast.editionID)") == 0)

            // The lowest range first: devices 5 and 6, 5 once though listed twice.
            #expect(try await repository.countPushes(of: broadcast, logger: logger) == .init(ranges: 1, devices: 2, dormant: 1))
            #expect(
                try await fixture.scalar("SELECT count(*) FROM device_pushes WHERE pushed_edition = \(broadcast.editionID) AND device_id < 16384")
                    == 2
            )
            #expect(try await fixture.scalar("SELECT count(*) FROM device_pushes WHERE pushed_edition = \(broadcast.editionID)") == 2)

            #expect(try await repository.countAllPushes(of: broadcast, logger: logger) == .init(ranges: 3, devices: 4, dormant: 1))
            #expect(try await fixture.scalar("SELECT count(*) FROM device_pushes WHERE pushed_edition = \(broadcast.editionID)") == 6)
            #expect(
                try await fixture.scalar("SELECT dormant FROM broadcast_cohorts WHERE broadcast_id = \(broadcast.id) AND wave = 1 AND cohort = 0")
                    == 2
            )
            #expect(try await fixture.scalar("SELECT count(*) FROM uncounted_pushes") == 0)
            #expect(try await repository.countAllPushes(of: broadcast, logger: logger).isEmpty)
        }
    }

    @Test(
        "during a rolling upgrade a worker of the previous version (migration 0029's statement, 16 rows at a time) counts the rows the sort wrote, and the recorded ones, each device once"
    )
    func previousVersionCountsSortedRows() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await DispatcherTests.startOneCohort(devices: 2, fixture: &fixture, now: t0)
            let broadcast = started.broadcast
            let logger = fixture.logger
            try await fixture.recordPushes([[70_000, 5, 40_000], [16_390, 6]], of: broadcast.id)
            let repository = fixture.repository
            #expect(try await repository.countPushes(of: broadcast, logger: logger) == .init(sorted: 2))
            // A batch the previous version recorded after the sort, without a key range.
            try await fixture.recordPushes([[7, 90_000]], of: broadcast.id)
            // The previous version's count, as it ran before migration 0039 (16 rows; 2 here, so that both versions
            // count some): the oldest rows, whatever they hold.
            let previous: PostgresQuery = """
                WITH taken AS (
                    DELETE FROM uncounted_pushes WHERE id IN (
                        SELECT id FROM uncounted_pushes WHERE broadcast_id = \(broadcast.id) ORDER BY id LIMIT 2 FOR UPDATE SKIP LOCKED)
                    RETURNING cohort, device_ids
                ), pushed AS (
                    SELECT DISTINCT ON (u.id) u.id, t.cohort FROM taken t, unnest(t.device_ids) AS u(id) ORDER BY u.id
                ), counted AS (
                    INSERT INTO device_pushes AS p (device_id, pushed_edition, editions_unanswered)
                    SELECT pushed.id, \(broadcast.editionID), 0 FROM pushed ORDER BY pushed.id
                    ON CONFLICT (device_id) DO UPDATE SET
                        editions_unanswered = CASE
                            WHEN EXISTS (SELECT 1 FROM receipts r WHERE r.device_id = p.device_id AND r.edition_id = p.pushed_edition) THEN 0
                            ELSE least(p.editions_unanswered + 1, 10000) END,
                        pushed_edition = EXCLUDED.pushed_edition
                    WHERE p.pushed_edition <> EXCLUDED.pushed_edition
                    RETURNING p.device_id
                )
                SELECT (SELECT count(*) FROM counted)
                """
            let byPrevious = try await fixture.scalar(previous)
            #expect(byPrevious > 0)
            let rest = try await repository.countAllPushes(of: broadcast, logger: logger)
            #expect(rest.sorted == 1, "the batch recorded without a key range is sorted")
            #expect(byPrevious + rest.devices == 7, "each device counted once: \(byPrevious) + \(rest)")
            #expect(try await fixture.scalar("SELECT count(*) FROM device_pushes WHERE pushed_edition = \(broadcast.editionID)") == 7)
            #expect(try await fixture.scalar("SELECT count(*) FROM uncounted_pushes") == 0)
        }
    }
}

extension BroadcastFixture {
    /// Wave-1 batches of `broadcastID` as the record step keeps them for the count: one `uncounted_pushes` row each,
    /// cohort 0, no key range.
    fileprivate func recordPushes(_ batches: [[Int64]], of broadcastID: UUID) async throws {
        for devices in batches {
            try await db.client.query(
                "INSERT INTO uncounted_pushes (broadcast_id, cohort, device_ids) VALUES (\(broadcastID), 0, \(devices)::bigint[])",
                logger: logger
            )
        }
    }
}
