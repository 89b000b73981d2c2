import Foundation
import PaperboyCore
import Testing

@testable import PaperboyDispatch

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
        providers: [PushProvider: Machine.ProviderState] = [.apns: .ready(generation: 1), .fcm: .ready(generation: 1)],
        readyAlerts: Bool = false,
        notSentRounds: Int = 2,
        pauseAfter: Int = 1,
        trustedUntil: TimeInterval = .infinity
    ) -> Machine {
        var configuration = Machine.Configuration()
        configuration.notSentRounds = notSentRounds
        configuration.pauseAfter = pauseAfter
        return Machine(
            batch: batch,
            targets: targets,
            providers: providers,
            readyAlertProviders: readyAlerts ? [.apns] : [],
            trustedUntil: trustedUntil,
            configuration: configuration
        )
    }

    static func at(_ seconds: TimeInterval) -> Moment {
        Moment(t0.addingTimeInterval(seconds))
    }

    static func accepted(_ positions: [Int], generation: Int = 1) -> Machine.Event {
        .answered(positions.map { Machine.Answer(position: $0, result: .accepted, generation: generation) })
    }

    static func refused(_ position: Int, generation: Int = 1) -> Machine.Answer {
        Machine.Answer(
            position: position,
            result: .rejected(reason: "InvalidProviderToken", deactivates: nil),
            credentialsRejected: true,
            generation: generation
        )
    }

    static func givenBack(_ decision: Machine.Decision) -> (recorded: [BatchOutcome], returned: [Int], because: Machine.GiveBack)? {
        if case .finish(.giveBack(let recorded, let returned, let because)) = decision.action { return (recorded, returned, because) }
        return nil
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
        #expect(machine.next(.started, at: Self.at(-0.4)) == Machine.Decision(action: .wait(until: Self.t0)))
        var decision = machine.next(.tick, at: Self.at(0))
        #expect(Self.positions(decision) == [0])
        #expect(decision.action == .wait(until: Self.t0.addingTimeInterval(0.1)))
        decision = machine.next(.tick, at: Self.at(0.1))
        #expect(Self.positions(decision) == [1])
        decision = machine.next(.tick, at: Self.at(0.2))
        #expect(Self.positions(decision) == [2])
        #expect(decision.action == .wait(until: .distantFuture), "all written: the answers are awaited")
        decision = machine.next(Self.accepted([0, 1, 2]), at: Self.at(0.25))
        #expect(Self.recorded(decision)?.map(\.result) == [.accepted, .accepted, .accepted])
        #expect(Self.recorded(decision)?.map(\.sentAt) == [Self.t0, Self.t0.addingTimeInterval(0.1), Self.t0.addingTimeInterval(0.2)])
    }

    @Test("targets due within a tick of each other go out together, grouped by provider")
    func tick() {
        var machine = Self.machine([Self.apns(1), Self.fcm(2), Self.apns(3)], batch: Self.batch(rate: 1000))
        let decision = machine.next(.started, at: Self.at(0))
        #expect(decision.sends.map(\.provider) == [.apns, .fcm])
        #expect(decision.sends.map { $0.pushes.map(\.position) } == [[0, 2], [1]])
    }

    @Test("a batch found behind its slot claims a new one for the rest, and goes on from there")
    func catchUp() {
        var machine = Self.machine((1...4).map { Self.apns($0) })
        _ = machine.next(.started, at: Self.at(0))
        var decision = machine.next(.tick, at: Self.at(0.1))
        #expect(Self.positions(decision) == [1])
        // Paused for 5 seconds: no burst of the backlog.
        decision = machine.next(.tick, at: Self.at(5.1))
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .claimSlot(from: 2, remaining: 2, notBefore: nil))
        let slot = Self.t0.addingTimeInterval(7)
        decision = machine.next(.slotClaimed(slot), at: Self.at(5.2))
        #expect(decision.action == .wait(until: slot))
        decision = machine.next(.tick, at: Self.at(7))
        #expect(Self.positions(decision) == [2])
        #expect(decision.action == .wait(until: slot.addingTimeInterval(0.1)))
    }

    @Test("deadline, hourly budget and providers without credentials are skipped, never sent")
    func skips() {
        let full = (0..<BroadcastOptions.hourlyBudget).map { Self.t0.addingTimeInterval(-600 - Double($0)) }
        var machine = Self.machine(
            [Self.apns(1), Self.apns(2, recent: full), Self.fcm(3)],
            batch: Self.batch(rate: 1000),
            providers: [.apns: .ready(generation: 1), .fcm: .notConfigured]
        )
        let decision = machine.next(.started, at: Self.at(0))
        #expect(Self.positions(decision) == [0])
        let outcomes = Self.recorded(machine.next(Self.accepted([0]), at: Self.at(0.1)))
        #expect(outcomes?.map(\.result) == [.accepted, .skipped(.hourlyBudget), .skipped(.fcmNotConfigured)])

        var atDeadline = Self.batch(rate: 1000)
        atDeadline.slotStart = Self.deadline
        var late = Self.machine([Self.apns(1)], batch: atDeadline)
        let pastDeadline = late.next(.started, at: Self.at(3600))
        #expect(pastDeadline.sends.isEmpty)
        #expect(Self.recorded(pastDeadline)?.map(\.result) == [.skipped(.deadline)])
    }

    @Test("an APNs device whose reader asked gets the ready alert in place of its last background follow-up")
    func readyAlert() {
        let batch = Self.batch(rate: 1000, readyAlertsFrom: Self.t0)
        var machine = Self.machine([Self.apns(1, notify: true), Self.apns(2)], batch: batch, readyAlerts: true)
        let decision = machine.next(.started, at: Self.at(0))
        #expect(decision.sends.first?.pushes == [Machine.Push(position: 0, readyAlert: true), Machine.Push(position: 1, readyAlert: false)])
        let outcomes = Self.recorded(machine.next(Self.accepted([0, 1]), at: Self.at(0.1)))
        #expect(outcomes?.map(\.alert) == [true, false])

        var notReady = Self.machine([Self.apns(1, notify: true)], batch: batch, readyAlerts: false)
        #expect(notReady.next(.started, at: Self.at(0)).sends.first?.pushes == [Machine.Push(position: 0, readyAlert: false)])
    }

    @Test(
        "an unreachable provider holds the sends, and is shown paused since the batch heard so; then the rest takes a slot a silence limit after its return"
    )
    func unreachable() {
        var machine = Self.machine((1...3).map { Self.apns($0) })
        _ = machine.next(.reachability(.apns, unreachable: true, silenceLimit: 2), at: Self.at(-1))
        var decision = machine.next(.started, at: Self.at(0))
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .wait(until: Self.t0.addingTimeInterval(0.05)), "it looks again soon")
        decision = machine.next(.tick, at: Self.at(5))
        #expect(decision.sends.isEmpty, "still away: still held")
        _ = machine.next(.reachability(.apns, unreachable: true, silenceLimit: 2), at: Self.at(6))
        #expect(machine.pausedProviders == [.apns: Self.t0.addingTimeInterval(-1)], "a hold is shown as a pause, since it began")
        decision = machine.next(.reachability(.apns, unreachable: false, silenceLimit: 2), at: Self.at(12))
        #expect(machine.pausedProviders.isEmpty)
        #expect(decision.action == .claimSlot(from: 0, remaining: 3, notBefore: Self.t0.addingTimeInterval(14)))
    }

    static func unavailable(_ positions: [Int]) -> Machine.Event {
        .answered(
            positions.map {
                Machine.Answer(
                    position: $0,
                    result: .rejected(reason: "ServiceUnavailable", deactivates: nil),
                    providerUnavailable: true,
                    generation: 1
                )
            }
        )
    }

    @Test(
        "a provider answering 503 is paused, not recorded: nothing more goes to it but one probe at a time, backing off; the first other answer ends the pause and the rest takes a new slot"
    )
    func providerOutageIsAPause() {
        var machine = Self.machine((1...4).map { Self.apns($0) })
        _ = machine.next(.started, at: Self.at(-0.1))
        #expect(Self.positions(machine.next(.tick, at: Self.at(0))) == [0])
        #expect(Self.positions(machine.next(.tick, at: Self.at(0.1))) == [1])
        var decision = machine.next(Self.unavailable([0]), at: Self.at(0.15))
        #expect(machine.pausedProviders == [.apns: Self.t0.addingTimeInterval(0.15)], "paused since its first transient answer")
        decision = machine.next(.tick, at: Self.at(0.2))
        #expect(decision.sends.isEmpty, "paused: the next target is deferred, not sent")
        decision = machine.next(.tick, at: Self.at(0.3))
        #expect(decision.sends.isEmpty)
        decision = machine.next(Self.unavailable([1]), at: Self.at(0.35))
        #expect(decision.action == .wait(until: Self.t0.addingTimeInterval(1.15)), "the next probe one second after the pause began")
        #expect(Self.recorded(decision) == nil && Self.givenBack(decision) == nil, "a transient answer is nobody's outcome")
        decision = machine.next(.tick, at: Self.at(1.15))
        #expect(decision.action == .claimSlot(from: 0, remaining: 4, notBefore: nil), "the probe goes in a slot of the plan, not on top of it")
        // Ticks at the slot's instants as the machine computes them (the slot's start plus n / rate).
        func inSlot(_ start: Date, _ n: Int) -> Moment { Moment(start.addingTimeInterval(Double(n) / 10)) }
        let first = Self.t0.addingTimeInterval(1.2)
        decision = machine.next(.slotClaimed(first), at: Self.at(1.16))
        #expect(Self.positions(machine.next(.tick, at: inSlot(first, 0))) == [0], "the first due is the probe")
        #expect(machine.next(.tick, at: inSlot(first, 1)).sends.isEmpty, "one probe at a time: the rest is deferred again")
        #expect(machine.next(.tick, at: inSlot(first, 2)).sends.isEmpty)
        #expect(machine.next(.tick, at: inSlot(first, 3)).sends.isEmpty)
        decision = machine.next(Self.unavailable([0]), at: Self.at(1.55))
        #expect(decision.action == .wait(until: Self.t0.addingTimeInterval(3.55)), "a failed probe doubles the wait")
        decision = machine.next(.tick, at: Self.at(3.55))
        #expect(decision.action == .claimSlot(from: 0, remaining: 4, notBefore: nil))
        let second = Self.t0.addingTimeInterval(3.6)
        decision = machine.next(.slotClaimed(second), at: Self.at(3.56))
        #expect(Self.positions(machine.next(.tick, at: inSlot(second, 0))) == [0])
        decision = machine.next(Self.accepted([0]), at: Self.at(3.65))
        #expect(machine.pausedProviders.isEmpty, "the provider answered: the pause is over")
        #expect(decision.action == .wait(until: inSlot(second, 1).now), "the rest goes on at the plan's rate in the slot")
        #expect(Self.positions(machine.next(.tick, at: inSlot(second, 1))) == [1])
        #expect(Self.positions(machine.next(.tick, at: inSlot(second, 2))) == [2])
        #expect(Self.positions(machine.next(.tick, at: inSlot(second, 3))) == [3])
        decision = machine.next(Self.accepted([1, 2, 3]), at: Self.at(4))
        #expect(Self.recorded(decision)?.map(\.result) == [.accepted, .accepted, .accepted, .accepted])
    }

    @Test("a few transient answers among accepted ones pause nothing: they are sent again in a later slot at the plan's rate")
    func transientAnswersWithoutAPause() {
        var machine = Self.machine((1...3).map { Self.apns($0) }, pauseAfter: 10)
        _ = machine.next(.started, at: Self.at(-0.1))
        #expect(Self.positions(machine.next(.tick, at: Self.at(0))) == [0])
        _ = machine.next(Self.unavailable([0]), at: Self.at(0.05))
        #expect(machine.pausedProviders.isEmpty, "one 429 or 503 is not an outage")
        #expect(Self.positions(machine.next(.tick, at: Self.at(0.1))) == [1])
        #expect(Self.positions(machine.next(.tick, at: Self.at(0.2))) == [2])
        let decision = machine.next(Self.accepted([1, 2]), at: Self.at(0.3))
        #expect(decision.action == .claimSlot(from: 0, remaining: 1, notBefore: nil), "sent again in a new slot, never recorded")
    }

    @Test("a provider still failing at the edition's deadline: what waited is skipped for the deadline, never recorded as the provider's answer")
    func providerOutageUntilTheDeadline() {
        let deadline = Self.t0.addingTimeInterval(10)
        var batch = Self.batch()
        batch.deadline = deadline
        var machine = Self.machine([Self.apns(1), Self.apns(2)], batch: batch)
        _ = machine.next(.started, at: Self.at(-0.1))
        _ = machine.next(.tick, at: Self.at(0))
        _ = machine.next(Self.unavailable([0]), at: Self.at(0.05))
        var now = 0.1
        var decision = machine.next(.tick, at: Self.at(now))
        for _ in 0..<500 {
            if case .claimSlot = decision.action {
                decision = machine.next(.slotClaimed(Self.t0.addingTimeInterval(now)), at: Self.at(now))
            }
            let probes = Self.positions(decision)
            #expect(probes.count <= 1, "one probe at a time")
            if !probes.isEmpty {
                now += 0.05
                decision = machine.next(Self.unavailable(probes), at: Self.at(now))
                continue
            }
            guard case .wait(let until) = decision.action, until < deadline, until != .distantFuture else { break }
            now = until.timeIntervalSince(Self.t0)
            decision = machine.next(.tick, at: Self.at(now))
        }
        #expect(decision.action == .wait(until: deadline), "the wait ends at the deadline")
        decision = machine.next(.tick, at: Moment(deadline))
        #expect(Self.recorded(decision)?.map(\.result) == [.skipped(.deadline), .skipped(.deadline)])
    }

    @Test("draining while a provider is paused: what it held back goes back to the cohort, unrecorded")
    func providerOutageThenDrain() {
        var machine = Self.machine([Self.apns(1), Self.apns(2), Self.fcm(3)])
        _ = machine.next(.started, at: Self.at(-0.1))
        _ = machine.next(.tick, at: Self.at(0))
        _ = machine.next(Self.unavailable([0]), at: Self.at(0.05))
        _ = machine.next(.tick, at: Self.at(0.1))
        #expect(Self.positions(machine.next(.tick, at: Self.at(0.2))) == [2], "FCM's device goes out: only APNs is paused")
        var decision = machine.next(Self.accepted([2]), at: Self.at(0.25))
        decision = machine.next(.drainStarted(deadline: Self.t0.addingTimeInterval(5)), at: Self.at(0.5))
        let back = Self.givenBack(decision)
        #expect(back?.recorded.map(\.result) == [.accepted])
        #expect(back?.returned == [0, 1])
    }

    @Test(
        "TopicDisallowed (the app misconfigured at the provider) is no device's outcome: the provider stops for the batch and its unanswered targets go back, the other provider's are sent"
    )
    func appMisconfiguredGivesBack() {
        var machine = Self.machine([Self.apns(1), Self.apns(2), Self.fcm(3), Self.apns(4)])
        _ = machine.next(.started, at: Self.at(-0.1))
        #expect(Self.positions(machine.next(.tick, at: Self.at(0))) == [0])
        #expect(Self.positions(machine.next(.tick, at: Self.at(0.1))) == [1])
        _ = machine.next(Self.accepted([0]), at: Self.at(0.12))
        var decision = machine.next(
            .answered([
                Machine.Answer(position: 1, result: .rejected(reason: "TopicDisallowed", deactivates: nil), appMisconfigured: true, generation: 1)
            ]),
            at: Self.at(0.15)
        )
        #expect(Self.positions(machine.next(.tick, at: Self.at(0.2))) == [2], "FCM's device still goes out")
        decision = machine.next(.tick, at: Self.at(0.3))
        #expect(decision.sends.isEmpty, "nothing more through APNs")
        decision = machine.next(Self.accepted([2]), at: Self.at(0.35))
        let back = Self.givenBack(decision)
        #expect(back?.recorded.map(\.result) == [.accepted, .accepted])
        #expect(back?.returned == [1, 3], "the device answered TopicDisallowed is not recorded: it goes back with the unsent one")
        #expect(back?.because.providers[.apns]?.code == "misconfigured")
    }

    @Test("targets the provider never received go again in later slots, then are recorded as notSent")
    func notSentRounds() {
        var machine = Self.machine([Self.apns(1), Self.apns(2)], batch: Self.batch(rate: 1000), notSentRounds: 1)
        _ = machine.next(.started, at: Self.at(0))
        var decision = machine.next(
            .answered([Machine.Answer(position: 0, result: .accepted, generation: 1), Machine.Answer(position: 1, result: .notSent, generation: 1)]),
            at: Self.at(0.5)
        )
        #expect(decision.action == .claimSlot(from: 1, remaining: 1, notBefore: nil))
        decision = machine.next(.slotClaimed(Self.t0.addingTimeInterval(1)), at: Self.at(0.6))
        decision = machine.next(.tick, at: Self.at(1))
        #expect(Self.positions(decision) == [1])
        decision = machine.next(.answered([Machine.Answer(position: 1, result: .notSent)]), at: Self.at(1.5))
        #expect(Self.recorded(decision)?.map(\.result) == [.accepted, .notSent])
    }

    @Test(
        "targets answered notSent while the provider cannot be reached spend no round: an outage longer than the patience and the rounds together is a hold, and they are accepted once it is back (FaultTests: APNs away 10 s recorded 100 devices notSent)"
    )
    func notSentWhileUnreachableIsAHold() {
        var machine = Self.machine([Self.apns(1), Self.apns(2)], batch: Self.batch(rate: 1000), notSentRounds: 1)
        #expect(Self.positions(machine.next(.started, at: Self.at(0))) == [0, 1])
        _ = machine.next(.reachability(.apns, unreachable: true, silenceLimit: 2), at: Self.at(0.01))
        var decision = machine.next(
            .answered([Machine.Answer(position: 0, result: .notSent, generation: 1), Machine.Answer(position: 1, result: .notSent, generation: 1)]),
            at: Self.at(0.01)
        )
        #expect(decision.action == .claimSlot(from: 0, remaining: 2, notBefore: nil))
        var now = 0.02
        var sendsWhileAway = 0
        // Four times the one round left: before the change, the second notSent answer was the targets' outcome.
        for _ in 0..<4 {
            decision = machine.next(.slotClaimed(Self.t0.addingTimeInterval(now)), at: Self.at(now))
            #expect(decision.sends.isEmpty, "held: the provider is still away")
            // Polled until the patience ends; then a slot a silence limit later, in which the batch tries once.
            while decision.sends.isEmpty, case .wait(let until) = decision.action {
                now = until.timeIntervalSince(Self.t0)
                decision = machine.next(.tick, at: Self.at(now))
            }
            if case .claimSlot(_, _, let notBefore?) = decision.action {
                now = notBefore.timeIntervalSince(Self.t0)
                decision = machine.next(.slotClaimed(notBefore), at: Self.at(now))
            }
            #expect(Self.positions(decision) == [0, 1], "after the patience, one try")
            sendsWhileAway += 1
            now += 0.01
            decision = machine.next(
                .answered([
                    Machine.Answer(position: 0, result: .notSent, generation: 1), Machine.Answer(position: 1, result: .notSent, generation: 1),
                ]),
                at: Self.at(now)
            )
            #expect(Self.recorded(decision) == nil, "never an outcome while the provider is away")
            guard case .claimSlot = decision.action else {
                Issue.record("expected a new slot, got \(decision.action)")
                return
            }
        }
        #expect(now > 240, "four patiences of 60 s")
        _ = machine.next(.reachability(.apns, unreachable: false, silenceLimit: 2), at: Self.at(now))
        decision = machine.next(.slotClaimed(Self.t0.addingTimeInterval(now)), at: Self.at(now))
        #expect(Self.positions(decision) == [0, 1])
        decision = machine.next(Self.accepted([0, 1]), at: Self.at(now + 0.1))
        #expect(Self.recorded(decision)?.map(\.result) == [.accepted, .accepted])
        #expect(sendsWhileAway == 4)
    }

    @Test("a provider whose credentials this worker cannot load: its targets go back, the other provider's are sent")
    func credentialsUnavailable() {
        var machine = Self.machine(
            [Self.apns(1), Self.fcm(2)],
            batch: Self.batch(rate: 1000),
            providers: [.apns: .ready(generation: 1), .fcm: .unavailable("no file")]
        )
        let decision = machine.next(.started, at: Self.at(0))
        #expect(Self.positions(decision) == [0], "the iOS device is not held back by an FCM problem")
        let given = Self.givenBack(machine.next(Self.accepted([0]), at: Self.at(0.1)))
        #expect(given?.recorded.map(\.deviceID) == [1])
        #expect(given?.returned == [1])
        #expect(given?.because == Machine.GiveBack(providers: [.fcm: .unavailable("no file")]))
    }

    @Test("credentials refused: read again before anything else; changed ones send the refused targets again")
    func credentialsRotated() {
        var machine = Self.machine((1...3).map { Self.apns($0) }, batch: Self.batch(rate: 10))
        _ = machine.next(.started, at: Self.at(0))
        _ = machine.next(.tick, at: Self.at(0.1))
        var decision = machine.next(.answered([Self.refused(0)]), at: Self.at(0.15))
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .reloadCredentials(.apns))
        decision = machine.next(.credentialsReloaded(.apns, .changed(generation: 2)), at: Self.at(0.16))
        #expect(decision.action == .wait(until: Self.t0.addingTimeInterval(0.2)))
        decision = machine.next(.tick, at: Self.at(0.2))
        #expect(Self.positions(decision) == [2])
        #expect(decision.sends.first?.generation == 2, "sent with the credentials read anew")
        decision = machine.next(Self.accepted([1], generation: 1), at: Self.at(0.3))
        decision = machine.next(Self.accepted([2], generation: 2), at: Self.at(0.3))
        #expect(decision.action == .claimSlot(from: 0, remaining: 1, notBefore: nil), "the refused target goes again, paced")
        _ = machine.next(.slotClaimed(Self.t0.addingTimeInterval(1)), at: Self.at(0.3))
        decision = machine.next(.tick, at: Self.at(1))
        #expect(Self.positions(decision) == [0])
        let outcomes = Self.recorded(machine.next(Self.accepted([0], generation: 2), at: Self.at(1.1)))
        #expect(outcomes?.map(\.result) == [.accepted, .accepted, .accepted], "no device deactivated, none lost")
    }

    @Test(
        "a 'not valid for this app' answer to the credentials before a rotation is asked again with the new ones, not held under them (the simulation's seed 6521: a wrong bundle id's answers applied after the fix)"
    )
    func notValidBeforeARotationAskedAgain() {
        var machine = Self.machine((1...3).map { Self.apns($0) }, batch: Self.batch(rate: 1000))
        _ = machine.next(.started, at: Self.at(0))
        let notValid = Machine.Answer(position: 0, result: .rejected(reason: "DeviceTokenNotForTopic", deactivates: .deferred), generation: 1)
        _ = machine.next(.answered([notValid, Self.refused(1), Self.refused(2)]), at: Self.at(0.01))
        var decision = machine.next(.credentialsReloaded(.apns, .changed(generation: 2)), at: Self.at(0.02))
        #expect(decision.action == .claimSlot(from: 0, remaining: 3, notBefore: nil), "all three go again: the answer was to the old configuration")
        _ = machine.next(.slotClaimed(Self.t0.addingTimeInterval(1)), at: Self.at(0.03))
        decision = machine.next(.tick, at: Self.at(1))
        #expect(Self.positions(decision) == [0, 1, 2])
        #expect(decision.sends.map(\.generation) == [2])
        let outcomes = Self.recorded(machine.next(Self.accepted([0, 1, 2], generation: 2), at: Self.at(1.1)))
        #expect(outcomes?.map(\.result) == [.accepted, .accepted, .accepted], "nothing held from the old configuration's answer")
    }

    @Test(
        "a refusal of a send made with the old credentials that arrives after they were read anew is sent again, not counted as a refusal of the new ones"
    )
    func refusalOfOldCredentialsAfterReload() {
        var machine = Self.machine((1...3).map { Self.apns($0) }, batch: Self.batch(rate: 1000))
        _ = machine.next(.started, at: Self.at(0))
        _ = machine.next(.answered([Self.refused(0)]), at: Self.at(0.01))
        var decision = machine.next(.credentialsReloaded(.apns, .changed(generation: 2)), at: Self.at(0.02))
        // The other two were written with generation 1 before the reload; their 403s come now.
        decision = machine.next(.answered([Self.refused(1, generation: 1), Self.refused(2, generation: 1)]), at: Self.at(0.03))
        #expect(Self.givenBack(decision) == nil, "not given back: they were refused with the old key")
        #expect(decision.action == .claimSlot(from: 0, remaining: 3, notBefore: nil))
        _ = machine.next(.slotClaimed(Self.t0.addingTimeInterval(1)), at: Self.at(0.04))
        decision = machine.next(.tick, at: Self.at(1))
        #expect(Self.positions(decision) == [0, 1, 2])
        #expect(decision.sends.map(\.generation) == [2])
        #expect(Self.recorded(machine.next(Self.accepted([0, 1, 2], generation: 2), at: Self.at(1.1)))?.count == 3)
    }

    @Test("credentials refused and unchanged: that provider stops and its targets go back, what was answered is recorded")
    func credentialsRefused() {
        var machine = Self.machine((1...3).map { Self.apns($0) })
        _ = machine.next(.started, at: Self.at(0))
        _ = machine.next(.tick, at: Self.at(0.1))
        _ = machine.next(.answered([Machine.Answer(position: 0, result: .accepted, generation: 1), Self.refused(1)]), at: Self.at(0.15))
        let decision = machine.next(.credentialsReloaded(.apns, .unchanged), at: Self.at(0.16))
        guard let given = Self.givenBack(decision), case .refused = given.because.providers[.apns] else {
            Issue.record("expected a give-back for refused credentials, got \(decision.action)")
            return
        }
        #expect(given.recorded.map(\.deviceID) == [1])
        #expect(given.returned == [1, 2])
    }

    @Test("refused again after the credentials were read anew: that provider stops, nothing more is read again")
    func refusedAgain() {
        var machine = Self.machine((1...2).map { Self.apns($0) }, batch: Self.batch(rate: 1000))
        _ = machine.next(.started, at: Self.at(0))
        _ = machine.next(.answered([Self.refused(0), Self.refused(1)]), at: Self.at(0.01))
        _ = machine.next(.credentialsReloaded(.apns, .changed(generation: 2)), at: Self.at(0.02))
        _ = machine.next(.slotClaimed(Self.t0.addingTimeInterval(0.02)), at: Self.at(0.02))
        _ = machine.next(.tick, at: Self.at(0.03))
        let decision = machine.next(.answered([Self.refused(0, generation: 2), Self.refused(1, generation: 2)]), at: Self.at(0.04))
        guard let given = Self.givenBack(decision), case .refused = given.because.providers[.apns] else {
            Issue.record("expected a give-back, got \(decision.action)")
            return
        }
        #expect(given.returned == [0, 1])
    }

    @Test("a lost lease ends the batch with nothing recorded; a cancelled broadcast skips the rest")
    func lease() {
        var lost = Self.machine((1...3).map { Self.apns($0) })
        _ = lost.next(.started, at: Self.at(0))
        #expect(lost.next(.leaseLost, at: Self.at(0.1)).action == .finish(.abandon))

        var cancelled = Self.machine((1...3).map { Self.apns($0) })
        _ = cancelled.next(.started, at: Self.at(0))
        let decision = cancelled.next(.broadcastCancelled, at: Self.at(0.1))
        #expect(decision.sends.isEmpty)
        #expect(decision.action == .wait(until: .distantFuture), "the written one is awaited")
        let outcomes = Self.recorded(cancelled.next(Self.accepted([0]), at: Self.at(0.2)))
        #expect(outcomes?.map(\.result) == [.accepted, .skipped(.cancelled), .skipped(.cancelled)])
    }

    @Test("a cancelled broadcast's written sends that come back unsent are skipped as cancelled, so sent and skipped add up to the batch")
    func cancelledNotSent() {
        var machine = Self.machine((1...3).map { Self.apns($0) }, batch: Self.batch(rate: 1000))
        _ = machine.next(.started, at: Self.at(0))
        _ = machine.next(.answered([Machine.Answer(position: 0, result: .notSent, generation: 1)]), at: Self.at(0.01))
        _ = machine.next(.broadcastCancelled, at: Self.at(0.02))
        let outcomes = Self.recorded(
            machine.next(
                .answered([
                    Machine.Answer(position: 1, result: .notSent, generation: 1), Machine.Answer(position: 2, result: .accepted, generation: 1),
                ]),
                at: Self.at(0.03)
            )
        )
        #expect(outcomes?.map(\.result) == [.skipped(.cancelled), .skipped(.cancelled), .accepted])
    }

    @Test("nothing is written under a lease that may have expired until a renewal confirms it")
    func unconfirmedLease() {
        var machine = Self.machine([Self.apns(1)], trustedUntil: Self.at(-1).monotonic)
        var decision = machine.next(.started, at: Self.at(0))
        #expect(decision == Machine.Decision(action: .confirmLease))
        decision = machine.next(.leaseRenewed(trustedUntil: Self.at(30).monotonic), at: Self.at(0.01))
        #expect(Self.positions(decision) == [0])

        var taken = Self.machine([Self.apns(1)], trustedUntil: Self.at(-1).monotonic)
        _ = taken.next(.started, at: Self.at(0))
        #expect(taken.next(.leaseLost, at: Self.at(0.01)).action == .finish(.abandon))

        var failing = Self.machine([Self.apns(1)], trustedUntil: Self.at(-1).monotonic)
        _ = failing.next(.started, at: Self.at(0))
        #expect(failing.next(.leaseConfirmFailed, at: Self.at(0.01)).action == .wait(until: Self.t0.addingTimeInterval(0.26)))
        #expect(failing.next(.tick, at: Self.at(0.26)).action == .confirmLease, "asked again after a backoff")
    }

    @Test("a slot claim that fails is tried again after a backoff, never skipped")
    func slotClaimFails() {
        var machine = Self.machine((1...2).map { Self.apns($0) })
        _ = machine.next(.started, at: Self.at(0))
        #expect(machine.next(.tick, at: Self.at(5)).action == .claimSlot(from: 1, remaining: 1, notBefore: nil))
        #expect(machine.next(.slotClaimFailed, at: Self.at(5.1)).action == .wait(until: Self.t0.addingTimeInterval(5.35)))
        #expect(machine.next(.tick, at: Self.at(5.35)).action == .claimSlot(from: 1, remaining: 1, notBefore: nil))
        #expect(machine.next(.slotClaimFailed, at: Self.at(5.4)).action == .wait(until: Self.t0.addingTimeInterval(5.9)), "twice as long")
    }

    @Test("draining: what was not written is withdrawn at once, written requests are awaited until the deadline, the rest goes back")
    func drain() {
        var machine = Self.machine((1...4).map { Self.apns($0) })
        _ = machine.next(.started, at: Self.at(0))
        _ = machine.next(.tick, at: Self.at(0.1))
        let deadline = Self.t0.addingTimeInterval(10.1)
        var decision = machine.next(.drainStarted(deadline: deadline), at: Self.at(0.15))
        #expect(decision == Machine.Decision(withdraw: true, action: .wait(until: deadline)))
        decision = machine.next(
            .answered([Machine.Answer(position: 0, result: .accepted, generation: 1), Machine.Answer(position: 1, result: .notSent, generation: 1)]),
            at: Self.at(0.3)
        )
        guard let given = Self.givenBack(decision), given.because.draining else {
            Issue.record("expected a give-back, got \(decision.action)")
            return
        }
        #expect(given.recorded.map(\.deviceID) == [1])
        #expect(given.returned == [1, 2, 3], "withdrawn before it was written, and not yet due: back to the cohort")
    }

    @Test("draining past the deadline: what was written and not answered is fate unknown, never sent again")
    func drainDeadline() {
        var machine = Self.machine((1...2).map { Self.apns($0) })
        _ = machine.next(.started, at: Self.at(0))
        let deadline = Self.t0.addingTimeInterval(10)
        _ = machine.next(.drainStarted(deadline: deadline), at: Self.at(0.05))
        let given = Self.givenBack(machine.next(.tick, at: Self.at(10)))
        #expect(given?.recorded.map(\.result) == [.fateUnknown])
        #expect(given?.returned == [1])
    }

    @Test("a skipped target goes back with the unsent ones when the batch is given back: it has no delivery, and the next holder judges it again")
    func skippedGoesBack() {
        let full = (0..<BroadcastOptions.hourlyBudget).map { Self.t0.addingTimeInterval(-600 - Double($0)) }
        var machine = Self.machine([Self.apns(1), Self.apns(2, recent: full), Self.apns(3)], batch: Self.batch(rate: 10))
        _ = machine.next(.started, at: Self.at(0))
        _ = machine.next(.tick, at: Self.at(0.1))
        _ = machine.next(.drainStarted(deadline: Self.t0.addingTimeInterval(10)), at: Self.at(0.12))
        let given = Self.givenBack(machine.next(Self.accepted([0]), at: Self.at(0.15)))
        #expect(given?.recorded.map(\.deviceID) == [1])
        #expect(given?.returned == [1, 2])
    }

    @Test("draining with everything answered records the batch: nothing to give back")
    func drainAfterAll() {
        var machine = Self.machine([Self.apns(1)])
        _ = machine.next(.started, at: Self.at(0))
        _ = machine.next(Self.accepted([0]), at: Self.at(0.1))
        #expect(machine.completion == .record([BatchOutcome(deviceID: 1, sentAt: Self.t0, result: .accepted)]))
    }

    @Test(
        "a suspected misconfiguration: the provider stops, its targets answered 'token not valid' go back unrecorded, the other provider's are recorded"
    )
    func misconfigured() {
        var machine = Self.machine([Self.apns(1), Self.apns(2), Self.fcm(3), Self.apns(4)], batch: Self.batch(rate: 1000))
        _ = machine.next(.started, at: Self.at(0))
        let invalid = BatchOutcome.Result.rejected(reason: "DeviceTokenNotForTopic", deactivates: .deferred)
        _ = machine.next(
            .answered([
                Machine.Answer(position: 0, result: invalid, generation: 1, misconfigurationHint: "the bundle id"),
                Machine.Answer(position: 2, result: .accepted, generation: 1),
            ]),
            at: Self.at(0.01)
        )
        _ = machine.next(.misconfigured(.apns, "3 of 3 said DeviceTokenNotForTopic"), at: Self.at(0.02))
        let given = Self.givenBack(
            machine.next(
                .answered([
                    Machine.Answer(position: 1, result: invalid, generation: 1, misconfigurationHint: "the bundle id"),
                    Machine.Answer(position: 3, result: invalid, generation: 1, misconfigurationHint: "the bundle id"),
                ]),
                at: Self.at(0.03)
            )
        )
        #expect(given?.recorded.map(\.deviceID) == [3], "no APNs device recorded, so none deactivated")
        #expect(given?.returned == [0, 1, 3])
        #expect(given?.because.providers[.apns] == .held("3 of 3 said DeviceTokenNotForTopic"))
    }

    @Test("a provider held when the batch starts: its targets go back before anything is sent through it")
    func heldAtStart() {
        var machine = Self.machine(
            [Self.apns(1), Self.fcm(2)],
            batch: Self.batch(rate: 1000),
            providers: [.apns: .held("hold"), .fcm: .ready(generation: 1)]
        )
        #expect(machine.next(.started, at: Self.at(0)).sends.isEmpty)
        let decision = machine.next(.tick, at: Self.at(0.001))
        #expect(decision.sends.map(\.provider) == [.fcm])
        let given = Self.givenBack(machine.next(Self.accepted([1]), at: Self.at(0.01)))
        #expect(given?.returned == [0])
    }
}
