import Foundation
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// Workers pace on the database's clock: a wave's and a content origin's slots are claimed from the database's `now()`,
/// never from the worker's own clock (issue 47, finding 5: the test of this fix passed with it reverted). A worker whose
/// clock runs ahead would otherwise put its slot, and the origin's end with it, into the future (its devices wait for
/// nothing, and every broadcast of the origin queues behind them); one whose clock runs behind would start its slot in
/// the past, sending what the slot's past seconds held at once.
@Suite("slots on the database's clock")
struct SlotClockTests {
    @Test(
        "a worker 30 s behind claims its wave and origin slot from the database's now, not in the past; one an hour ahead claims the next slot, right after it"
    )
    func slotsOnTheDatabaseClock() async throws {
        // The broadcast started a minute ago, and its 20 devices were all due by 40 s ago: a slot claimed from a clock
        // behind the database's would start in the past.
        let t0 = Date().addingTimeInterval(-60)
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(20)
            _ = try await OriginRepository(client: fixture.db.client).add(name: "content-api", capacity: 10, logger: fixture.logger)
            let publications = PublicationRepository(client: fixture.db.client)
            let morning = try #require(try await publications.find(appID: fixture.app.id, slug: "morning", logger: fixture.logger))
            _ = try await publications.setOrigin(morning, origin: "content-api", logger: fixture.logger)
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(6 * 3600))
            // Production's repository: leases and slots on the database's clock (the fixture's runs on the test's).
            let repository = BroadcastRepository(client: fixture.db.client)
            #expect(repository.leaseClock == .database)
            _ = try await repository.start(
                editionID: edition.id,
                environment: .production,
                options: BroadcastOptions(pace: .window(20), cohorts: 1, jitter: 1),
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            func lease(_ owner: String, clockOffset: TimeInterval) async throws -> LeasedBatch {
                let batch = try await repository.lease(
                    owner: owner,
                    now: Date().addingTimeInterval(clockOffset),
                    lookahead: 60,
                    duration: 30,
                    batchDuration: 5,
                    maxBatchSize: 5,
                    logger: fixture.logger
                )
                return try #require(batch, "\(owner) leased nothing")
            }

            // The database's now before the lease: the slot can start no earlier (the claim reads a later now).
            let database = try await Self.databaseNow(fixture)
            let behind = try await lease("behind", clockOffset: -30)
            #expect(
                behind.slotStart.timeIntervalSince(database) > -0.01,
                "the slot starts \(behind.slotStart.timeIntervalSince(database)) s from the database's now before the lease, not at the worker's clock 30 s behind"
            )
            let originEnd = try #require(try await Self.originNextSlot(fixture))
            #expect(
                abs(originEnd.timeIntervalSince(behind.slotStart) - 0.5) < 0.01,
                "the origin is held for 5 devices at 10/s from the slot's start: \(originEnd.timeIntervalSince(behind.slotStart)) s"
            )

            let ahead = try await lease("ahead", clockOffset: 3600)
            let after = try await Self.databaseNow(fixture)
            let behindEnd = behind.slotStart.addingTimeInterval(5)  // 5 devices at the wave's 1/s
            // Right after the slot claimed, or at the database's now if that came later (a slow machine): never at the
            // worker's clock, an hour ahead.
            #expect(
                ahead.slotStart.timeIntervalSince(behindEnd) > -0.01 && ahead.slotStart.timeIntervalSince(max(behindEnd, after)) < 0.01,
                "the next slot starts \(ahead.slotStart.timeIntervalSince(behindEnd)) s after the one claimed, \(ahead.slotStart.timeIntervalSince(after)) s from the database's now"
            )
        }
    }

    static func databaseNow(_ fixture: BroadcastFixture) async throws -> Date {
        let rows = try await fixture.db.client.query("SELECT now()", logger: fixture.logger)
        for try await now in rows.decode(Date.self) { return now }
        throw CancellationError()
    }

    static func originNextSlot(_ fixture: BroadcastFixture) async throws -> Date? {
        let rows = try await fixture.db.client.query("SELECT next_slot FROM origins WHERE name = 'content-api'", logger: fixture.logger)
        for try await next in rows.decode(Date?.self) { return next }
        return nil
    }
}
