import Foundation
import Logging
import Metrics
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import ServiceLifecycle
import Synchronization

/// Sends the broadcasts in PostgreSQL: leases batches of cohorts, sends each device at its planned instant, records
/// the outcomes; beside it, ``BroadcastDuties`` moves broadcasts from wave to wave.
///
/// Any number of dispatchers (in `paperboy serve` and `paperboy worker` processes) share the work: a batch is leased
/// by one at a time, and every dispatcher paces against the same plan, so the rate holds in total. A dispatcher that
/// dies leaves its leased batches unrecorded; once their leases expire another takes them over and sends them again.
/// So a device may be woken twice in one wave only if it was in a batch of a dispatcher that died, and at most
/// `maxBatchesInFlight × maxBatchSize` devices are (the batches it held; in practice the devices due in the last
/// second or two at the plan's rate).
///
/// Every decision is ``WorkerMachine``'s (and each batch's ``BatchSendMachine``'s), and every action is carried out by
/// ``WorkerExecutor``, the same executor the simulation runs, here over PostgreSQL (``PostgresWorkerStore``) and the
/// HTTP/2 clients (``ProviderTransport``). This class decides only when: each I/O action runs in a task of its own and
/// its event comes back through a stream, and one timer wakes the machine when it asks. A worker that cannot send
/// through a provider for an app gives that provider's targets back and leaves them to the others for a while; the
/// broadcast fails only when no worker sends for the app (``UnsendablePolicy``). On SIGTERM it stops leasing,
/// withdraws what was not written, waits up to ``Configuration/drainTimeout`` for the answers to what it wrote, and
/// gives everything else back under the lease.
public final class Dispatcher: Service {
    public struct Configuration: Sendable {
        /// This worker's name in leases: `host:pid:random` by default.
        public var owner: String
        /// A lease holds this long unless renewed; a dead worker's batches wait this long.
        public var leaseDuration: Duration = .seconds(30)
        /// Batches are leased when their first device is due within this time: long enough to read the batch
        /// before its first instant, short enough that a held batch rarely waits.
        public var lookahead: Duration = .milliseconds(500)
        /// A batch holds the devices due in this time at the wave's rate…
        public var batchDuration: Duration = .seconds(1)
        /// …but no more than this many.
        public var maxBatchSize: Int = 1000
        /// Batches one worker holds at once (sending, or waiting for their instant, or being recorded).
        /// With ``maxBatchSize`` this bounds what a worker that dies may have sent without recording.
        public var maxBatchesInFlight: Int = 4
        /// How often the worker looks for due work when it has none.
        public var pollInterval: Duration = .milliseconds(200)
        /// How often broadcasts are moved along (waves finished and started, deadlines).
        public var advanceInterval: Duration = .seconds(1)
        /// Devices due within this time of each other are sent together.
        public var tick: Duration = .milliseconds(20)
        /// A batch found this far behind its slot takes a new one for the rest (paced catch-up). What a worker
        /// sends late within it goes out at once: at most this much of the rate on top of a second's.
        public var catchUpTolerance: Duration = .milliseconds(50)
        /// How many more times devices a provider never received (`notSent`) are sent, each in a later slot.
        public var notSentRounds: Int = 2
        /// How long a batch waits for an unreachable provider before it sends anyway (the requests then wait in
        /// the client and go out as `notSent` if it stays unreachable).
        public var unreachablePatience: Duration = .seconds(60)
        /// How long a batch's outcomes are retried while the database cannot record them (the lease is
        /// renewed meanwhile); after that the batch is left to its lease.
        public var recordPatience: Duration = .seconds(300)
        /// How long the worker waits for the database to answer one call (a lease, a batch's targets, a record, a
        /// renewal) before it gives up on it as failed; never less than ``leaseDuration``. A safeguard, in wall-clock
        /// time: PostgresNIO can leave a query on a connection the server just closed (a restart, a failover)
        /// unanswered for ever, and a worker waiting on it would hold its batch, or stop leasing, for good.
        public var databasePatience: Duration = .seconds(30)
        /// How long before a later wave's start its audience is counted: longer than the count takes (about 15 s
        /// at 1 million devices, minutes at 10 million), so that the wave starts on time.
        public var countAhead: Duration = .seconds(5 * 60)
        /// How long moving the broadcasts along may wait for the database (it counts a later wave's audience: minutes
        /// at 10 million devices), for the same reason as ``databasePatience``.
        public var advancePatience: Duration = .seconds(30 * 60)
        /// On graceful shutdown (SIGTERM), how long requests already written may take to be answered; everything
        /// not written by then goes back to the cohort (`--drain-timeout`). The worker exits within this and the time
        /// to record, well inside Kubernetes' 30 s grace period.
        public var drainTimeout: Duration = .seconds(10)
        /// After the drain's deadline, how long the last outcomes may take to be written before the worker stops
        /// without them (``WorkerMachine/Configuration/drainWriteGrace``).
        public var drainWriteGrace: Duration = .seconds(8)
        /// A running broadcast fails when no worker could send for its app through a provider this long, with
        /// problems reported (`--fail-after`; ``UnsendablePolicy``).
        public var failAfter: Duration = .seconds(300)

