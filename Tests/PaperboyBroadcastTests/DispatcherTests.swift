import APNs
import APNsSimulator
import Crypto
import Foundation
import PaperboyBroadcast
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// Broadcasts end to end: PostgreSQL, the dispatcher on a virtual clock, the APNs client and the
/// simulator over loopback HTTP/2. The simulator's per-token accept counts are the truth.
@Suite("Broadcast dispatch")
struct DispatcherTests {
    static let minute: TimeInterval = 60

    static func options(
        window: TimeInterval = 10 * 60,
        cohorts: Int = 4,
        maxPushes: BroadcastOptions.MaxPushes = 3,
        alert: Bool = false
    ) -> BroadcastOptions {
        BroadcastOptions(pace: .window(window), cohorts: cohorts, maxPushesPerDevice: maxPushes, alertLastResort: alert)
    }

    @Test(
        "BadDeviceToken holds the deactivation, applied later by the database's clock: a worker whose clock runs an hour behind still stops pushing the token"
    )
    func badTokenOnTheDatabaseClock() async throws {
        // The worker's clock is an hour behind the database's, which writes registered_at: by the worker's
        // clock every push was sent before the device registered.
        let behind = Date().addingTimeInterval(-3600)
        var faults = APNsSimulator.Faults()
        faults.outcomesByTokenPrefix = [("bad0", .init(status: 400, reason: .badDeviceToken))]
        try await BroadcastFixture.with(start: behind, faults: faults) { fixture in
            try await fixture.register(10)
            try await fixture.register(5, offset: 2000, prefix: "bad0")
            let edition = try await fixture.publish(deadline: behind.addingTimeInterval(6 * 3600))
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: Self.options(),
                origin: "test",
                now: behind,
                logger: fixture.logger
            )
            let wave1 = try await fixture.step(at: started.broadcast.start.addingTimeInterval(10 * Self.minute + 5), fixture.dispatcher())
            #expect(wave1.sent == 15)
            let holds = ProviderHoldRepository(client: fixture.db.client)
            #expect(try await holds.heldCount(logger: fixture.logger) == 5, "held, not applied: no misconfiguration suspected yet")
            // Ten minutes later by the database's clock (which stamped the answers), nothing suspected: applied.
            #expect(try await holds.applyDue(before: Date().addingTimeInterval(1), logger: fixture.logger) == 5)
            let devices = DeviceRepository(client: fixture.db.client)
            for index in 0..<5 {
                let bad = try await devices.find(
                    appID: fixture.app.id,
                    token: BroadcastFixture.token(2000 + index, prefix: "bad0"),
                    logger: fixture.logger
                )
                #expect(bad?.active == false, "bad0 device \(index) stays active")
            }
            let good = try await devices.find(appID: fixture.app.id, token: BroadcastFixture.token(0), logger: fixture.logger)
            #expect(good?.active == true)
        }
    }

    @Test("a later wave is counted by one worker, which stores the counts; another worker starts the wave from them without counting again")
    func laterWaveCountedOnce() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(40)
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(6 * 3600))
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: Self.options(maxPushes: 2),
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            let id = started.broadcast.id
            let start = started.broadcast.start
            let first = fixture.dispatcher(owner: "first")
            #expect(try await fixture.step(at: start.addingTimeInterval(10 * Self.minute + 5), first).sent == 40)
            for token in fixture.tokens.prefix(10) { try await fixture.receipt(token, edition: edition) }

            // Within --count-ahead (5 minutes) of wave 2's start (30 minutes): "first" counts and stores the counts.
            _ = try await fixture.step(at: start.addingTimeInterval(26 * Self.minute), first)
            let stored = try #require(try await fixture.repository.storedCounts(broadcastID: id, wave: 2, logger: fixture.logger))
            #expect(stored.perCohort["background"]?.reduce(0, +) == 30, "40 targets, 10 receipts")

            // What another worker starts the wave from is the stored counts: changed here, they show in its plan.
            try await fixture.db.client.query(
                "UPDATE broadcast_counts SET counts = '{\"background\": [1, 1, 1, 1]}' WHERE broadcast_id = \(id) AND wave = 2",
                logger: fixture.logger
            )
            let second = fixture.dispatcher(owner: "second")
            let report = try await fixture.step(at: start.addingTimeInterval(30 * Self.minute + 1), second)
            let wave2 = report.events.first { if case .waveStarted(_, 2, _, _, _) = $0 { true } else { false } }
            guard case .waveStarted(_, _, _, let planned, _) = wave2 else {
                Issue.record("\"second\" did not start wave 2: \(report.events)")
                return
            }
            #expect(planned == 4, "\"second\" planned wave 2 from the stored counts, not from a count of its own (30)")

            // Claims: one worker at a time until its counts are stored or the claim lapses.
            let repository = fixture.repository
            #expect(try await repository.claimCount(broadcastID: id, wave: 3, owner: "a", seconds: 60, logger: fixture.logger))
            #expect(try await !repository.claimCount(broadcastID: id, wave: 3, owner: "b", seconds: 60, logger: fixture.logger))
            #expect(try await repository.claimCount(broadcastID: id, wave: 3, owner: "a", seconds: 60, logger: fixture.logger), "its own claim again")
            let countedAt = Date(timeIntervalSince1970: 1_800_000_000)
            let counts = BroadcastRepository.StoredCounts(perCohort: ["background": [2, 2, 2, 2]], countedAt: countedAt)
            try await repository.storeCounts(counts, broadcastID: id, wave: 3, owner: "b", logger: fixture.logger)
            #expect(try await repository.storedCounts(broadcastID: id, wave: 3, logger: fixture.logger) == nil, "not b's claim: not stored")
            try await repository.storeCounts(counts, broadcastID: id, wave: 3, owner: "a", logger: fixture.logger)
            #expect(try await repository.storedCounts(broadcastID: id, wave: 3, logger: fixture.logger) == counts)
            #expect(
                try await repository.claimCount(broadcastID: id, wave: 3, owner: "b", seconds: 60, logger: fixture.logger),
                "stored: anyone may count again (when the counts are too old)"
            )
            try await fixture.db.client.query(
                "UPDATE broadcast_counts SET counting_until = now() - interval '1 second' WHERE broadcast_id = \(id) AND wave = 3",
                logger: fixture.logger
            )
            #expect(try await repository.claimCount(broadcastID: id, wave: 3, owner: "c", seconds: 60, logger: fixture.logger), "b's claim lapsed")
        }
    }

    @Test("wave 1 reaches every target once at the plan's pace; later waves only devices without a receipt; then it completes")
    func wavesFollowReceipts() async throws {
        let t0 = Date()
        let faults = {
            var faults = APNsSimulator.Faults()
            faults.outcomesByTokenPrefix = [
                ("dead", .init(status: 410, reason: .unregistered, timestamp: t0.addingTimeInterval(3600))),
                ("bad0", .init(status: 400, reason: .badDeviceToken)),
            ]
            return faults
        }()
        try await BroadcastFixture.with(start: t0, faults: faults) { fixture in
            try await fixture.register(100)
            try await fixture.register(10, offset: 1000, prefix: "dead")
            try await fixture.register(10, offset: 2000, prefix: "bad0")
            try await fixture.register(20, offset: 3000, subscriptions: ["evening"])  // not a target
            try await fixture.register(10, offset: 4000, autoDownload: false)  // not a target
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(6 * 3600))
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: Self.options(),
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            #expect(started.created)
            #expect(started.plan?.cohorts.reduce(0) { $0 + $1.devices } == 120)
            let dispatcher = fixture.dispatcher()
            let start = started.broadcast.start

            // Wave 1, at the end of its window: every target once.
            let first = try await fixture.step(at: start.addingTimeInterval(10 * Self.minute + 5), dispatcher)
            #expect(first.sent == 120)
            #expect(first.events.contains(.waveFinished(broadcast: started.broadcast.id, wave: 1)))
            var accepted = fixture.accepted()
            #expect(accepted.count == 100)
            #expect(accepted.values.allSatisfy { $0 == 1 })
            var progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.waves.count == 1)
            #expect(progress.waves[0].counts.sent == 120)
            #expect(progress.waves[0].counts.accepted == 100)
            #expect(progress.waves[0].counts.rejected == ["Unregistered": 10, "BadDeviceToken": 10])

            // 410 deactivated the device.
            let gone = try await DeviceRepository(client: fixture.db.client).find(
                appID: fixture.app.id,
                token: BroadcastFixture.token(1000, prefix: "dead"),
                logger: fixture.logger
            )
            #expect(gone?.active == false)
            // BadDeviceToken held the deactivation (ten devices of 120: no misconfiguration suspected); ten minutes later
            // by the database's clock it is applied, and no later wave pushes the token again.
            let holds = ProviderHoldRepository(client: fixture.db.client)
            #expect(try await holds.heldCount(logger: fixture.logger) == 10)
            #expect(try await holds.all(logger: fixture.logger).isEmpty)
            #expect(try await holds.applyDue(before: Date().addingTimeInterval(1), logger: fixture.logger) == 10)
            let bad = try await DeviceRepository(client: fixture.db.client).find(
                appID: fixture.app.id,
                token: BroadcastFixture.token(2000, prefix: "bad0"),
                logger: fixture.logger
            )
            #expect(bad?.active == false)

            // Half the devices report the edition; one reports a failure (it gets another try).
            for token in fixture.tokens.prefix(50) { try await fixture.receipt(token, edition: edition) }
            try await fixture.receipt(fixture.tokens[50], edition: edition, .failed)

            // Nothing happens before the wave interval.
            let early = try await fixture.step(at: start.addingTimeInterval(25 * Self.minute), dispatcher)
            #expect(early.sent == 0)
            #expect(early.events.isEmpty)

            // Wave 2 starts 30 minutes after wave 1: only the 50 good devices without a successful receipt.
            _ = try await fixture.step(at: start.addingTimeInterval(30 * Self.minute), dispatcher)
            _ = try await fixture.step(at: start.addingTimeInterval(41 * Self.minute), dispatcher)
            accepted = fixture.accepted()
            for token in fixture.tokens.prefix(50) { #expect(accepted[token.hex] == 1) }
            for token in fixture.tokens[50..<100] { #expect(accepted[token.hex] == 2) }

            // Wave 3, then no more: three pushes per device at most.
            _ = try await fixture.step(at: start.addingTimeInterval(60 * Self.minute), dispatcher)
            let third = try await fixture.step(at: start.addingTimeInterval(71 * Self.minute), dispatcher)
            let end = try await fixture.step(at: start.addingTimeInterval(90 * Self.minute), dispatcher)
            #expect((third.events + end.events).contains(.completed(broadcast: started.broadcast.id)))
            accepted = fixture.accepted()
            #expect(accepted.values.max() == 3)
            let total: Int = accepted.values.reduce(0, +)
            #expect(total == 200)
            // The receipts come from the tallies, which running workers keep (`step` runs none): recount them now.
            let tallies = ReceiptTallies(client: fixture.db.client, configuration: .init(lag: .zero, interval: .zero))
            try await tallies.recount(broadcastID: started.broadcast.id, now: Date(), logger: fixture.logger)
            progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.state == .completed)
            #expect(progress.waves.map(\.counts.planned) == [120, 50, 50])
            // Later waves go at wave 1's rate within wave 1's cohort slots, an interval later: fewer devices,
            // less time sending, never a higher rate, never past wave 1's span.
            #expect(progress.waves.allSatisfy { abs($0.rate - progress.waves[0].rate) < 1e-9 })
            #expect(progress.waves[1].window <= progress.waves[0].window + 1e-6)
            #expect(Double(progress.waves[1].counts.planned) / progress.waves[1].rate < progress.waves[0].window / 2)
            #expect(progress.waves[0].counts.receipts["newData"] == 50)
            #expect(progress.receipts == ["newData": 50, "failed": 1])
        }
    }

    @Test("nothing is sent at or after the deadline; the broadcast expires with devices left")
    func deadline() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(60)
            // Sixty devices a second apart from one second after t0; the deadline after half of them.
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(31))
            var options = Self.options(window: 60, cohorts: 2)
            options.jitter = 1
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: options,
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            let dispatcher = fixture.dispatcher(lookahead: .seconds(2))
            // Just before the deadline the worker leases what is due within its lookahead, past the deadline too.
            let report = try await fixture.step(at: edition.deadline.addingTimeInterval(-0.5), dispatcher)
            let dueBefore = (0..<60).filter { index in
                started.broadcast.start.addingTimeInterval(Double(index)) < edition.deadline
            }.count
            #expect(fixture.accepted().count == dueBefore)
            #expect(report.sent == dueBefore)
            #expect(report.skipped >= 1)
            let after = try await fixture.step(at: edition.deadline.addingTimeInterval(60), dispatcher)
            #expect((report.events + after.events).contains(.expired(broadcast: started.broadcast.id)))
            #expect(after.sent == 0)
            #expect(fixture.accepted().count == dueBefore)
            let progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.state == .expired)
            #expect(progress.totals.skipped["deadline", default: 0] > 0)
            // And a broadcast cannot start once the deadline has passed.
            let late = try await fixture.publish("evening", deadline: t0.addingTimeInterval(60), now: t0)
            await #expect(throws: StoreError.self) {
                try await fixture.repository.start(
                    editionID: late.id,
                    environment: .production,
                    options: Self.options(),
                    origin: "test",
                    now: t0.addingTimeInterval(120),
                    logger: fixture.logger
                )
            }
        }
    }

    @Test("no device gets more than three background pushes in an hour, across broadcasts")
    func hourlyBudget() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(20, subscriptions: ["morning", "evening"])
            let morning = try await fixture.publish("morning", deadline: t0.addingTimeInterval(6 * 3600))
            let evening = try await fixture.publish("evening", deadline: t0.addingTimeInterval(6 * 3600))
            var options = Self.options(window: 2 * Self.minute, cohorts: 2)
            options.waveInterval = 20 * Self.minute
            let first = try await fixture.repository.start(
                editionID: morning.id,
                environment: .production,
                options: options,
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            let dispatcher = fixture.dispatcher()
            let start = first.broadcast.start
            // Three waves of the morning edition, 20 minutes apart, no receipts.
            for wave in 0..<3 {
                _ = try await fixture.step(at: start.addingTimeInterval(Double(wave) * 20 * Self.minute), dispatcher)
                _ = try await fixture.step(at: start.addingTimeInterval((Double(wave) * 20 + 3) * Self.minute), dispatcher)
            }
            #expect(fixture.accepted().values.allSatisfy { $0 == 3 })
            // The evening edition 45 minutes in: every device had three pushes in the last hour.
            let second = try await fixture.repository.start(
                editionID: evening.id,
                environment: .production,
                options: options,
                origin: "test",
                now: start.addingTimeInterval(45 * Self.minute),
                logger: fixture.logger
            )
            let report = try await fixture.step(at: second.broadcast.start.addingTimeInterval(3 * Self.minute), dispatcher)
            #expect(report.sent == 0)
            #expect(report.skipped == 20)
            #expect(fixture.accepted().values.allSatisfy { $0 == 3 })
            let progress = try #require(try await fixture.repository.progress(id: second.broadcast.id, logger: fixture.logger))
            #expect(progress.waves[0].counts.skipped == ["hourlyBudget": 20])
        }
    }

    @Test("starting the same edition again attaches to its broadcast, also when two start at once")
    func idempotentStart() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(10)
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(6 * 3600))
            let repository = fixture.repository
            let logger = fixture.logger
            let starts = try await withThrowingTaskGroup(of: BroadcastStart.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await repository.start(
                            editionID: edition.id,
                            environment: .production,
                            options: Self.options(),
                            origin: "test",
                            now: t0,
                            logger: logger
                        )
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(starts.filter(\.created).count == 1)
            #expect(Set(starts.map(\.broadcast.id)).count == 1)
            let dispatcher = fixture.dispatcher()
            _ = try await fixture.step(at: t0.addingTimeInterval(15 * Self.minute), dispatcher)
            #expect(fixture.accepted().count == 10)
            // Again, later: still the same broadcast, nothing sent twice.
            let again = try await repository.start(
                editionID: edition.id,
                environment: .production,
                options: Self.options(),
                origin: "test",
                now: t0.addingTimeInterval(16 * Self.minute),
                logger: logger
            )
            #expect(!again.created)
            #expect(again.broadcast.id == starts[0].broadcast.id)
            _ = try await fixture.step(at: t0.addingTimeInterval(17 * Self.minute), dispatcher)
            #expect(fixture.accepted().values.allSatisfy { $0 == 1 })
            // A cancelled broadcast can be started anew.
            _ = try await repository.cancel(id: again.broadcast.id, now: t0.addingTimeInterval(18 * Self.minute), logger: logger)
            let fresh = try await repository.start(
                editionID: edition.id,
                environment: .production,
                options: Self.options(),
                origin: "test",
                now: t0.addingTimeInterval(19 * Self.minute),
                logger: logger
            )
            #expect(fresh.created)
        }
    }

    @Test("after the last background wave, one alert to devices whose readers asked for edition alerts, that allow alerts and reported nothing")
    func alertLastResort() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(10, alerts: true, editionAlerts: true)
            try await fixture.register(10, offset: 100, alerts: false)
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(6 * 3600))
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: Self.options(maxPushes: 1, alert: true),
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            let dispatcher = fixture.dispatcher()
            let start = started.broadcast.start
            _ = try await fixture.step(at: start.addingTimeInterval(11 * Self.minute), dispatcher)
            for token in fixture.tokens.prefix(4) { try await fixture.receipt(token, edition: edition) }
            _ = try await fixture.step(at: start.addingTimeInterval(30 * Self.minute), dispatcher)
            let alerts = try await fixture.step(at: start.addingTimeInterval(41 * Self.minute), dispatcher)
            let end = try await fixture.step(at: start.addingTimeInterval(60 * Self.minute), dispatcher)
            #expect((alerts.events + end.events).contains(.completed(broadcast: started.broadcast.id)))
            let progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.waves.map(\.kind) == [.background, .alert])
            #expect(progress.waves.count == 2 && progress.waves[1].counts.accepted == 6)
            let accepted = fixture.accepted()
            for token in fixture.tokens[4..<10] { #expect(accepted[token.hex] == 2) }
            for token in fixture.tokens[10..<20] { #expect(accepted[token.hex] == 1) }
        }
    }

    @Test("a batch whose worker died is taken over when its lease expires and sent once more, nothing lost")
    func expiredLeaseIsTakenOver() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await Self.startOneCohort(devices: 40, fixture: &fixture, now: t0)
            // A worker leases the first batch (one second of sends: two devices) and dies without sending.
            let dead = try #require(
                try await fixture.repository.lease(
                    owner: "dead-worker",
                    now: started.broadcast.start,
                    lookahead: 2,
                    duration: 30,
                    batchDuration: 1,
                    maxBatchSize: 1000,
                    logger: fixture.logger
                )
            )
            let dispatcher = fixture.dispatcher(owner: "live-worker")
            // Before the lease expires the live worker sends everything else.
            _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(20), dispatcher)
            _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(29), dispatcher)
            #expect(fixture.accepted().count == 40 - dead.devices)
            // Ten seconds after it (the grace that lets a holder renew after a database outage), the dead worker's batch too.
            _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(39), dispatcher)
            #expect(fixture.accepted().count == 40 - dead.devices, "not within the grace")
            _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(41), dispatcher)
            #expect(fixture.accepted().count == 40)
            #expect(fixture.accepted().values.allSatisfy { $0 == 1 })
            // Its devices went out after the lease expired, in the wave's next free slot: never two at once.
            let times = try await Self.sendTimes(started.broadcast.id, fixture: fixture)
            #expect(Self.busiestSecond(times) <= 2)
            #expect(times.filter { $0 >= started.broadcast.start.addingTimeInterval(40) }.count == dead.devices)
            // The dead worker cannot record the batch any more.
            #expect(try await fixture.repository.record(dead, outcomes: [], owner: "dead-worker", now: t0, logger: fixture.logger) == false)
            let progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.waves[0].counts.sent == 40)
        }
    }

    @Test(
        "waves 20 minutes apart to half the devices: each is pushed a whole interval after its previous push, and its fourth push an hour after its first, none skipped for the hourly budget"
    )
    func followUpsKeepEachDeviceSpacing() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(200)
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(3 * 3600))
            let options = BroadcastOptions(pace: .window(10 * 60), cohorts: 4, waveInterval: 20 * 60, maxPushesPerDevice: 4)
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: options,
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            let dispatcher = fixture.dispatcher()
            let start = started.broadcast.start
            try await fixture.step(at: start.addingTimeInterval(10 * Self.minute + 5), dispatcher)
            // Half the devices answer wave 1: the later waves' audience is half of wave 1's, at the same rate.
            // Sent from the start of the interval they would be pushed sooner after wave 1 than 20 minutes
            // (the last device of wave 1 after 15 minutes), and the fourth push would fall within the hour.
            for token in fixture.tokens.prefix(100) { try await fixture.receipt(token, edition: edition) }
            for wave in 1...3 {
                // At its start the wave is counted and planned; by 11 minutes later its devices have gone out.
                try await fixture.step(at: start.addingTimeInterval(Double(wave) * 20 * Self.minute), dispatcher)
                try await fixture.step(at: start.addingTimeInterval(Double(wave) * 20 * Self.minute + 11 * Self.minute), dispatcher)
            }
            let accepted = fixture.accepted()
            #expect(fixture.tokens.dropFirst(100).filter { accepted[$0.hex] == 4 }.count == 100, "every device that never answered got 4 pushes")

            let progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.waves.map(\.counts.planned) == [200, 100, 100, 100])
            #expect(progress.waves.map(\.counts.skipped) == Array(repeating: [:], count: 4))
            let rows = try await fixture.db.client.query(
                "SELECT device_id, sent_at FROM deliveries WHERE broadcast_id = \(started.broadcast.id) AND background ORDER BY device_id, wave",
                logger: fixture.logger
            )
            var times: [Int64: [Date]] = [:]
            for try await (device, sentAt) in rows.decode((Int64, Date).self) { times[device, default: []].append(sentAt) }
            #expect(times.values.filter { $0.count == 4 }.count == 100)
            for sent in times.values where sent.count == 4 {
                for (previous, next) in zip(sent, sent.dropFirst()) { #expect(next.timeIntervalSince(previous) >= 20 * Self.minute - 0.001) }
                #expect(sent[3].timeIntervalSince(sent[0]) >= 3600 - 0.001)
            }
        }
    }

    /// The virtual instants at which the broadcast's wave-1 devices were sent, in order.
    static func sendTimes(_ id: UUID, fixture: BroadcastFixture) async throws -> [Date] {
        let rows = try await fixture.db.client.query(
            "SELECT sent_at FROM deliveries WHERE broadcast_id = \(id) AND wave = 1 ORDER BY sent_at",
            logger: fixture.logger
        )
        var times: [Date] = []
        for try await time in rows.decode(Date.self) { times.append(time) }
        return times
    }

    /// The most sends in any one-second window: the rate the content API would see.
    static func busiestSecond(_ times: [Date]) -> Int {
        var most = 0
        var first = 0
        for last in times.indices {
            while times[last].timeIntervalSince(times[first]) >= 1 - 1e-6 { first += 1 }
            most = max(most, last - first + 1)
        }
        return most
    }

    @Test("after a 10 s stall the devices that were due go out later at the plan's rate, never faster, and status says how far behind")
    func stallIsCaughtUpAtThePlansRate() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await Self.startOneCohort(devices: 40, fixture: &fixture, now: t0)
            let id = started.broadcast.id
            let start = started.broadcast.start
            let dispatcher = fixture.dispatcher()
            _ = try await fixture.step(at: start.addingTimeInterval(5), dispatcher)
            let beforeStall = fixture.accepted().count
            #expect((10...12).contains(beforeStall))
            // The worker stalls for 10 s (paused, or the database unreachable): 20 devices fall due meanwhile.
            fixture.clock.set(start.addingTimeInterval(15))
            _ = try await fixture.step(at: start.addingTimeInterval(17), dispatcher)
            let behind = try #require(try await fixture.repository.progress(id: id, logger: fixture.logger)?.waves.first?.behindSeconds)
            #expect(behind > 8 && behind < 12, "status shows the wave about 10 s behind its plan")
            _ = try await fixture.step(at: start.addingTimeInterval(60), dispatcher)

            #expect(fixture.accepted().count == 40)
            #expect(fixture.accepted().values.allSatisfy { $0 == 1 })
            let times = try await Self.sendTimes(id, fixture: fixture)
            #expect(Self.busiestSecond(times) <= 2, "never above the plan's 2 a second, also right after the stall")
            let last = try #require(times.last)
            #expect(last.timeIntervalSince(start) > 28, "the backlog went out later at the plan's rate, not at once")
            #expect(last.timeIntervalSince(start) < 32)
        }
    }

    @Test("a broadcast cancelled while a batch is held: the renewal reports it, so the worker stops that batch")
    func cancellationStopsHeldBatches() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await Self.startOneCohort(devices: 20, fixture: &fixture, now: t0)
            let batch = try #require(
                try await fixture.repository.lease(
                    owner: "w",
                    now: started.broadcast.start,
                    lookahead: 1,
                    duration: 30,
                    batchDuration: 5,
                    maxBatchSize: 1000,
                    logger: fixture.logger
                )
            )
            let running = try await fixture.repository.renew([batch], owner: "w", duration: 60, now: t0, logger: fixture.logger)
            #expect(running.held == [batch.id] && running.stopped.isEmpty)
            _ = try await fixture.repository.cancel(id: started.broadcast.id, now: t0, logger: fixture.logger)
            let cancelled = try await fixture.repository.renew([batch], owner: "w", duration: 60, now: t0, logger: fixture.logger)
            #expect(cancelled.held == [batch.id] && cancelled.stopped == [batch.id])
        }
    }

    @Test(
        "an app key that cannot be loaded at send time: nothing is sent, the batch goes back, the worker is unready; once no worker has sent for --fail-after the broadcast fails naming the key"
    )
    func unloadableKeyFailsTheBroadcast() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (edition, started) = try await Self.startOneCohort(devices: 10, fixture: &fixture, now: t0)
            // The key file disappears after the broadcast was started (a secret rotated away, a bad mount).
            let keyFile = try #require(fixture.app.apns).keyReference
            try FileManager.default.removeItem(atPath: keyFile)
            let dispatcher = fixture.dispatcher(failAfter: .seconds(60))
            _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(30), dispatcher)
            var progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.state == .running, "one worker's problem is not the broadcast's yet")
            #expect(dispatcher.health.problems.first?.contains(keyFile) == true)
            #expect(fixture.accepted().isEmpty)
            _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(120), dispatcher)
            progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.state == .failed)
            #expect(progress.failure?.contains(keyFile) == true, "\(progress.failure ?? "")")
            #expect(progress.failure?.contains("no worker could send its APNs pushes") == true)
            #expect(fixture.accepted().isEmpty)
            // Fixed and started again: a failed broadcast does not block a new one.
            try BroadcastFixture.privateKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
            let again = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: Self.options(window: 20, cohorts: 1),
                origin: "test",
                now: started.broadcast.start.addingTimeInterval(120),
                logger: fixture.logger
            )
            #expect(again.created)
        }
    }

    /// `devices` devices, an edition with a deadline in 6 hours, and its broadcast: one cohort over 20 s.
    static func startOneCohort(devices: Int, fixture: inout BroadcastFixture, now: Date) async throws -> (Edition, BroadcastStart) {
        try await fixture.register(devices)
        let edition = try await fixture.publish(deadline: now.addingTimeInterval(6 * 3600))
        let started = try await fixture.repository.start(
            editionID: edition.id,
            environment: .production,
            options: Self.options(window: 20, cohorts: 1),
            origin: "test",
            now: now,
            logger: fixture.logger
        )
        return (edition, started)
    }
}
