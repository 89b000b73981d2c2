import Foundation
import PaperboyCore
import Testing

@testable import PaperboyDispatch

/// A worker's decisions, without a database, a provider or a clock: every rule of ``WorkerMachine``.
@Suite("A worker: the state machine")
struct WorkerMachineTests {
    typealias Machine = WorkerMachine
    static let t0 = Date(timeIntervalSince1970: 1_000_000)

    static func at(_ seconds: TimeInterval) -> Moment { Moment(t0.addingTimeInterval(seconds)) }

    static func batch(_ id: Int64, app: Int = 1, devices: Int = 2, rate: Double = 1000) -> LeasedBatch {
        LeasedBatch(
            id: id,
            broadcastID: UUID(uuidString: "00000000-0000-0000-0000-00000000000\(id % 10)")!,
            wave: 1,
            kind: .background,
            cohort: 0,
            firstKey: 0,
            lastKey: 10,
            firstOrdinal: 0,
            devices: devices,
            cohortStart: t0,
            rate: rate,
            editionID: UUID(uuidString: "00000000-0000-0000-0000-0000000000ed")!,
            appID: app,
            publicationID: 1,
            environment: .production,
            maxPushesPerDevice: 3,
            deadline: t0.addingTimeInterval(3600),
            leases: 1,
            slotStart: t0
        )
    }

    static func apns(_ id: Int64) -> BatchTarget {
        BatchTarget(deviceID: id, token: .apns(DeviceToken(bytes: Array(repeating: UInt8(id), count: 32))), tier: .large)
    }

    static func fcm(_ id: Int64) -> BatchTarget {
        BatchTarget(deviceID: id, token: .fcm(FCMToken(bytes: Array("fcm-\(id):APA91b".utf8))), platform: .android, tier: .small)
    }

    static func contents(_ targets: [BatchTarget], _ providers: [PushProvider: BatchSendMachine.ProviderState]? = nil) -> Machine.BatchContents {
        let used = Set(targets.map(\.provider))
        return Machine.BatchContents(
            targets: targets,
            providers: providers ?? Dictionary(uniqueKeysWithValues: used.map { ($0, .ready(generation: 1)) }),
            appProviders: [.apns, .fcm]
        )
    }

    /// A worker holding batch 1 of two APNs devices, read and sent at 0.
    static func sending(_ machine: inout Machine, targets: [BatchTarget] = [apns(1), apns(2)], batch: LeasedBatch = batch(1)) -> [Machine.Action] {
        _ = machine.handle(.started, at: at(0))
        _ = machine.handle(.leased(batch), at: at(0))
        return machine.handle(.batchRead(batch.id, contents(targets)), at: at(0))
    }

    static func sends(_ actions: [Machine.Action]) -> [BatchSendMachine.Send] {
        actions.compactMap { if case .send(_, let send) = $0 { send } else { nil } }
    }

    static func leases(_ actions: [Machine.Action]) -> [Machine.LeaseRequest] {
        actions.compactMap { if case .lease(let request) = $0 { request } else { nil } }
    }

    static func ended(_ actions: [Machine.Action]) -> [Machine.BatchEnd] {
        actions.compactMap { if case .ended(_, let end) = $0 { end } else { nil } }
    }

    static func accepted(_ positions: [Int], batch: Int64 = 1) -> Machine.Event {
        .answered(batch, positions.map { BatchSendMachine.Answer(position: $0, result: .accepted, generation: 1) })
    }

    @Test("it reports its status and leases at once; a batch leased is read and another lease asked for; none found waits the poll interval")
    func leasing() {
        var machine = Machine()
        let start = machine.handle(.started, at: Self.at(0))
        #expect(start.first == .reportStatus)
        #expect(Self.leases(start).count == 1)
        let leased = machine.handle(.leased(Self.batch(1)), at: Self.at(0.01))
        #expect(leased.first == .read(Self.batch(1)))
        #expect(Self.leases(leased).first?.excludingBatches == [1])
        _ = machine.handle(.leased(nil), at: Self.at(0.02))
        #expect(machine.nextWake == Self.t0.addingTimeInterval(0.22))
        #expect(Self.leases(machine.handle(.tick, at: Self.at(0.22))).count == 1)
    }

