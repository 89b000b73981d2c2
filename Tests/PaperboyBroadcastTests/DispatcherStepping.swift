import Foundation
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import Synchronization

@testable import PaperboyBroadcast

/// What one ``Dispatcher/step(until:)`` did.
struct StepReport: Sendable, Equatable {
    var events: [BroadcastEvent] = []
    var batches = 0
    var sent = 0
    var skipped = 0
}

/// The loop of each dispatcher's ``Dispatcher/step(until:)``, kept from one call to the next (found by the
/// dispatcher itself: an address reused by a later dispatcher finds nothing).
private let steppingLoops = Mutex<[ObjectIdentifier: SteppingLoop]>([:])

private struct SteppingLoop: @unchecked Sendable {
    weak var dispatcher: Dispatcher?
    var loop: WorkerLoop<PostgresWorkerStore, ProviderTransport>
}

/// The worker on a clock that jumps, for tests: production's ``WorkerLoop`` (the machine, the executor, the order of the
/// actions), with hands that carry each action out one at a time (a send's answers are awaited before the next event),
/// and the clock jumped to the next instant the machine or a due batch asks for in between, so that waves an hour apart
/// run in no time. Test code only: production's `Dispatcher` runs the same loop with hands that start each I/O action
/// in a task of its own and a timer on the system's clock.
extension Dispatcher {
    /// From the clock's now until `end`: moves broadcasts along (``BroadcastDuties``), leases and sends every batch as
    /// it comes due (each device at its instant according to the clock), and jumps the clock to the next due batch,
    /// wake or expiring lease in between; batches taken before `end` are finished. Tests call this with a clock whose
    /// `sleep` sets it to the instant. The loop (the machine's health included) carries over from one call to the next.
    func step(until end: Date) async throws -> StepReport {
        var report = StepReport()
        let key = ObjectIdentifier(self)
        let kept = steppingLoops.withLock { loops in loops.removeValue(forKey: key).flatMap { $0.dispatcher === self ? $0.loop : nil } }
        var loop = kept ?? WorkerLoop(executor: executor, machine: WorkerMachine(configuration: configuration.machine))
        var queue: [WorkerMachine.Event] = []
        if loop.isIdle { queue.append(.started) }
        var lastDuties: Date?
        var stall = StallWatch(from: clock.now())
        while true {
            try Task.checkCancellation()
            let now = clock.now()
            let machine = loop.machine
            try stall.check(
                now: now,
                sent: report.sent + report.skipped,
                state:
                    "\(machine.batchesHeld) batches held, next wake \(machine.nextWake.map { "\($0.timeIntervalSince(now)) s from now" } ?? "none")"
            )
            if lastDuties.map({ now.timeIntervalSince($0) >= configuration.advanceInterval.seconds }) ?? true || machine.batchesHeld == 0 {
                report.events += await duties.once(now: now)
                lastDuties = now
            }
            if queue.isEmpty { queue.append(.tick) }
            while !queue.isEmpty {
                let hands = SteppingHands()
                loop.handle(queue.removeFirst(), through: hands)
                queue += await carryOut(hands.work, until: end, &report)
            }
            let past = clock.now() >= end
            if past && loop.machine.batchesHeld == 0 { break }
            var wake: Date
            if loop.machine.batchesHeld > 0 {
                guard let next = loop.machine.nextWake else { break }
                wake = next
            } else {
                let due = try await repository.nextDue(
                    now: clock.now(),
                    lookahead: configuration.lookahead.seconds,
                    takeOverGrace: configuration.machine.takeOverGrace,
                    logger: logger
                )
                wake = max(clock.now(), due ?? end)
                if wake <= clock.now(), let retry = loop.machine.health.nextRetry(now: clock.monotonic()) {
                    // Work is due, but of an app this worker leaves to others for now: on when it tries again.
                    wake = clock.now().addingTimeInterval(retry - clock.monotonic())
                } else if wake <= clock.now(), let next = loop.machine.nextWake, next > clock.now() {
                    // Work is due that the last lease did not take (an expired lease, which a worker that has just
                    // listened to the database for less than the takeover grace leaves alone): on at its next poll.
                    wake = next
                }
                wake = min(end, wake)
            }
            // A moment past the instant: an expiring lease can be taken over only after it.
            try await clock.sleep(max(clock.now(), wake.addingTimeInterval(0.001)))
        }
        steppingLoops.withLock { $0[key] = SteppingLoop(dispatcher: self, loop: loop) }
        return report
    }

