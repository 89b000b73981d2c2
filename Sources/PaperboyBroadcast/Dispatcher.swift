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
/// Every decision is ``WorkerMachine``'s (and each batch's ``BatchSendMachine``'s): this class is its executor. Each
/// event goes into the machine, and each action comes out to one small function that does the I/O and reports what
/// came of it as the next event (`Dispatcher+Actions.swift`); nothing is decided here. A worker that cannot send
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

    /// What one ``step(until:)`` did, for tests.
    public struct StepReport: Sendable, Equatable {
        public var events: [BroadcastEvent] = []
        public var batches = 0
        public var sent = 0
        public var skipped = 0
    }

    let repository: BroadcastRepository
    let editions: EditionRepository
    let apps: AppRepository
    let holds: ProviderHoldRepository
    let senders: SenderStatusRepository
    let workers: WorkerRepository
    /// The providers this worker sends through: one entry each, whatever they are.
    let providers: [PushProvider: any PushChannels]
    let configuration: Configuration
    let clock: BroadcastClock
    let logger: Logger
    let metrics = DispatchMetrics()
    /// Waves, tallies, gauges, the unsendable rule, held deactivations: the per-second duties beside the sending.
    public let duties: BroadcastDuties
    /// The apps and providers this worker cannot send through now: a worker's `/health/ready` reports them.
    public let health = WorkerHealth()
    /// When this dispatcher started, and the last error it logged: what its heartbeat tells the `workers` table.
    let startedAt: Date
    let lastError = Mutex<(message: String, at: Date)?>(nil)
    let state = Mutex(ExecutorState())
    /// The machine of ``step(until:)``, kept from one call to the next.
    let stepping = Mutex<WorkerMachine?>(nil)

    /// What the executor keeps between actions: each batch's channels, the sends it may withdraw, the database
    /// clock's offset.
    struct ExecutorState: Sendable {
        var batches: [Int64: BatchWays] = [:]
        /// The targets a lease read with the batch it carved, until the batch is read (``read(_:)``).
        var carved: [Int64: CarvedTargets] = [:]
        var sends: [Int64: [Int: Task<Void, Never>]] = [:]
        var nextSend = 0
        /// The database's clock minus this worker's: the worker paces on the database's clock, as every slot is claimed
        /// on it (measured at each heartbeat; zero on a test's clock).
        var offset: TimeInterval = 0
        /// I/O in flight, cancelled when the dispatcher stops.
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextTask = 0
        /// The draining state reported in the worker's status.
        var draining = false
        var held = 0
    }

    /// The targets of a batch as its lease read them: for that lease of the batch only.
    struct CarvedTargets: Sendable {
        var leases: Int
        var targets: [BatchTarget]
    }

    /// A batch's app and channels, per provider, and whether each was last seen reachable.
    struct BatchWays: Sendable {
        var batch: LeasedBatch
        var app: App
        var edition: Edition
        var channels: [PushProvider: any BatchChannel]
        var targets: [BatchTarget]
        var unreachable: Set<PushProvider> = []
        var started = ContinuousClock.now
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
        self.editions = editions
        self.apps = AppRepository(client: repository.client)
        self.holds = ProviderHoldRepository(client: repository.client)
        self.senders = SenderStatusRepository(client: repository.client)
        self.workers = WorkerRepository(client: repository.client)
        self.providers = Dictionary(providers.map { ($0.provider, $0) }, uniquingKeysWith: { first, _ in first })
        self.configuration = configuration
        self.clock = clock
        var logger = logger
        logger[metadataKey: LogKey.worker] = "\(configuration.owner)"
        self.logger = logger
        self.startedAt = clock.now()
        self.duties = BroadcastDuties(repository: repository, configuration: configuration, clock: clock, metrics: metrics, logger: logger)
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

    /// The instant the worker's machines see: the database's clock (as measured), and the monotonic seconds.
    func moment() -> Moment {
        Moment(now: clock.now().addingTimeInterval(state.withLock { $0.offset }), monotonic: clock.monotonic())
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
        for task in state.withLock({ Array($0.tasks.values) + $0.sends.values.flatMap(\.values) }) { task.cancel() }
        logger.info("dispatcher stopped")
    }

    /// The event loop: every event through the machine, every action to its function, one timer for the instant the
    /// machine asked to be woken at.
    private func loop(_ events: AsyncStream<WorkerMachine.Event>, _ input: AsyncStream<WorkerMachine.Event>.Continuation) async {
        var machine = WorkerMachine(configuration: configuration.machine)
        var timer: (at: Date, task: Task<Void, Never>)?
        func handle(_ event: WorkerMachine.Event) {
            if case .tick = event {
                timer = nil
                for change in reachabilityChanges() { perform(machine.handle(change, at: moment()), input) }
            }
            perform(machine.handle(event, at: moment()), input)
            publish(machine)
            guard !machine.stopped, let wake = machine.nextWake else { return }
            if let timer, timer.at <= wake { return }
            timer?.task.cancel()
            // The machine's instants are the database's clock; the worker's own clock sleeps.
            let local = wake.addingTimeInterval(-state.withLock { $0.offset })
            timer = (
                wake,
                Task { [clock] in
                    guard (try? await clock.sleep(local)) != nil else { return }
                    input.yield(.tick)
                }
            )
        }
        handle(.started)
        for await event in events {
            handle(event)
            if machine.stopped { break }
        }
        timer?.task.cancel()
    }

    /// Carries the actions out: the quick ones here, the I/O in tasks that report back as events.
    func perform(_ actions: [WorkerMachine.Action], _ input: AsyncStream<WorkerMachine.Event>.Continuation) {
        for action in actions {
            switch action {
            case .send(let id, let send):
                startSend(id, send, input)
            case .withdraw(let id):
                for task in state.withLock({ Array(($0.sends[id] ?? [:]).values) }) { task.cancel() }
            case .ended(let batch, let end):
                ended(batch, end)
            case .stop:
                break
            default:
                spawnIO(action, input)
            }
        }
    }

    static func metadata(_ pause: ProviderPause) -> Logger.Metadata {
        [
            LogKey.app: "\(pause.key.appID)", LogKey.provider: "\(pause.key.provider.rawValue)",
            LogKey.environment: "\(pause.key.environment.rawValue)",
        ]
    }

    /// Keeps what the machine says of the worker where the readiness route and the gauges read it.
    func publish(_ machine: WorkerMachine) {
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

    /// The reachability of the channels of the batches being sent, where it changed since last seen.
    func reachabilityChanges() -> [WorkerMachine.Event] {
        state.withLock { state in
            var changes: [WorkerMachine.Event] = []
            for (id, ways) in state.batches {
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
        let text = "\(message): \(error)"
        lastError.withLock { $0 = (String(text.prefix(500)), clock.now()) }
    }
}

/// The apps and providers a worker cannot send through now, as its machine last said: for the worker's readiness
/// and `paperboy_worker_unable_to_send`.
public final class WorkerHealth: Sendable {
    private let current = Mutex<[SenderHealth.Problem]>([])
    private let paused = Mutex<[ProviderPause]>([])

    public init() {}

    /// Why this worker cannot send some pushes, one line per app and provider; empty when it can.
    public var problems: [String] {
        current.withLock { $0 }.map { "app \($0.appID) \($0.provider.displayName): \($0.reason)" }
    }

    func update(_ problems: [SenderHealth.Problem]) {
        let gone = current.withLock { current -> [SenderHealth.Problem] in
            defer { current = problems }
            return current.filter { old in !problems.contains { $0.appID == old.appID && $0.provider == old.provider && $0.code == old.code } }
        }
        for problem in gone { Self.gauge(problem).record(0) }
        for problem in problems { Self.gauge(problem).record(1) }
    }

    /// The providers this worker's batches found busy or failing (`paperboy_provider_unavailable_since_seconds`, the
    /// pause's start in Unix seconds while it lasts), as its status stores them (`workers.pauses`).
    public var pauses: [ProviderPause] {
        paused.withLock { $0 }
    }

    /// - Returns: the pauses that began and those that ended since the last update.
    func update(_ pauses: [ProviderPause]) -> (began: [ProviderPause], ended: [ProviderPause]) {
        let (began, ended) = paused.withLock { current -> ([ProviderPause], [ProviderPause]) in
            defer { current = pauses }
            return (
                pauses.filter { new in !current.contains { $0.key == new.key } },
                current.filter { old in !pauses.contains { $0.key == old.key } }
            )
        }
        // The value is the pause's start, which does not change while it lasts: recorded once, not at every step.
        for pause in ended { Self.gauge(pause).destroy() }
        for pause in began { Self.gauge(pause).record(pause.since.timeIntervalSince1970) }
        return (began, ended)
    }

    private static func gauge(_ pause: ProviderPause) -> Gauge {
        Gauge(
            label: "paperboy_provider_unavailable_since_seconds",
            dimensions: [
                ("app", "\(pause.key.appID)"), ("environment", pause.key.environment.rawValue), ("provider", pause.key.provider.rawValue),
            ]
        )
    }

    private static func gauge(_ problem: SenderHealth.Problem) -> Gauge {
        Gauge(
            label: "paperboy_worker_unable_to_send",
            dimensions: [("app", "\(problem.appID)"), ("provider", problem.provider.rawValue), ("reason", problem.code)]
        )
    }
}

extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
