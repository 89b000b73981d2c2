import Foundation
import PaperboyCore
import Testing

@testable import PaperboyBroadcast
@testable import PaperboyStore

/// A batch's sending decisions, without a database, a provider or a clock: every rule of ``BatchSendMachine``.
@Suite("Sending a batch: the state machine")
struct BatchSendMachineTests {
    typealias Machine = BatchSendMachine
    static let t0 = Date(timeIntervalSince1970: 1_000_000)
    static let deadline = t0.addingTimeInterval(3600)

    static func batch(rate: Double = 10, kind: BroadcastProgress.Wave.Kind = .background, readyAlertsFrom: Date? = nil) -> LeasedBatch {
        LeasedBatch(
            id: 7,
            broadcastID: UUID(),
            wave: 2,
            kind: kind,
            cohort: 0,
            firstKey: 0,
            lastKey: 10,
            firstOrdinal: 0,
            devices: 10,
            cohortStart: t0,
            rate: rate,
            editionID: UUID(),
            appID: 1,
            publicationID: 1,
            environment: .production,
            maxPushesPerDevice: 3,
            deadline: deadline,
            leases: 1,
            slotStart: t0,
            readyAlertsFrom: readyAlertsFrom
        )
    }

    static func apns(_ id: Int64, recent: [Date] = [], notify: Bool = false) -> BatchTarget {
        BatchTarget(
            deviceID: id,
            token: .apns(DeviceToken(bytes: Array(repeating: UInt8(id), count: 32))),
            tier: .large,
            recentBackgroundPushes: recent,
            notifyWhenReady: notify
        )
    }

    static func fcm(_ id: Int64) -> BatchTarget {
        BatchTarget(deviceID: id, token: .fcm(FCMToken(bytes: Array("fcm-token-\(id):APA91b".utf8))), platform: .android, tier: .small)
    }

    static func machine(
        _ targets: [BatchTarget],
        batch: LeasedBatch = batch(),
        providers: [PushProvider: Machine.ProviderState] = [.apns: .ready, .fcm: .ready],
        readyAlerts: Bool = false,
        notSentRounds: Int = 2
    ) -> Machine {
        var configuration = Machine.Configuration()
        configuration.notSentRounds = notSentRounds
        return Machine(batch: batch, targets: targets, providers: providers, readyAlerts: readyAlerts, configuration: configuration)
    }

    static func at(_ seconds: TimeInterval, lease: Machine.LeaseState = .held, drain: Date? = nil) -> Machine.Conditions {
        Machine.Conditions(now: t0.addingTimeInterval(seconds), lease: lease, drainDeadline: drain)
    }

    static func accepted(_ positions: [Int]) -> Machine.Event {
        .answered(positions.map { Machine.Answer(position: $0, result: .accepted) })
    }

    static func positions(_ decision: Machine.Decision) -> [Int] {
        decision.sends.flatMap { $0.pushes.map(\.position) }
    }

    static func recorded(_ decision: Machine.Decision) -> [BatchOutcome]? {
        if case .finish(.record(let outcomes)) = decision.action { return outcomes.sorted { $0.deviceID < $1.deviceID } }
        return nil
    }

    @Test("targets go out one by one at the wave's rate from the slot's start, then the batch is recorded")
    func pacing() {
        var machine = Self.machine((1...3).map { Self.apns($0) })
        #expect(machine.next(.started, Self.at(-0.4)) == Machine.Decision(action: .wait(until: Self.t0)))
        var decision = machine.next(.woke, Self.at(0))
        #expect(Self.positions(decision) == [0])
        #expect(decision.action == .wait(until: Self.t0.addingTimeInterval(0.1)))
        decision = machine.next(.woke, Self.at(0.1))
        #expect(Self.positions(decision) == [1])
        decision = machine.next(.woke, Self.at(0.2))
        #expect(Self.positions(decision) == [2])
        #expect(decision.action == .wait(until: .distantFuture), "all written: the answers are awaited")
        decision = machine.next(Self.accepted([0, 1, 2]), Self.at(0.25))
        #expect(Self.recorded(decision)?.map(\.result) == [.accepted, .accepted, .accepted])
        #expect(Self.recorded(decision)?.map(\.sentAt) == [Self.t0, Self.t0.addingTimeInterval(0.1), Self.t0.addingTimeInterval(0.2)])
    }

