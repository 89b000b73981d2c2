import Foundation
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// A new batch's devices read once (issue 36): the lease that carves a batch from a wave's condition returns its
/// targets, read in the statement that finds the batch's extent, and they are what the batch's own read finds.
@Suite("A carved batch comes with its targets")
struct CarveTests {
    @Test(
        "the carve's targets are the batch's devices as its own read finds them, with their pushes of the last hour; devices sharing the last key join the batch; the cohort's last batch runs to its end; every device once"
    )
    func carvedTargets() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await DispatcherTests.startOneCohort(devices: 21, fixture: &fixture, now: t0)
            let db = fixture.db
            let logger = fixture.logger
            /// The devices in send order: cohort key, then id.
            func sendOrder() async throws -> [Int64] {
                try await db.client.query("SELECT id FROM devices ORDER BY cohort_key, id", logger: logger).collect().map {
                    try $0.decode(Int64.self)
                }
            }
            var ids = try await sendOrder()
            // The 4th to the 8th device in send order share one key: a batch of 4 that ends on it takes all five.
            try await fixture.db.client.query(
                "UPDATE devices SET cohort_key = (SELECT cohort_key FROM devices WHERE id = \(ids[3])) WHERE id = ANY(\(Array(ids[3...7])))",
                logger: fixture.logger
            )
            ids = try await sendOrder()
            /// A background push to `device` at `sentAt` from another broadcast of the edition, ended at `finishedAt`.
            func pushed(_ device: Int64, at sentAt: Date, by state: String, finishedAt: Date) async throws {
                let other = UUID()
                try await db.client.query(
                    """
                    INSERT INTO broadcasts (id, edition_id, environment, state, plan, finished_at)
                    SELECT \(other), edition_id, environment, \(state), plan, \(finishedAt)
                    FROM broadcasts WHERE id = \(started.broadcast.id)
                    """,
                    logger: logger
                )
                try await db.client.query(
                    """
                    INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
                    VALUES (\(device), \(other), 1, 0, true, \(sentAt), 'accepted')
                    """,
                    logger: logger
                )
            }
            // Pushes of the last hour from other broadcasts, which the hourly budget reads: one from a broadcast that
            // finished since, and one sent within the hour by a batch in flight when its broadcast was cancelled, more
            // than an hour ago.
            try await pushed(ids[1], at: t0.addingTimeInterval(-600), by: "completed", finishedAt: t0.addingTimeInterval(-300))
            try await pushed(ids[2], at: t0.addingTimeInterval(-3500), by: "cancelled", finishedAt: t0.addingTimeInterval(-3650))
            var carved: [[Int64]] = []
            while let lease = try await fixture.repository.leaseReading(
                owner: "w",
                now: started.broadcast.start,
                lookahead: 3600,
                duration: 30,
                batchDuration: 1000,
                maxBatchSize: 4,
                logger: fixture.logger
            ) {
                let targets = try #require(lease.targets, "a batch carved from wave 1's condition comes with its targets")
                let read = try await fixture.repository.targets(of: lease.batch, now: started.broadcast.start, logger: fixture.logger)
                #expect(targets == read, "batch \(lease.batch.id)")
                #expect(lease.batch.devices == targets.count)
                carved.append(targets.map(\.deviceID))
                for device in ids[1...2] where targets.contains(where: { $0.deviceID == device }) {
                    #expect(targets.first { $0.deviceID == device }?.recentBackgroundPushes.count == 1, "device \(device)")
                }
                #expect(carved.count <= 21, "the carve ends")
                if carved.count > 21 { break }
            }
            #expect(carved.flatMap { $0 } == ids, "every device once, in send order")
            #expect(carved.first == Array(ids[0...7]), "a batch of 4 takes the devices sharing its last key: \(carved)")
            #expect(carved.map(\.count) == [8, 4, 4, 4, 1], "then batches of 4, and what is left")
            let lastKey = try await fixture.scalar(
                "SELECT last_key FROM broadcast_batches WHERE broadcast_id = \(started.broadcast.id) ORDER BY first_key DESC LIMIT 1"
            )
            let endKey = try await fixture.scalar(
                "SELECT end_key FROM broadcast_cohorts WHERE broadcast_id = \(started.broadcast.id) AND wave = 1 AND cohort = 0"
            )
            #expect(lastKey == endKey - 1, "the last batch runs to the cohort's end")
        }
    }

    @Test(
        "a new batch of wave 1 leaves its own broadcast out of the hourly budget's probes while it has no later wave, and counts that broadcast's pushes once a later wave started (waves overlap when a provider was held past the interval)"
    )
    func carveCountsALaterWavesPushes() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await DispatcherTests.startOneCohort(devices: 6, fixture: &fixture, now: t0)
            let db = fixture.db
            let logger = fixture.logger
            let broadcast = started.broadcast.id
            let ids = try await db.client.query("SELECT id FROM devices ORDER BY cohort_key, id", logger: logger).collect().map {
                try $0.decode(Int64.self)
            }
            /// A background push of this broadcast to `device`, in `wave`, ten minutes before the start.
            func pushed(_ device: Int64, wave: Int16) async throws {
                try await db.client.query(
                    """
                    INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
                    VALUES (\(device), \(broadcast), \(wave), 0, true, \(t0.addingTimeInterval(-600)), 'accepted')
                    """,
                    logger: logger
                )
            }
            /// The next carved batch's targets and their pushes of the last hour, by device.
            func carve() async throws -> [Int64: Int] {
                let lease = try #require(
                    try await fixture.repository.leaseReading(
                        owner: "w",
                        now: started.broadcast.start,
                        lookahead: 3600,
                        duration: 30,
                        batchDuration: 1000,
                        maxBatchSize: 3,
                        logger: logger
                    )
                )
                let targets = try #require(lease.targets, "a batch carved from wave 1's condition comes with its targets")
                return Dictionary(uniqueKeysWithValues: targets.map { ($0.deviceID, $0.recentBackgroundPushes.count) })
            }
            // A push of this broadcast to a device of the next batch: no wave 1 batch can have sent it (the batches
            // follow the cohort's cursor), so while the broadcast has no later wave the carve does not probe for it.
            try await pushed(ids[0], wave: 1)
            #expect(try await carve()[ids[0]] == 0, "the carve probes only the other broadcasts while wave 1 is the only wave")
            // A later wave of the broadcast started, and pushed a device that wave 1 has not reached yet: the carve
            // counts that push towards the device's hourly budget.
            try await db.client.query(
                """
                INSERT INTO broadcast_waves (broadcast_id, wave, kind, starts_at, window_seconds, rate, planned)
                VALUES (\(broadcast), 2, 'background', \(t0.addingTimeInterval(-900)), 60, 1, 1)
                """,
                logger: logger
            )
            try await pushed(ids[3], wave: 2)
            #expect(try await carve()[ids[3]] == 1, "a later wave's push of the broadcast counts towards the budget")
        }
    }
}
