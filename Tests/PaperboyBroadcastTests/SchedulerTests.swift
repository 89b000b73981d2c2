import Crypto
import Foundation
import Logging
import PaperboyBroadcast
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Scheduler")
struct SchedulerTests {
    /// 2026-11-23 04:00 in Tokyo, when the schedule is added.
    static let added = ISO8601DateFormatter().date(from: "2026-11-22T19:00:00Z")!
    /// 05:00 in Tokyo, the schedule's instant.
    static let fiveAM = ISO8601DateFormatter().date(from: "2026-11-22T20:00:00Z")!

    /// A clock that stays at `instant`: the scheduler compares schedules with it while it ticks in real time.
    static func clock(at instant: Date) -> BroadcastClock {
        BroadcastClock(now: { instant }, sleep: { _ in })
    }

    /// The broadcasts a scheduler asked for.
    actor Starts {
        var requests: [(starter: String, request: BroadcastRequest)] = []

        func record(_ starter: String, _ request: BroadcastRequest) -> String {
            requests.append((starter, request))
            return "broadcast \(requests.count) started"
        }
    }

    /// An app with a `morning` publication scheduled at 05:00 in Tokyo; the edition (deadline 09:00 in
    /// Tokyo) when `deadline` is given.
    static func seed(_ db: TestDatabase, deadline: String? = "2026-11-23T09:00:00+09:00") async throws -> (Schedule, Edition?) {
        let app = try await AppRepository(client: db.client).create(
            try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
            logger: db.logger
        ).app
        _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
        let schedule = try await ScheduleRepository(client: db.client).add(
            publication: "morning",
            appID: app.id,
            environment: .production,
            cron: "0 5 * * *",
            timeZone: "Asia/Tokyo",
            options: BroadcastOptions(pace: .window(600), cohorts: 4),
            now: added,
            logger: db.logger
        )
        guard let deadline else { return (schedule, nil) }
        let manifest = EditionManifest(
            publication: "morning",
            issueDate: "2026-11-23",
            deadline: deadline,
            tiers: [
                "large": .init(bundles: [.init(url: "https://cdn.example.com/large-1.zip", bytes: 10, sha256: String(repeating: "0f", count: 32))])
            ],
            pages: [.init(number: 1, title: "Front page")]
        )
        let edition = try await EditionRepository(client: db.client).publish(manifest, appID: app.id, now: added, logger: db.logger)
        return (schedule, edition)
    }

    static func scheduler(_ client: PostgresClient, _ name: String, _ starts: Starts, logger: Logger) -> Scheduler {
        Scheduler(client: client, start: { await starts.record(name, $0) }, tickInterval: .milliseconds(50), logger: logger)
    }