        public init(owner: String = Configuration.defaultOwner()) {
            self.owner = owner
        }

        /// The same worker on a clock that runs `factor` times faster than the wall clock: every duration
        /// is in the clock's time, so it is stretched to keep the same wall-clock behaviour (the demo).
        public func scaled(by factor: Double) -> Configuration {
            var scaled = self
            scaled.leaseDuration = scaled.leaseDuration * factor
            scaled.lookahead = scaled.lookahead * factor
            scaled.batchDuration = scaled.batchDuration * factor
            scaled.pollInterval = scaled.pollInterval * factor
            scaled.advanceInterval = scaled.advanceInterval * factor
            scaled.tick = scaled.tick * factor
            scaled.catchUpTolerance = scaled.catchUpTolerance * factor
            scaled.recordPatience = scaled.recordPatience * factor
            scaled.unreachablePatience = scaled.unreachablePatience * factor
            scaled.countAhead = scaled.countAhead * factor
            scaled.drainTimeout = scaled.drainTimeout * factor
            scaled.drainWriteGrace = scaled.drainWriteGrace * factor
            scaled.failAfter = scaled.failAfter * factor
            return scaled
        }

        public static func defaultOwner() -> String {
            "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UInt16.random(in: 0...UInt16.max))"
        }

        /// The worker's machine with these settings.
        var machine: WorkerMachine.Configuration {
            var machine = WorkerMachine.Configuration()
            machine.leaseDuration = leaseDuration.seconds
            machine.lookahead = lookahead.seconds
            machine.batchDuration = batchDuration.seconds
            machine.maxBatchSize = maxBatchSize
            machine.maxBatchesInFlight = maxBatchesInFlight
            machine.pollInterval = pollInterval.seconds
            machine.drainTimeout = drainTimeout.seconds
            machine.drainWriteGrace = drainWriteGrace.seconds
            machine.recordPatience = recordPatience.seconds
            machine.batch.tick = tick.seconds
            machine.batch.catchUpTolerance = catchUpTolerance.seconds
            machine.batch.unreachablePatience = unreachablePatience.seconds
            machine.batch.notSentRounds = notSentRounds
            machine.batch.reachabilityPoll = min(0.05, tick.seconds * 2.5)
            return machine
        }
    }

    /// The one executor of the worker's machines, here over PostgreSQL and the HTTP/2 clients on the system's clock.
    let executor: WorkerExecutor<PostgresWorkerStore, ProviderTransport>
    let repository: BroadcastRepository
    let configuration: Configuration
    let clock: BroadcastClock
    let logger: Logger
    var metrics: DispatchMetrics { executor.metrics }
    /// Waves, tallies, gauges, the unsendable rule, held deactivations: the per-second duties beside the sending.
    public let duties: BroadcastDuties
    /// The apps and providers this worker cannot send through now: a worker's `/health/ready` reports them.
    public var health: WorkerHealth { executor.health }
    /// I/O in flight, cancelled when the dispatcher stops.
    let tasks = Mutex(Tasks())

    struct Tasks: Sendable {
        var running: [Int: Task<Void, Never>] = [:]
        var next = 0
    }

