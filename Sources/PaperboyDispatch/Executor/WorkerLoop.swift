import Foundation
import PaperboyCore

/// One worker's run loop, the same in production (`Dispatcher`), in the tests' jumping clock (`Dispatcher.step(until:)`, in PaperboyBroadcastTests)
/// and in the simulation: each event goes through the machine by the ``WorkerExecutor``; of its actions, the executor
/// carries out at once what needs no I/O (a withdrawal, a batch's end), and the loop hands the rest to its
/// ``WorkerHands``: the I/O, the sends, and the timer for the instant the machine asks to be woken at.
///
/// What differs between the three is only the hands, that is when things happen: production runs each I/O action in a
/// task of its own and sleeps on the system's clock; the stepping tests await each one before the next event and jump
/// the clock; the simulation runs them at the instants its seed draws. The decisions, and the order in which actions are
/// carried out, are this loop's.
public struct WorkerLoop<Store: WorkerStore, Transport: WorkerTransport>: Sendable
where Store.App == Transport.App, Store.Edition == Transport.Edition {
    public let executor: WorkerExecutor<Store, Transport>
    public private(set) var machine: WorkerMachine
    /// The wake-up the hands were last asked for and that has not come yet, on the worker's own clock: a later one needs
    /// no new timer. Kept on the worker's clock, not the machine's: the store's clock is measured again at every lease
    /// and heartbeat, and the same instant of the machine may then fall earlier on the worker's clock.
    public private(set) var timer: Date?

    public init(executor: WorkerExecutor<Store, Transport>, machine: WorkerMachine) {
        self.executor = executor
        self.machine = machine
    }

    /// The worker started (or, in the stepping tests, has nothing in hand yet): leases from now on.
    public var isIdle: Bool { machine.nextWake == nil && machine.batchesHeld == 0 }

    /// One event: through the machine, each action carried out or handed to `hands` in the order the machine gave them,
    /// then the timer asked for when the machine wants to be woken earlier than the timer already set (the machine's
    /// instants are the store's clock; the hands are given the worker's own clock's).
    public mutating func handle(_ event: WorkerMachine.Event, through hands: some WorkerHands) {
        if case .tick = event { timer = nil }
        for action in executor.handle(event, &machine) {
            switch action {
            case .send(let id, let send):
                hands.send(id, send)
            case .withdraw(let id):
                executor.withdraw(id)
                hands.withdrew(id)
            case .ended(let batch, let end):
                executor.ended(batch, end)
                hands.ended(batch, end)
            case .stop:
                break
            default:
                hands.start(action)
            }
        }
        guard !machine.stopped, let wake = machine.nextWake else { return }
        let local = wake.addingTimeInterval(-executor.offset)
        if let timer, timer <= local { return }
        timer = local
        hands.wake(at: local)
    }
}

/// What a ``WorkerLoop`` acts through: when its I/O runs, its sends go out and its timer fires. Every event these bring
/// about goes back into the loop's ``WorkerLoop/handle(_:through:)``.
public protocol WorkerHands {
    /// An action that reaches the store (a lease, a read, a record, a renewal…): carried out by
    /// ``WorkerExecutor/run(_:)``, whose event, if any, goes back into the loop.
    func start(_ action: WorkerMachine.Action)
    /// A send for a batch: handed to its providers (``WorkerExecutor/startSend(_:_:deliver:)``), its answers going back
    /// into the loop as they come.
    func send(_ id: Int64, _ send: BatchSendMachine.Send)
    /// The machine asks to be woken at `instant` of the worker's own clock: a `.tick` then. Replaces any timer set
    /// before.
    func wake(at instant: Date)
    /// A batch ended and the executor let it go (its channels and sends); for the caller's own records.
    func ended(_ batch: LeasedBatch, _ end: WorkerMachine.BatchEnd)
    /// A batch's sends not written yet were withdrawn; for the caller's own records.
    func withdrew(_ id: Int64)
}

extension WorkerHands {
    public func ended(_ batch: LeasedBatch, _ end: WorkerMachine.BatchEnd) {}
    public func withdrew(_ id: Int64) {}
}