    @Test(
        "expired leases are taken over only after the database has answered for a grace with no long silence: not at start, not on waking from SIGSTOP (paperboy-sim seed 9518)"
    )
    func takeOverAfterListening() {
        var machine = Machine()
        let grace = Machine.Configuration().takeOverGrace
        #expect(Self.leases(machine.handle(.started, at: Self.at(0))).first?.takeOver == false, "nothing heard yet")
        var now = 0.0
        var request: Machine.LeaseRequest?
        while now < grace + 1 {
            _ = machine.handle(.leased(nil), at: Self.at(now + 0.01))
            now += 0.21
            request = Self.leases(machine.handle(.tick, at: Self.at(now))).first ?? request
            if now < grace { #expect(request?.takeOver == false, "at \(now) s: listened less than a grace") }
        }
        #expect(request?.takeOver == true, "listened for a grace")
        _ = machine.handle(.leased(nil), at: Self.at(now + 0.01))
        // Stopped for a minute: woken, it asks at once, and may not take over until it has listened again.
        let woken = Self.leases(machine.handle(.tick, at: Self.at(now + 60))).first
        #expect(woken?.takeOver == false, "silent for longer than a grace")
        _ = machine.handle(.leased(nil), at: Self.at(now + 60.01))
        let next = Self.leases(machine.handle(.tick, at: Self.at(now + 60.22))).first
        #expect(next?.takeOver == false, "heard again only just now")
    }

    @Test("at most four batches are held; the fifth lease waits for one to end")
    func inFlight() {
        var machine = Machine()
        _ = machine.handle(.started, at: Self.at(0))
        for id in 1...3 { #expect(Self.leases(machine.handle(.leased(Self.batch(Int64(id))), at: Self.at(0))).count == 1) }
        #expect(Self.leases(machine.handle(.leased(Self.batch(4)), at: Self.at(0))).isEmpty)
        let ended = machine.handle(.batchUnreadable(2, .database("no answer")), at: Self.at(0.1))
        #expect(Self.ended(ended) == [.unreadable("no answer")])
        #expect(Self.leases(ended).count == 1)
    }

    @Test("a batch is sent, its answers recorded, and the provider reported as sending")
    func recorded() {
        var machine = Machine()
        let sent = Self.sending(&machine)
        #expect(Self.sends(sent).map { $0.pushes.map(\.position) } == [[0, 1]])
        let write = machine.handle(Self.accepted([0, 1]), at: Self.at(0.1))
        guard case .write(_, .record(let outcomes)) = write.first(where: { if case .write = $0 { true } else { false } }) else {
            Issue.record("expected a write, got \(write)")
            return
        }
        #expect(outcomes.count == 2)
        let done = machine.handle(.written(1), at: Self.at(0.2))
        #expect(Self.ended(done).count == 1)
        #expect(done.contains(.reportSent(AppProvider(appID: 1, provider: .apns), recovered: false)))
        #expect(machine.batchesHeld == 0)
    }

    @Test("writing is retried after a backoff while the database fails, then left to the lease after the record patience")
    func writeRetries() {
        var configuration = Machine.Configuration()
        configuration.recordPatience = 10
        var machine = Machine(configuration: configuration)
        _ = Self.sending(&machine)
        _ = machine.handle(Self.accepted([0, 1]), at: Self.at(0.1))
        _ = machine.handle(.writeFailed(1, "down"), at: Self.at(0.2))
        #expect(machine.nextWake == Self.t0.addingTimeInterval(0.45))
        let again = machine.handle(.tick, at: Self.at(0.45))
        #expect(again.contains { if case .write = $0 { true } else { false } })
        let gaveUp = machine.handle(.writeFailed(1, "down"), at: Self.at(10.2))
        #expect(Self.ended(gaveUp) == [.unwritten("down")])
    }

    @Test("the heartbeat renews every third of a lease; a batch its renewal does not find lost its lease and stops with nothing recorded")
    func heartbeat() {
        var machine = Machine()
        _ = Self.sending(&machine, batch: Self.batch(1, rate: 1))
        let beat = machine.handle(.tick, at: Self.at(10))
        #expect(beat.contains(.renew([Self.batch(1, rate: 1)])))
        #expect(beat.contains(.reportStatus))
        let lost = machine.handle(.renewed(LeaseRenewal(held: [])), at: Self.at(10.1))
        #expect(Self.ended(lost) == [.lost])
    }

    @Test("a renewal that misses a batch being written is no loss: it may have just been recorded")
    func renewalWhileWriting() {
        var machine = Machine()
        _ = Self.sending(&machine)
        _ = machine.handle(Self.accepted([0, 1]), at: Self.at(0.1))
        _ = machine.handle(.tick, at: Self.at(10))
        #expect(Self.ended(machine.handle(.renewed(LeaseRenewal(held: [])), at: Self.at(10.1))).isEmpty)
        #expect(Self.ended(machine.handle(.written(1), at: Self.at(10.2))).count == 1)
    }

    @Test("a broadcast cancelled while a batch is held: the renewal says so and the rest is skipped")
    func cancelled() {
        var machine = Machine()
        _ = Self.sending(&machine, batch: Self.batch(1, devices: 3, rate: 1))
        _ = machine.handle(.tick, at: Self.at(10))
        let actions = machine.handle(.renewed(LeaseRenewal(held: [1], stopped: [1])), at: Self.at(10.1))
        #expect(Self.sends(actions).isEmpty)
    }

    @Test(
        "a pod without the app's key gives the batch back, reports the problem once per backoff, and leaves that provider's given-back batches to others"
    )
    func cannotSend() {
        var machine = Machine()
        _ = machine.handle(.started, at: Self.at(0))
        _ = machine.handle(.leased(Self.batch(1)), at: Self.at(0))
        let read = machine.handle(.batchRead(1, Self.contents([Self.apns(1), Self.apns(2)], [.apns: .unavailable("no key file")])), at: Self.at(0))
        guard case .write(_, .giveBack(_, let returned, let because))? = read.first(where: { if case .write = $0 { true } else { false } }) else {
            Issue.record("expected a give-back, got \(read)")
            return
        }
        #expect(returned == [0, 1])
        #expect(because.providers[.apns] == .unavailable("no key file"))
        let written = machine.handle(.written(1), at: Self.at(0.1))
        #expect(written.contains { if case .reportProblem(let problem) = $0 { problem.provider == .apns && problem.code == "load" } else { false } })
        _ = machine.handle(.leased(nil), at: Self.at(0.15))
        let next = Self.leases(machine.handle(.tick, at: Self.at(0.35))).first
        #expect(next?.excludingProviders == [AppProvider(appID: 1, provider: .apns)])
        #expect(next?.excludingApps == [], "the app's FCM devices are still this worker's")
        // A second batch within the backoff: no news.
        _ = machine.handle(.leased(Self.batch(2)), at: Self.at(1))
        _ = machine.handle(.batchRead(2, Self.contents([Self.apns(3)], [.apns: .unavailable("no key file")])), at: Self.at(1))
        #expect(!machine.handle(.written(2), at: Self.at(1.1)).contains { if case .reportProblem = $0 { true } else { false } })
    }

    @Test(
        "credentials that cannot be read again after a refusal (the old key file removed): the batch gives that provider back instead of waiting for ever"
    )
    func reloadFails() {
        var machine = Machine()
        _ = Self.sending(&machine)
        let refused = BatchSendMachine.Answer(position: 0, result: .notSent, credentialsRejected: true, generation: 1)
        let reload = machine.handle(.answered(1, [refused]), at: Self.at(0.01))
        #expect(reload.contains(.reloadCredentials(Self.batch(1), .apns, refusedGeneration: 1)))
        _ = machine.handle(.credentialsReloaded(1, .apns, .failed("the key file is gone")), at: Self.at(0.02))
        let given = machine.handle(.answered(1, [BatchSendMachine.Answer(position: 1, result: .accepted, generation: 1)]), at: Self.at(0.03))
        #expect(given.contains { if case .write(_, .giveBack(_, [0], _)) = $0 { true } else { false } })
    }

    @Test(
        "a sandbox broadcast's 'not valid' answers hold the app's sandbox sends only: a production batch of the same app on this worker goes on sending (issue 47, finding 5)"
    )
    func holdPerEnvironment() {
        var machine = Machine()
        _ = machine.handle(.started, at: Self.at(0))
        var sandbox = Self.batch(1, devices: 12)
        sandbox.environment = .sandbox
        _ = machine.handle(.leased(sandbox), at: Self.at(0))
        _ = machine.handle(.leased(Self.batch(2, devices: 2, rate: 1)), at: Self.at(0))
        _ = machine.handle(.batchRead(1, Self.contents((1...12).map { Self.apns($0) })), at: Self.at(0))
        _ = machine.handle(.batchRead(2, Self.contents([Self.apns(20), Self.apns(21)])), at: Self.at(0))
        let invalid = (0..<12).map {
            BatchSendMachine.Answer(
                position: $0,
                result: .rejected(reason: "BadDeviceToken", deactivates: .deferred),
                generation: 1,
                misconfigurationHint: "tokens of the other APNs environment"
            )
        }
        let actions = machine.handle(.answered(1, invalid), at: Self.at(0.1))
        let raised = actions.compactMap { if case .raiseHold(let suspicion) = $0 { suspicion } else { nil } }
        #expect(raised.map(\.key) == [HoldKey(appID: 1, environment: .sandbox, provider: .apns)])
        // The production batch's second device is still sent at its instant (held, it would not be: `misconfiguration`).
        #expect(!Self.sends(machine.handle(.tick, at: Self.at(1))).isEmpty, "production is not held")
    }

    @Test(
        "after an operator confirmed the deactivations (the tokens really are invalid), the same answers raise no hold again: they are recorded, held for ten minutes, with their hint"
    )
    func confirmedAnswersRaiseNoHold() {
        var machine = Machine()
        _ = machine.handle(.started, at: Self.at(0))
        _ = machine.handle(.leased(Self.batch(1, devices: 12)), at: Self.at(0))
        var contents = Self.contents((1...12).map { Self.apns($0) })
        contents.confirmed = [.apns]
        _ = machine.handle(.batchRead(1, contents), at: Self.at(0))
        _ = machine.handle(.tick, at: Self.at(0.05))
        let invalid = (0..<12).map {
            BatchSendMachine.Answer(
                position: $0,
                result: .rejected(reason: "BadDeviceToken", deactivates: .deferred),
                generation: 1,
                misconfigurationHint: "tokens of another app"
            )
        }
        let actions = machine.handle(.answered(1, invalid), at: Self.at(0.1)) + machine.handle(.tick, at: Self.at(2))
        #expect(!actions.contains { if case .raiseHold = $0 { true } else { false } }, "confirmed: no hold")
        let written: [[BatchOutcome]] = actions.compactMap { if case .write(_, .record(let outcomes)) = $0 { outcomes } else { nil } }
        let recorded = written.first ?? []
        #expect(recorded.count == 12)
        #expect(
            recorded.allSatisfy { $0.result == .rejected(reason: "BadDeviceToken", deactivates: .deferred) && $0.hint == "tokens of another app" }
        )
    }

    @Test(
        "most answers of an app say 'token not valid': the provider is held once, every batch of the app here stops sending through it, nothing is recorded for them"
    )
    func misconfiguration() {
        var machine = Machine()
        _ = machine.handle(.started, at: Self.at(0))
        _ = machine.handle(.leased(Self.batch(1, devices: 12)), at: Self.at(0))
        _ = machine.handle(.leased(Self.batch(2, devices: 1, rate: 1)), at: Self.at(0))
        _ = machine.handle(.batchRead(1, Self.contents((1...12).map { Self.apns($0) })), at: Self.at(0))
        _ = machine.handle(.batchRead(2, Self.contents([Self.apns(20), Self.apns(21)])), at: Self.at(0))
        let invalid = (0..<12).map {
            BatchSendMachine.Answer(
                position: $0,
                result: .rejected(reason: "DeviceTokenNotForTopic", deactivates: .deferred),
                generation: 1,
                misconfigurationHint: "the app's bundle id"
            )
        }
        let actions = machine.handle(.answered(1, invalid), at: Self.at(0.1))
        let raised = actions.compactMap { if case .raiseHold(let suspicion) = $0 { suspicion } else { nil } }
        #expect(raised.map(\.answer) == ["DeviceTokenNotForTopic"])
        let writes = actions.compactMap {
            if case .write(let batch, .giveBack(let recorded, let returned, _)) = $0 { (batch.id, recorded, returned) } else { nil }
        }
        #expect(writes.first?.0 == 1)
        #expect(writes.first?.1 == [], "no device recorded, so none deactivated")
        #expect(writes.first?.2 == Array(0..<12))
        // The other batch of the app: its second device is not sent.
        #expect(Self.sends(machine.handle(.tick, at: Self.at(1))).isEmpty)
    }

    @Test(
        "a hold the store could not be asked for (the database away) is asked again at the next heartbeat, the provider held here meanwhile; once raised, never again (seed 22058)"
    )
    func holdRaisedAgain() {
        var machine = Machine()
        _ = machine.handle(.started, at: Self.at(0))
        _ = machine.handle(.leased(Self.batch(1, devices: 12)), at: Self.at(0))
        _ = machine.handle(.batchRead(1, Self.contents((1...12).map { Self.apns($0) })), at: Self.at(0))
        let invalid = (0..<12).map {
            BatchSendMachine.Answer(position: $0, result: .rejected(reason: "DeviceTokenNotForTopic", deactivates: .deferred), generation: 1)
        }
        let first = machine.handle(.answered(1, invalid), at: Self.at(0.1))
        let suspicion = try? #require(first.compactMap { if case .raiseHold(let suspicion) = $0 { suspicion } else { nil } }.first)
        let key = HoldKey(appID: 1, environment: .production, provider: .apns)
        var retried: [Machine.Action] = machine.handle(.holdNotRaised(key, "database down"), at: Self.at(0.2))
        #expect(!retried.contains { if case .raiseHold = $0 { true } else { false } }, "not at once: at the heartbeat")
        // A batch of the app read meanwhile still treats the provider as held: nothing is sent through it.
        _ = machine.handle(.leased(Self.batch(2, devices: 2)), at: Self.at(1))
        #expect(Self.sends(machine.handle(.batchRead(2, Self.contents([Self.apns(20), Self.apns(21)])), at: Self.at(1))).isEmpty)
        for second in stride(from: 1.0, through: 31, by: 1) { retried += machine.handle(.tick, at: Self.at(second)) }
        let again = retried.compactMap { if case .raiseHold(let suspicion) = $0 { suspicion } else { nil } }
        #expect(again == [suspicion].compactMap { $0 }, "asked again once, with the same evidence and configuration version")
        _ = machine.handle(.holdRaised(key), at: Self.at(31.5))
        var later: [Machine.Action] = []
        for second in stride(from: 32.0, through: 70, by: 1) { later += machine.handle(.tick, at: Self.at(second)) }
        #expect(!later.contains { if case .raiseHold = $0 { true } else { false } })
    }

    @Test("SIGTERM: no more leases, every batch told; the worker stops when none is left")
    func drain() {
        var machine = Machine()
        _ = Self.sending(&machine, batch: Self.batch(1, devices: 2, rate: 1))
        let drained = machine.handle(.drainStarted(timeout: 10), at: Self.at(0.1))
        #expect(drained.contains(.withdraw(1)))
        #expect(Self.leases(drained).isEmpty)
        _ = machine.handle(Self.accepted([0]), at: Self.at(0.2))
        _ = machine.handle(.leased(nil), at: Self.at(0.25))
        let stop = machine.handle(.written(1), at: Self.at(0.3))
        #expect(stop.last == .stop)
        #expect(machine.stopped)
    }

    @Test("a drain whose writes never finish stops at the deadline and the write grace (8 s), leaving the batch to its lease")
    func drainHardStop() {
        var machine = Machine()
        _ = Self.sending(&machine)
        _ = machine.handle(Self.accepted([0, 1]), at: Self.at(0.1))
        _ = machine.handle(.drainStarted(timeout: 10), at: Self.at(0.2))
        #expect(Self.ended(machine.handle(.tick, at: Self.at(18.1))).isEmpty, "still within the deadline and the grace")
        let stop = machine.handle(.tick, at: Self.at(18.3))
        #expect(Self.ended(stop).count == 1)
        #expect(stop.last == .stop)
    }

    @Test(
        "a drain's last write answered five seconds after the drain's deadline (a slow database) is recorded, not left to the lease: its accepted devices are not sent again (issue 47, finding 5: 1.5 s before)"
    )
    func drainSlowWrite() {
        var machine = Machine()
        _ = Self.sending(&machine)
        _ = machine.handle(.drainStarted(timeout: 10), at: Self.at(0.05))
        _ = machine.handle(.leased(nil), at: Self.at(0.06))
        let writes = machine.handle(Self.accepted([0, 1]), at: Self.at(10))
        #expect(writes.contains { if case .write(_, .record) = $0 { true } else { false } })
        #expect(Self.ended(machine.handle(.tick, at: Self.at(13))).isEmpty, "the write is still in flight")
        let written = machine.handle(.written(1), at: Self.at(15))
        #expect(written.contains { if case .ended(_, .recorded) = $0 { true } else { false } }, "\(written)")
        #expect(written.contains(.stop), "nothing left: the worker stops")
    }
}