    /// Runs `body` with a second, independent client on the test's database, as another process would have.
    static func withClient<Result: Sendable>(_ db: TestDatabase, _ body: (PostgresClient) async throws -> Result) async throws -> Result {
        let client = db.configuration.makeClient(logger: db.logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            await client.start(in: &group)
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    @Test("of two schedulers on separate clients exactly one fires; when the leader's connection dies the other takes over")
    func leadership() async throws {
        try await TestDatabase.with { db in
            let (schedule, edition) = try await Self.seed(db)
            let starts = Starts()
            try await Self.withClient(db) { clientB in
                let clientA = db.configuration.makeClient(logger: db.logger)
                let runA = Task { await clientA.run() }
                let a = Self.scheduler(clientA, "a", starts, logger: db.logger)
                let b = Self.scheduler(clientB, "b", starts, logger: db.logger)
                try await b.withSession { sessionB in
                    // Before 05:00 nothing is due, but A takes the lead; B follows.
                    let eventsA: [SchedulerEvent]? = try? await a.withSession { sessionA in
                        #expect(try await sessionA.tick(now: Self.added).isEmpty)
                        #expect(try await sessionB.tick(now: Self.added).isEmpty)
                        #expect(await sessionA.isLeader)
                        #expect(await sessionB.isLeader == false)

                        // At 05:00 both tick: only the leader fires.
                        let fired = try await sessionA.tick(now: Self.fiveAM)
                        #expect(try await sessionB.tick(now: Self.fiveAM).isEmpty)
                        #expect(await sessionB.isLeader == false)

                        // A's process dies: the server ends its session, and the lock with it. A notices on its
                        // next tick.
                        try await db.client.query(
                            """
                            SELECT pg_terminate_backend(pid) FROM pg_locks
                            WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                            """,
                            logger: db.logger
                        )
                        await #expect(throws: (any Error).self) { try await sessionA.tick(now: Self.fiveAM.addingTimeInterval(15)) }
                        return fired
                    }
                    #expect(eventsA?.map(\.outcome) == [.started(editionID: try #require(edition?.id), result: "broadcast 1 started")])
                    // And its client shuts down.
                    runA.cancel()
                    await runA.value

                    // B takes the lead on a following tick (the server ends A's session in a moment).
                    var led = false
                    for _ in 0..<100 where !led {
                        _ = try await sessionB.tick(now: Self.fiveAM.addingTimeInterval(60))
                        led = await sessionB.isLeader
                        if !led { try await Task.sleep(for: .milliseconds(50)) }
                    }
                    #expect(led)
                    // A handled 05:00; the next day's 05:00 is B's (the edition is past its deadline by then).
                    #expect(try await sessionB.tick(now: Self.fiveAM.addingTimeInterval(120)).isEmpty)
                    let nextDay = Self.fiveAM.addingTimeInterval(86_400)
                    let events = try await sessionB.tick(now: nextDay)
                    let deadline = try #require(edition?.deadline)
                    #expect(events.map(\.outcome) == [.deadlinePassed(editionID: try #require(edition?.id), deadline: deadline)])
                }
            }
            let requests = await starts.requests
            #expect(requests.map(\.starter) == ["a"])
            #expect(requests.map(\.request.origin) == ["schedule:\(schedule.id)"])
            #expect(requests.map(\.request.editionID) == [edition?.id])
            #expect(requests.map(\.request.options) == [schedule.options])
        }
    }

    @Test("only the leader prunes the ledger, at most once per prune interval")
    func leaderPrunes() async throws {
        try await TestDatabase.with { db in
            _ = try await Self.seed(db)
            let starts = Starts()
            let pruner = try LedgerPruner(client: db.client)
            func scheduler(_ client: PostgresClient, _ name: String) -> Scheduler {
                Scheduler(client: client, start: { await starts.record(name, $0) }, pruner: pruner, pruneInterval: .seconds(3600), logger: db.logger)
            }
            try await scheduler(db.client, "a").withSession { leader in
                _ = try await leader.tick(now: Self.added)
                #expect(await leader.isLeader)
                #expect(await leader.pruneIfDue(now: Self.added) != nil)
                #expect(await leader.pruneIfDue(now: Self.added.addingTimeInterval(3599)) == nil)
                #expect(await leader.pruneIfDue(now: Self.added.addingTimeInterval(3600)) != nil)
                try await Self.withClient(db) { other in
                    try await scheduler(other, "b").withSession { follower in
                        _ = try await follower.tick(now: Self.added)
                        #expect(await follower.isLeader == false)
                        #expect(await follower.pruneIfDue(now: Self.added) == nil)
                    }
                }
            }
        }
    }

    @Test("a scheduler that shuts down hands the lead over at once")
    func shutdownHandsOver() async throws {
        try await TestDatabase.with { db in
            _ = try await Self.seed(db)
            let starts = Starts()
            let leader = Scheduler(
                client: db.client,
                start: { await starts.record("a", $0) },
                clock: Self.clock(at: SchedulerTests.fiveAM.addingTimeInterval(60)),
                tickInterval: .milliseconds(20),
                logger: db.logger
            )
            let running = Task { try await leader.run() }
            // It leads once it fired.
            for _ in 0..<1500 where await starts.requests.isEmpty {  // at most 30 s: the suite shares 2 cores
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(await starts.requests.map(\.starter) == ["a"])
            try await Self.withClient(db) { other in
                try await Self.scheduler(other, "b", starts, logger: db.logger).withSession { session in
                    _ = try await session.tick(now: Self.fiveAM.addingTimeInterval(120))
                    #expect(await session.isLeader == false)
                    running.cancel()
                    try await running.value
                    _ = try await session.tick(now: Self.fiveAM.addingTimeInterval(180))
                    #expect(await session.isLeader)
                }
            }
            #expect(await starts.requests.count == 1)
        }
    }

    @Test("a broadcast a schedule fires is in the audit log, written with it: surface and role scheduler, the schedule named")
    func firedBroadcastAudited() async throws {
        try await TestDatabase.with { db in
            let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-scheduler-\(UUID().uuidString).p8").path
            try P256.Signing.PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: keyFile) }
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: keyFile),
                logger: db.logger
            ).app
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            let manifest = EditionManifest(
                publication: "morning",
                issueDate: "2026-11-23",
                deadline: Date().addingTimeInterval(7200).formatted(.iso8601),
                tiers: [
                    "large": .init(bundles: [.init(url: "https://cdn.example.com/large-1.zip", bytes: 10, sha256: String(repeating: "0f", count: 32))]
                    )
                ],
                pages: [.init(number: 1, title: "Front page")]
            )
            let edition = try await EditionRepository(client: db.client).publish(manifest, appID: app.id, logger: db.logger)
            let start = BroadcastRepository(client: db.client).starter(logger: db.logger)
            let request = BroadcastRequest(editionID: edition.id, environment: .production, options: BroadcastOptions(), origin: "schedule:7")
            let said = try await start(request)
            #expect(said.hasSuffix("started"))
            let entries = try await AuditRepository(client: db.client).recent(logger: db.logger)
            #expect(entries.count == 1)
            let entry = try #require(entries.first)
            #expect(entry.surface == .scheduler && entry.role == "scheduler" && entry.name == "schedule 7" && entry.action == "start broadcast")
            #expect(entry.editionID == edition.id && entry.broadcastID != nil)
            #expect(BroadcastRequest(editionID: edition.id, environment: .production, options: BroadcastOptions(), origin: "cli").audit == nil)
        }
    }

    @Test("a firing missed while no scheduler ran fires late, within the edition's life, once")
    func missedFiringRunsLate() async throws {
        try await TestDatabase.with { db in
            let (schedule, edition) = try await Self.seed(db)
            let starts = Starts()
            let scheduler = Self.scheduler(db.client, "a", starts, logger: db.logger)
            // Down from 04:00 until 05:40.
            let late = Self.fiveAM.addingTimeInterval(40 * 60)
            try await scheduler.withSession { session in
                let events = try await session.tick(now: late)
                #expect(
                    events == [
                        SchedulerEvent(
                            scheduleID: schedule.id,
                            instant: Self.fiveAM,
                            outcome: .started(editionID: try #require(edition?.id), result: "broadcast 1 started")
                        )
                    ]
                )
                #expect(try await session.tick(now: late.addingTimeInterval(15)).isEmpty)
            }
            #expect(await starts.requests.count == 1)
            #expect(try await ScheduleRepository(client: db.client).list(logger: db.logger).first?.lastInstant == Self.fiveAM)
        }
    }

    @Test("no edition: nothing is started, and the reason is given")
    func noEdition() async throws {
        try await TestDatabase.with { db in
            let (schedule, _) = try await Self.seed(db, deadline: nil)
            let starts = Starts()
            let events = try await Self.scheduler(db.client, "a", starts, logger: db.logger).withSession { session in
                try await session.tick(now: Self.fiveAM)
            }
            #expect(events == [SchedulerEvent(scheduleID: schedule.id, instant: Self.fiveAM, outcome: .noEdition)])
            #expect(
                events.first?.description == "schedule \(schedule.id) at 2026-11-22T20:00:00Z: nothing to broadcast: the publication has no edition"
            )
            #expect(await starts.requests.isEmpty)
            // The instant is handled: not tried again.
            #expect(try await ScheduleRepository(client: db.client).due(now: Self.fiveAM, logger: db.logger).isEmpty)
        }
    }

    @Test("an edition past its deadline is not broadcast")
    func deadlinePassed() async throws {
        try await TestDatabase.with { db in
            let (schedule, edition) = try await Self.seed(db, deadline: "2026-11-23T04:30:00+09:00")
            let starts = Starts()
            let events = try await Self.scheduler(db.client, "a", starts, logger: db.logger).withSession { session in
                try await session.tick(now: Self.fiveAM)
            }
            let deadline = try #require(edition?.deadline)
            #expect(
                events == [
                    SchedulerEvent(
                        scheduleID: schedule.id,
                        instant: Self.fiveAM,
                        outcome: .deadlinePassed(editionID: try #require(edition?.id), deadline: deadline)
                    )
                ]
            )
            #expect(await starts.requests.isEmpty)
        }
    }

    @Test("an edition broadcast already is not broadcast again")
    func alreadyBroadcast() async throws {
        try await TestDatabase.with { db in
            let (schedule, edition) = try await Self.seed(db)
            let editionID = try #require(edition?.id)
            try await db.client.query(
                "INSERT INTO broadcasts (id, edition_id, environment, state, plan) VALUES (\(UUID()), \(editionID), 0, 'completed', '{}'::jsonb)",
                logger: db.logger
            )
            let starts = Starts()
            let events = try await Self.scheduler(db.client, "a", starts, logger: db.logger).withSession { session in
                try await session.tick(now: Self.fiveAM)
            }
            #expect(events == [SchedulerEvent(scheduleID: schedule.id, instant: Self.fiveAM, outcome: .alreadyBroadcast(editionID: editionID))])
            #expect(await starts.requests.isEmpty)
        }
    }

    @Test("run() ticks on its own clock until cancelled")
    func run() async throws {
        try await TestDatabase.with { db in
            let (_, edition) = try await Self.seed(db)
            let starts = Starts()
            let scheduler = Scheduler(
                client: db.client,
                start: { await starts.record("a", $0) },
                clock: Self.clock(at: SchedulerTests.fiveAM.addingTimeInterval(60)),
                tickInterval: .milliseconds(20),
                logger: db.logger
            )
            let running = Task { try await scheduler.run() }
            for _ in 0..<1500 where await starts.requests.isEmpty {  // at most 30 s: the suite shares 2 cores
                try await Task.sleep(for: .milliseconds(20))
            }
            running.cancel()
            try await running.value
            #expect(await starts.requests.map(\.request.editionID) == [edition?.id])
        }
    }
}