    @Test("targets due within a tick of each other go out together, grouped by provider")
    func tick() {
        var machine = Self.machine([Self.apns(1), Self.fcm(2), Self.apns(3)], batch: Self.batch(rate: 1000))
        let decision = machine.next(.started, Self.at(0))
        #expect(decision.sends.map(\.provider) == [.apns, .fcm])
        #expect(decision.sends.map { $0.pushes.map(\.position) } == [[0, 2], [1]])
    }

    @Test("a batch found behind its slot claims a new one for the rest, and goes on from there")
    func catchUp() {
        var machine = Self.machine((1...4).map { Self.apns($0) })
        _ = machine.next(.started, Self.at(0))
        var decision = machine.next(.woke, Self.at(0.1))
        #expect(Self.positions(decision) == [1])
        // Paused for 5 seconds: no burst of the backlog.
        decision = machine.next(.woke, Self.at(5.1))
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .claimSlot(from: 2, remaining: 2, notBefore: nil))
        let slot = Self.t0.addingTimeInterval(7)
        decision = machine.next(.slotClaimed(slot), Self.at(5.2))
        #expect(decision.action == .wait(until: slot))
        decision = machine.next(.woke, Self.at(7))
        #expect(Self.positions(decision) == [2])
        #expect(decision.action == .wait(until: slot.addingTimeInterval(0.1)))
    }

    @Test("deadline, hourly budget and providers without credentials are skipped, never sent")
    func skips() {
        let full = (0..<BroadcastOptions.hourlyBudget).map { Self.t0.addingTimeInterval(-600 - Double($0)) }
        var machine = Self.machine(
            [Self.apns(1), Self.apns(2, recent: full), Self.fcm(3)],
            batch: Self.batch(rate: 1000),
            providers: [.apns: .ready, .fcm: .notConfigured]
        )
        let decision = machine.next(.started, Self.at(0))
        #expect(Self.positions(decision) == [0])
        let outcomes = Self.recorded(machine.next(Self.accepted([0]), Self.at(0.1)))
        #expect(outcomes?.map(\.result) == [.accepted, .skipped(.hourlyBudget), .skipped(.fcmNotConfigured)])

        var atDeadline = Self.batch(rate: 1000)
        atDeadline.slotStart = Self.deadline
        var late = Self.machine([Self.apns(1)], batch: atDeadline)
        let pastDeadline = late.next(.started, Self.at(3600))
        #expect(pastDeadline.sends.isEmpty)
        #expect(Self.recorded(pastDeadline)?.map(\.result) == [.skipped(.deadline)])
    }

    @Test("an APNs device whose reader asked gets the ready alert in place of its last background follow-up")
    func readyAlert() {
        let batch = Self.batch(rate: 1000, readyAlertsFrom: Self.t0)
        var machine = Self.machine([Self.apns(1, notify: true), Self.apns(2)], batch: batch, readyAlerts: true)
        let decision = machine.next(.started, Self.at(0))
        #expect(decision.sends.first?.pushes == [Machine.Push(position: 0, readyAlert: true), Machine.Push(position: 1, readyAlert: false)])
        let outcomes = Self.recorded(machine.next(Self.accepted([0, 1]), Self.at(0.1)))
        #expect(outcomes?.map(\.alert) == [true, false])

        var notReady = Self.machine([Self.apns(1, notify: true)], batch: batch, readyAlerts: false)
        #expect(notReady.next(.started, Self.at(0)).sends.first?.pushes == [Machine.Push(position: 0, readyAlert: false)])
    }

    @Test("an unreachable provider holds the sends, then the rest takes a slot a silence limit after its return")
    func unreachable() {
        var machine = Self.machine((1...3).map { Self.apns($0) })
        var away = Self.at(0)
        away.unreachable = .apns
        away.silenceLimit = 2
        var decision = machine.next(.started, away)
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .waitForProvider(.apns, until: Self.t0.addingTimeInterval(60)))
        decision = machine.next(.providerWaitEnded, Self.at(12))
        #expect(decision.action == .claimSlot(from: 0, remaining: 3, notBefore: Self.t0.addingTimeInterval(14)))
    }

    @Test("targets the provider never received go again in later slots, then are recorded as notSent")
    func notSentRounds() {
        var machine = Self.machine([Self.apns(1), Self.apns(2)], batch: Self.batch(rate: 1000), notSentRounds: 1)
        _ = machine.next(.started, Self.at(0))
        var decision = machine.next(
            .answered([Machine.Answer(position: 0, result: .accepted), Machine.Answer(position: 1, result: .notSent)]),
            Self.at(0.5)
        )
        #expect(decision.action == .claimSlot(from: 1, remaining: 1, notBefore: nil))
        decision = machine.next(.slotClaimed(Self.t0.addingTimeInterval(1)), Self.at(0.6))
        decision = machine.next(.woke, Self.at(1))
        #expect(Self.positions(decision) == [1])
        decision = machine.next(.answered([Machine.Answer(position: 1, result: .notSent)]), Self.at(1.5))
        #expect(Self.recorded(decision)?.map(\.result) == [.accepted, .notSent])
    }

    @Test("a provider whose credentials this worker cannot load: the batch goes back whole, nothing sent")
    func credentialsUnavailable() {
        var machine = Self.machine([Self.apns(1), Self.fcm(2)], providers: [.apns: .ready, .fcm: .unavailable("no file")])
        let decision = machine.next(.started, Self.at(0))
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .finish(.giveBack(recorded: [], returned: [0, 1], because: .credentials(.fcm, "no file"))))
    }

    @Test("credentials refused: read again before anything else; changed ones send the refused targets again")
    func credentialsRotated() {
        var machine = Self.machine((1...3).map { Self.apns($0) }, batch: Self.batch(rate: 10))
        _ = machine.next(.started, Self.at(0))
        _ = machine.next(.woke, Self.at(0.1))
        var decision = machine.next(
            .answered([
                Machine.Answer(position: 0, result: .rejected(reason: "InvalidProviderToken", deactivates: nil), credentialsRejected: true)
            ]),
            Self.at(0.15)
        )
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .reloadCredentials(.apns))
        decision = machine.next(.credentialsReloaded(.apns, .changed), Self.at(0.16))
        #expect(decision.action == .wait(until: Self.t0.addingTimeInterval(0.2)))
        decision = machine.next(.woke, Self.at(0.2))
        #expect(Self.positions(decision) == [2])
        decision = machine.next(Self.accepted([1, 2]), Self.at(0.3))
        #expect(decision.action == .claimSlot(from: 0, remaining: 1, notBefore: nil), "the refused target goes again, paced")
        _ = machine.next(.slotClaimed(Self.t0.addingTimeInterval(1)), Self.at(0.3))
        decision = machine.next(.woke, Self.at(1))
        #expect(Self.positions(decision) == [0])
        let outcomes = Self.recorded(machine.next(Self.accepted([0]), Self.at(1.1)))
        #expect(outcomes?.map(\.result) == [.accepted, .accepted, .accepted], "no device deactivated, none lost")
    }

    @Test("credentials refused and unchanged: the batch stops and goes back, what was answered is recorded")
    func credentialsRefused() {
        var machine = Self.machine((1...3).map { Self.apns($0) })
        _ = machine.next(.started, Self.at(0))
        _ = machine.next(.woke, Self.at(0.1))
        _ = machine.next(
            .answered([
                Machine.Answer(position: 0, result: .accepted),
                Machine.Answer(position: 1, result: .rejected(reason: "InvalidProviderToken", deactivates: nil), credentialsRejected: true),
            ]),
            Self.at(0.15)
        )
        let decision = machine.next(.credentialsReloaded(.apns, .unchanged), Self.at(0.16))
        guard case .finish(.giveBack(let recorded, let returned, .credentials(.apns, _))) = decision.action else {
            Issue.record("expected a give-back, got \(decision.action)")
            return
        }
        #expect(recorded.map(\.deviceID) == [1])
        #expect(returned == [1, 2])
    }

    @Test("a lost lease ends the batch with nothing recorded; a cancelled broadcast skips the rest")
    func lease() {
        var lost = Self.machine((1...3).map { Self.apns($0) })
        _ = lost.next(.started, Self.at(0))
        #expect(lost.next(.woke, Self.at(0.1, lease: .lost)).action == .finish(.abandon))

        var cancelled = Self.machine((1...3).map { Self.apns($0) })
        _ = cancelled.next(.started, Self.at(0))
        let decision = cancelled.next(.woke, Self.at(0.1, lease: .cancelled))
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .wait(until: .distantFuture), "the written one is awaited")
        let outcomes = Self.recorded(cancelled.next(Self.accepted([0]), Self.at(0.2, lease: .cancelled)))
        #expect(outcomes?.map(\.result) == [.accepted, .skipped(.cancelled), .skipped(.cancelled)])
    }

    @Test("nothing is written under a lease that may have expired until a renewal confirms it")
    func unconfirmedLease() {
        var machine = Self.machine([Self.apns(1)])
        var decision = machine.next(.started, Self.at(0, lease: .unconfirmed))
        #expect(decision == Machine.Decision(action: .confirmLease))
        decision = machine.next(.leaseConfirmed(true), Self.at(0.01))
        #expect(Self.positions(decision) == [0])

        var taken = Self.machine([Self.apns(1)])
        _ = taken.next(.started, Self.at(0, lease: .unconfirmed))
        #expect(taken.next(.leaseConfirmed(false), Self.at(0.01)).action == .finish(.abandon))
    }

    @Test("draining: written requests are awaited until the deadline, the rest goes back, nothing more is written")
    func drain() {
        var machine = Self.machine((1...4).map { Self.apns($0) })
        _ = machine.next(.started, Self.at(0))
        _ = machine.next(.woke, Self.at(0.1))
        let deadline = Self.t0.addingTimeInterval(10.1)
        var decision = machine.next(.woke, Self.at(0.15, drain: deadline))
        #expect(decision == Machine.Decision(action: .wait(until: deadline)))
        decision = machine.next(
            .answered([Machine.Answer(position: 0, result: .accepted), Machine.Answer(position: 1, result: .notSent)]),
            Self.at(0.3, drain: deadline)
        )
        guard case .finish(.giveBack(let recorded, let returned, .draining)) = decision.action else {
            Issue.record("expected a give-back, got \(decision.action)")
            return
        }
        #expect(recorded.map(\.deviceID) == [1])
        #expect(returned == [1, 2, 3], "never received, and not yet written: back to the cohort")
    }

    @Test("draining past the deadline: what was written and not answered is fate unknown, never sent again")
    func drainDeadline() {
        var machine = Self.machine((1...2).map { Self.apns($0) })
        _ = machine.next(.started, Self.at(0))
        let deadline = Self.t0.addingTimeInterval(10)
        _ = machine.next(.woke, Self.at(0.05, drain: deadline))
        let decision = machine.next(.woke, Self.at(10, drain: deadline))
        guard case .finish(.giveBack(let recorded, let returned, .draining)) = decision.action else {
            Issue.record("expected a give-back, got \(decision.action)")
            return
        }
        #expect(recorded.map(\.result) == [.fateUnknown])
        #expect(returned == [1])
    }

    @Test("a skipped target goes back with the unsent ones when the batch is given back: it has no delivery, and the next holder judges it again")
    func skippedGoesBack() {
        let full = (0..<BroadcastOptions.hourlyBudget).map { Self.t0.addingTimeInterval(-600 - Double($0)) }
        var machine = Self.machine([Self.apns(1), Self.apns(2, recent: full), Self.apns(3)], batch: Self.batch(rate: 10))
        _ = machine.next(.started, Self.at(0))
        _ = machine.next(.woke, Self.at(0.1))
        let decision = machine.next(Self.accepted([0]), Self.at(0.15, drain: Self.t0.addingTimeInterval(10)))
        guard case .finish(.giveBack(let recorded, let returned, .draining)) = decision.action else {
            Issue.record("expected a give-back, got \(decision.action)")
            return
        }
        #expect(recorded.map(\.deviceID) == [1])
        #expect(returned == [1, 2])
    }

    @Test("draining with everything answered records the batch: nothing to give back")
    func drainAfterAll() {
        var machine = Self.machine([Self.apns(1)])
        _ = machine.next(.started, Self.at(0))
        let decision = machine.next(Self.accepted([0]), Self.at(0.1, drain: Self.t0.addingTimeInterval(10)))
        #expect(Self.recorded(decision)?.map(\.result) == [.accepted])
    }
}