    /// - Parameters:
    ///   - providers: the providers this worker sends through (``ProviderChannels`` of each).
    public init(
        repository: BroadcastRepository,
        editions: EditionRepository,
        providers: [any PushChannels],
        configuration: Configuration = Configuration(),
        clock: BroadcastClock = .system,
        logger: Logger
    ) {
        self.repository = repository
        self.configuration = configuration
        self.clock = clock
        var logger = logger
        logger[metadataKey: LogKey.worker] = "\(configuration.owner)"
        self.logger = logger
        let store = PostgresWorkerStore(
            repository: repository,
            editions: editions,
            patience: max(configuration.databasePatience, configuration.leaseDuration)
        )
        self.executor = WorkerExecutor(
            store: store,
            transport: ProviderTransport(providers),
            owner: configuration.owner,
            configuration: configuration.machine,
            clock: clock,
            logger: logger
        )
        self.duties = BroadcastDuties(repository: repository, configuration: configuration, clock: clock, metrics: executor.metrics, logger: logger)
    }

    /// A dispatcher that sends through APNs and, when given, FCM.
    public convenience init(
        repository: BroadcastRepository,
        editions: EditionRepository,
        channels: APNsChannels,
        fcmChannels: FCMChannels? = nil,
        configuration: Configuration = Configuration(),
        clock: BroadcastClock = .system,
        logger: Logger
    ) {
        let providers: [any PushChannels] = [channels] + (fcmChannels.map { [$0] } ?? [])
        self.init(repository: repository, editions: editions, providers: providers, configuration: configuration, clock: clock, logger: logger)
    }

    /// Sends until graceful shutdown; then drains (``Configuration/drainTimeout``): answers to what was written are
    /// awaited, everything else goes back to the cohort under the lease. Cancelled instead (the service group
    /// failed), it drains at once the same way. The per-second duties run beside it and stop with it.
    public func run() async throws {
        logger.info("dispatcher started")
        let (events, input) = AsyncStream.makeStream(of: WorkerMachine.Event.self)
        let duties = Task { await self.duties.run() }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await loop(events, input)
            } onGracefulShutdown: {
                input.yield(.drainStarted(timeout: self.configuration.drainTimeout.seconds))
            }
        } onCancel: {
            input.yield(.drainStarted(timeout: 0))
        }
        input.finish()
        duties.cancel()
        await duties.value
        for task in tasks.withLock({ Array($0.running.values) }) { task.cancel() }
        for id in executor.state.withLock({ Array($0.batches.keys) }) { executor.withdraw(id) }
        logger.info("dispatcher stopped")
    }

    /// The event loop: every event through production's ``WorkerLoop`` (the one the simulation and the stepping tests
    /// run), its I/O in tasks of their own and its timer on the system's clock (``DispatcherHands``).
    private func loop(_ events: AsyncStream<WorkerMachine.Event>, _ input: AsyncStream<WorkerMachine.Event>.Continuation) async {
        var loop = WorkerLoop(executor: executor, machine: WorkerMachine(configuration: configuration.machine))
        let hands = DispatcherHands(dispatcher: self, input: input)
        loop.handle(.started, through: hands)
        for await event in events {
            loop.handle(event, through: hands)
            if loop.machine.stopped { break }
        }
        hands.cancelTimer()
    }
}

/// Production's hands for the worker's loop: each I/O action in a task that reports its event back through the stream,
/// sends handed to the HTTP/2 clients, and one timer task sleeping on the worker's clock.
final class DispatcherHands: WorkerHands, Sendable {
    let dispatcher: Dispatcher
    let input: AsyncStream<WorkerMachine.Event>.Continuation
    private let timer = Mutex<Task<Void, Never>?>(nil)

    init(dispatcher: Dispatcher, input: AsyncStream<WorkerMachine.Event>.Continuation) {
        self.dispatcher = dispatcher
        self.input = input
    }

    func start(_ action: WorkerMachine.Action) {
        let (dispatcher, input) = (dispatcher, input)
        dispatcher.tasks.withLock { tasks in
            tasks.next += 1
            let id = tasks.next
            tasks.running[id] = Task {
                if let event = await dispatcher.executor.run(action) { input.yield(event) }
                _ = dispatcher.tasks.withLock { $0.running.removeValue(forKey: id) }
            }
        }
    }

    func send(_ id: Int64, _ send: BatchSendMachine.Send) {
        let input = input
        dispatcher.executor.startSend(id, send) { input.yield($0) }
    }

    func wake(at instant: Date) {
        let (clock, input) = (dispatcher.clock, input)
        let task = Task {
            guard (try? await clock.sleep(instant)) != nil else { return }
            input.yield(.tick)
        }
        timer.withLock { timer in
            timer?.cancel()
            timer = task
        }
    }

    func cancelTimer() {
        timer.withLock { $0?.cancel() }
    }
}
