import Foundation
import Logging
import PaperboyCore
import Synchronization

/// The one executor of a worker's machines, in production and in the simulation: each action that comes out of
/// ``WorkerMachine`` is carried out here against the worker's ``WorkerStore`` and ``WorkerTransport`` on its
/// ``BroadcastClock``, and what came of it is the machine's next event. Nothing is decided here.
///
/// What runs it decides only when: production's `Dispatcher` runs each I/O action in a task of its own and feeds the
/// events back through a stream; the simulation runs them at the instants its seed draws, on a virtual clock. Both
/// call the same functions below, with PostgreSQL and the HTTP/2 clients in one, the model store and the simulated
/// providers in the other.
public final class WorkerExecutor<Store: WorkerStore, Transport: WorkerTransport>: Sendable
where Store.App == Transport.App, Store.Edition == Transport.Edition {
    public let store: Store
    public let transport: Transport
    /// This worker's name in leases.
    public let owner: String
    public let configuration: WorkerMachine.Configuration
    public let clock: BroadcastClock
    let logger: Logger
    package let metrics: DispatchMetrics
    /// The apps and providers this worker cannot send through now, and the providers it paused.
    public let health: WorkerHealth
    /// When this worker started, and the last error it logged: what its heartbeat tells the store.
    let startedAt: Date
    let lastError = Mutex<(message: String, at: Date)?>(nil)
    package let state = Mutex(State())

    /// What the executor keeps between actions: each batch's channels, the sends it may withdraw, the store's
    /// clock's offset.
    package struct State: Sendable {
        package var batches: [Int64: BatchWays] = [:]
        /// The targets a lease read with the batch it carved, until the batch is read (``read(_:)``).
        var carved: [Int64: CarvedTargets] = [:]
        var sends: [Int64: [any SendInFlight]] = [:]
        /// The store's clock as last measured (at each lease and heartbeat), and the monotonic seconds it was read at:
        /// the worker paces on the store's clock, as every slot is claimed on it. Nil until measured, and when the
        /// store answers on the worker's clock: the worker's own clock then.
        var storeClock: (read: Date, monotonic: TimeInterval)?
        /// The draining state and batches held, as the worker's status reports them.
        var draining = false
        var held = 0
    }

    /// The targets of a batch as its lease read them: for that lease of the batch only.
    struct CarvedTargets: Sendable {
        var leases: Int
        var targets: [BatchTarget]
    }

    /// A batch's app, edition and channels, per provider, and whether each was last seen reachable.
    package struct BatchWays: Sendable {
        package var batch: LeasedBatch
        package var app: Store.App
        package var edition: Store.Edition
        package var channels: [PushProvider: any BatchChannel]
        package var targets: [BatchTarget]
        var unreachable: Set<PushProvider> = []
        var started = ContinuousClock.now
    }

    public init(
        store: Store,
        transport: Transport,
        owner: String,
        configuration: WorkerMachine.Configuration,
        clock: BroadcastClock,
        logger: Logger,
        metrics: DispatchMetrics = DispatchMetrics(),
        health: WorkerHealth = WorkerHealth()
    ) {
        self.store = store
        self.transport = transport
        self.owner = owner
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        self.health = health
        self.startedAt = clock.now()
    }

    /// The instant the worker's machines see: the store's clock (as last measured, run on by the monotonic clock),
    /// and the monotonic seconds.
    public func moment() -> Moment {
        let monotonic = clock.monotonic()
        guard let measured = state.withLock({ $0.storeClock }) else { return Moment(now: clock.now(), monotonic: monotonic) }
        return Moment(now: measured.read.addingTimeInterval(monotonic - measured.monotonic), monotonic: monotonic)
    }

    /// The store's clock minus this worker's wall clock now: where the worker's own clock sleeps until an instant of the
    /// store's.
    public var offset: TimeInterval { moment().now.timeIntervalSince(clock.now()) }

    /// One event into the machine: first the reachability of the channels where it changed (of every batch sending at a
    /// tick, of its own batch with its answers or its slot; of a batch just read, once it is sending); what the machine
    /// says of the worker is then published. - Returns: the actions to carry out.
    ///
    /// Not only at ticks: a batch whose sends were answered `notSent` because the provider went away, and whose new slot
    /// was claimed at once, would otherwise send again before any tick told it the provider cannot be reached, and
    /// spend its rounds in milliseconds (`FaultTests`, APNs away 10 s: 100 devices recorded `notSent`). And only to a
    /// batch that is sending: one still being read drops the event, and the change was lost with it (the simulation's
    /// outage seeds, devices recorded `notSent` by batches that never heard their provider was away).
    public func handle(_ event: WorkerMachine.Event, _ machine: inout WorkerMachine) -> [WorkerMachine.Action] {
        var actions: [WorkerMachine.Action] = []
        let batch: Int64?? =
            switch event {
            case .tick: .some(nil)
            case .answered(let id, _), .slotClaimed(let id, _): .some(id)
            default: nil
            }
        if let batch {
            for change in reachabilityChanges(of: batch, sending: machine.isSending) { actions += machine.handle(change, at: moment()) }
        }
        actions += machine.handle(event, at: moment())
        if case .batchRead(let id, _) = event {
            for change in reachabilityChanges(of: id, sending: machine.isSending) { actions += machine.handle(change, at: moment()) }
        }
        publish(machine)
        return actions
    }

    /// Hands a send to its channel without waiting; each group of answers goes to `deliver` as it comes. A send
    /// without a channel is answered `notSent` at once: every send ends in exactly one answer per target.
    public func startSend(_ id: Int64, _ send: BatchSendMachine.Send, deliver: @escaping @Sendable (WorkerMachine.Event) -> Void) {
        metrics.late(by: send.late)
        let found = state.withLock { state in
            state.batches[id].flatMap { ways in ways.channels[send.provider].map { (channel: $0, ways: ways) } }
        }
        guard let (channel, ways) = found else {
            deliver(.answered(id, send.pushes.map { .init(position: $0.position, result: .notSent, generation: send.generation) }))
            return
        }
        let logger = batchLogger(ways.batch)
        let started = channel.start(send.pushes, targets: ways.targets, sentAt: send.sentAt, logger: logger) { answers in
            deliver(.answered(id, answers))
        }
        state.withLock { $0.sends[id, default: []].append(started) }
    }

    /// The batch's channel through `provider` and its targets, when it has one.
    package func channel(_ id: Int64, _ provider: PushProvider) -> (any BatchChannel, [BatchTarget])? {
        state.withLock { state in state.batches[id].flatMap { ways in ways.channels[provider].map { ($0, ways.targets) } } }
    }

    /// A drain: what the batch handed over and was not written yet is answered `notSent`.
    public func withdraw(_ id: Int64) {
        for send in state.withLock({ $0.sends[id] ?? [] }) { send.withdraw() }
    }

    static func metadata(_ pause: ProviderPause) -> Logger.Metadata {
        [
            LogKey.app: "\(pause.key.appID)", LogKey.provider: "\(pause.key.provider.rawValue)",
            LogKey.environment: "\(pause.key.environment.rawValue)",
        ]
    }

    /// Keeps what the machine says of the worker where the readiness route, the status and the gauges read it.
    public func publish(_ machine: WorkerMachine) {
        health.update(machine.health.all)
        let (began, ended) = health.update(machine.providerPauses)
        for pause in began {
            logger.warning("provider unavailable: sends paused, probing", metadata: Self.metadata(pause))
        }
        for pause in ended {
            var metadata = Self.metadata(pause)
            metadata[LogKey.seconds] = "\(Int(clock.now().timeIntervalSince(pause.since)))"
            logger.notice("provider answers again: sends resume at the plan's rate", metadata: metadata)
        }
        metrics.batchesInFlight(machine.batchesHeld)
        state.withLock {
            $0.draining = machine.isDraining
            $0.held = machine.batchesHeld
        }
    }

    /// The reachability of the channels of the batches being sent (of `batch` only, when given), where it changed since
    /// the machine last took it.
    func reachabilityChanges(of batch: Int64? = nil, sending: (Int64) -> Bool) -> [WorkerMachine.Event] {
        state.withLock { state in
            var changes: [WorkerMachine.Event] = []
            for (id, ways) in state.batches where (batch == nil || batch == id) && sending(id) {
                for (provider, channel) in ways.channels {
                    let unreachable = channel.isUnreachable
                    guard unreachable != ways.unreachable.contains(provider) else { continue }
                    if unreachable { state.batches[id]?.unreachable.insert(provider) } else { state.batches[id]?.unreachable.remove(provider) }
                    changes.append(.reachability(id, provider, unreachable: unreachable, silenceLimit: channel.silenceLimit.seconds))
                }
            }
            return changes.sorted { "\($0)" < "\($1)" }
        }
    }

    /// Remembers `error` as this worker's last, for its status.
    func noteError(_ message: String, _ error: any Error) {
        noteError(message, "\(error)")
    }

    /// Remembers `message: error` as this worker's last, for its status.
    func noteError(_ message: String, _ error: String) {
        let text = "\(message): \(error)"
        lastError.withLock { $0 = (String(text.prefix(500)), clock.now()) }
    }

    /// A batch left the worker: what became of it, in the log and the metrics.
    public func ended(_ batch: LeasedBatch, _ end: WorkerMachine.BatchEnd) {
        let ways = state.withLock { state -> BatchWays? in
            state.sends[batch.id] = nil
            state.carved[batch.id] = nil
            return state.batches.removeValue(forKey: batch.id)
        }
        let logger = batchLogger(batch)
        let kind = batch.kind.rawValue
        switch end {
        case .recorded(let outcomes):
            metrics.batch(outcomes, kind: kind, result: "recorded")
            if let ways, logger.logLevel <= .debug {
                var skipped: [String: Int] = [:]
                for outcome in outcomes { if case .skipped(let reason) = outcome.result { skipped[reason.rawValue, default: 0] += 1 } }
                var metadata: Logger.Metadata = [LogKey.devices: "\(ways.targets.count)", LogKey.sendTime: "\(ways.started.duration(to: .now))"]
                if !skipped.isEmpty {
                    metadata["skipped"] = "\(skipped.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","))"
                }
                logger.debug("batch done", metadata: metadata)
            }
        case .givenBack(let recorded, let returned, let because):
            logger.notice(
                "gave a batch back to its cohort",
                metadata: [LogKey.returned: "\(returned)", LogKey.devices: "\(recorded.count)", LogKey.reason: "\(because.description)"]
            )
            metrics.batch(recorded, kind: kind, result: "givenBack")
        case .lost:
            logger.warning("lost the lease of a batch before recording it; the worker that took it over sends the rest")
            metrics.batch([], kind: kind, result: "lost")
        case .unreadable(let error):
            logger.error("could not send a batch; it is sent again when its lease expires", metadata: [LogKey.error: "\(error)"])
            noteError("could not send a batch", "\(error)")
            metrics.batch([], kind: kind, result: "failed")
        case .failed:
            metrics.batch([], kind: kind, result: "failed")
        case .unwritten(let error):
            logger.error("could not record a batch; it is sent again when its lease expires", metadata: [LogKey.error: "\(error)"])
            noteError("could not record a batch", "\(error)")
            metrics.batch([], kind: kind, result: "failed")
        }
    }

    func batchLogger(_ batch: LeasedBatch) -> Logger {
        var logger = logger
        logger[metadataKey: LogKey.broadcast] = "\(batch.broadcastID.uuidString.lowercased())"
        logger[metadataKey: LogKey.batch] = "\(batch.id)"
        logger[metadataKey: LogKey.leases] = "\(batch.leases)"
        return logger
    }
}

extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    package var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