    /// What the loop handed over, one at a time; returns the events they reported. Past `end`, nothing more is leased.
    private func carryOut(_ work: [SteppingHands.Work], until end: Date, _ report: inout StepReport) async -> [WorkerMachine.Event] {
        var events: [WorkerMachine.Event] = []
        for item in work {
            switch item {
            case .send(let id, let send):
                let answers = Answers()
                guard let (channel, targets) = executor.channel(id, send.provider) else {
                    events.append(.answered(id, send.pushes.map { .init(position: $0.position, result: .notSent, generation: send.generation) }))
                    continue
                }
                await channel.send(send.pushes, targets: targets, sentAt: send.sentAt, logger: logger) { answers.add($0) }
                events.append(.answered(id, answers.all))
            case .ended(let end):
                let outcomes: [BatchOutcome] =
                    switch end {
                    case .recorded(let outcomes): outcomes
                    case .givenBack(let recorded, _, _): recorded
                    default: []
                    }
                for outcome in outcomes {
                    if outcome.isSkip { report.skipped += 1 } else { report.sent += 1 }
                }
            case .io(.lease) where clock.now() > end:
                events.append(.leased(nil))
            case .io(let action):
                if let event = await executor.run(action) {
                    if case .leased(.some) = event { report.batches += 1 }
                    events.append(event)
                }
            }
        }
        return events
    }
}

/// The stepping tests' hands: what the loop hands over is kept, in order, and carried out one at a time after the
/// event (``Dispatcher/step(until:)``); the clock is jumped to the machine's next wake there, so no timer is set.
private final class SteppingHands: WorkerHands, @unchecked Sendable {
    enum Work {
        case io(WorkerMachine.Action)
        case send(Int64, BatchSendMachine.Send)
        case ended(WorkerMachine.BatchEnd)
    }

    /// Touched only by the stepping task, while it handles one event.
    private(set) var work: [Work] = []

    func start(_ action: WorkerMachine.Action) { work.append(.io(action)) }
    func send(_ id: Int64, _ send: BatchSendMachine.Send) { work.append(.send(id, send)) }
    func wake(at instant: Date) {}
    func ended(_ batch: LeasedBatch, _ end: WorkerMachine.BatchEnd) { work.append(.ended(end)) }
}

/// Stepping that has stopped moving: many rounds in which the clock moved less than a second and nothing was sent or
/// skipped. A round costs several statements, so a loop stuck on an instant that never passes (a batch the machine
/// holds and wakes for at once) would otherwise creep forward a millisecond a round, for hours of real time: it is
/// thrown as an error that says where it stood.
struct StallWatch {
    static let rounds = 2_000
    private var since: Date
    private var sent = 0
    private var count = 0

    init(from start: Date) {
        since = start
    }

    mutating func check(now: Date, sent: Int, state: @autoclosure () -> String) throws {
        if now.timeIntervalSince(since) >= 1 || sent != self.sent {
            (since, self.sent, count) = (now, sent, 0)
            return
        }
        count += 1
        if count >= Self.rounds { throw SteppingStalled(rounds: count, at: now, state: state()) }
    }
}

/// ``Dispatcher/step(until:)`` went round ``StallWatch/rounds`` times without the clock moving a second or a device
/// being sent.
struct SteppingStalled: Error, CustomStringConvertible {
    var rounds: Int
    var at: Date
    var state: String

    var description: String {
        "stepping stalled: \(rounds) rounds at \(at.formatted(.iso8601)) moved the clock less than a second and sent nothing; \(state)"
    }
}

/// A send's answers gathered while it is awaited.
private final class Answers: Sendable {
    private let gathered = Mutex<[BatchSendMachine.Answer]>([])
    func add(_ answers: [BatchSendMachine.Answer]) { gathered.withLock { $0 += answers } }
    var all: [BatchSendMachine.Answer] { gathered.withLock { $0 } }
}
