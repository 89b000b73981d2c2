import APNs
import FCM
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Sends the broadcasts in PostgreSQL: leases batches of cohorts, sends each device at its planned
/// instant, records the outcomes, and moves broadcasts from wave to wave.
///
/// Any number of dispatchers (in `paperboy serve` and `paperboy worker` processes) share the work: a batch
/// is leased by one at a time, and every dispatcher paces against the same plan, so the rate holds in
/// total. A dispatcher that dies leaves its leased batches unrecorded; once their leases expire another
/// takes them over and sends them again. So a device may be woken twice in one wave only if it was in a
/// batch of a dispatcher that died, and at most `maxBatchesInFlight × maxBatchSize` devices are (the
/// batches it held; in practice the devices due in the last second or two at the plan's rate).
///
/// A batch's decisions (pacing, skips, waiting out a provider, credentials, draining, what goes back to the
/// cohort) are ``BatchSendMachine``'s; the dispatcher reads and writes the database and hands pushes to the
/// providers (``PushService``) as it says. A worker that cannot send for an app (its credentials cannot be loaded
/// here, or the provider refuses them) gives the batch back and leaves the app to the others for a while
/// (``SenderHealth``); the broadcast fails only when no worker sends for the app (``UnsendablePolicy``). On
/// SIGTERM it stops leasing, waits up to ``Configuration/drainTimeout`` for the answers to what it wrote, and gives
/// everything else back under the lease.
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
        /// How many more times devices APNs never received (`notSent`) are sent, each in a later slot.
        public var notSentRounds: Int = 2
        /// How long a batch waits for an unreachable APNs before it sends anyway (the requests then wait in
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
            scaled.failAfter = scaled.failAfter * factor
            return scaled
        }

        public static func defaultOwner() -> String {
            "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UInt16.random(in: 0...UInt16.max))"
        }
    }

    /// What one ``step(until:)`` did, for tests.
    public struct StepReport: Sendable, Equatable {
        public var events: [BroadcastEvent] = []
        public var batches = 0
        public var sent = 0
        public var skipped = 0
    }

    private let repository: BroadcastRepository
    private let advancer: WaveAdvancer
    private let editions: EditionRepository
    private let apps: AppRepository
    private let senders: SenderStatusRepository
    private let workers: WorkerRepository
    /// When this dispatcher started, and the last error it logged: what its heartbeat tells the `workers` table.
    private let startedAt: Date
    private let lastError = Mutex<(message: String, at: Date)?>(nil)
    private let channels: APNsChannels
    private let fcmChannels: FCMChannels?
    private let configuration: Configuration
    private let clock: BroadcastClock
    private let logger: Logger
    /// The batches this worker holds, with whether their lease was lost or their broadcast cancelled (then
    /// their sending stops).
    private let held = Mutex<[Int64: HeldBatch]>([:])
    /// Set when the worker drains: the instant by which written requests must be answered.
    private let drainDeadline = Mutex<Date?>(nil)
    private let metrics = DispatchMetrics()
    /// The apps this worker cannot send for now: `/health/ready` reports them.
    public let health = SenderHealth()

    public init(
        repository: BroadcastRepository,
        editions: EditionRepository,
        channels: APNsChannels,
        fcmChannels: FCMChannels? = nil,
        configuration: Configuration = Configuration(),
        clock: BroadcastClock = .system,
        logger: Logger
    ) {
        self.repository = repository
        self.advancer = WaveAdvancer(
            repository: repository,
            countAhead: configuration.countAhead.seconds,
            owner: configuration.owner,
            claimSeconds: min(configuration.advancePatience, .seconds(600)).seconds
        )
        self.editions = editions
        self.apps = AppRepository(client: repository.client)
        self.senders = SenderStatusRepository(client: repository.client)
        self.workers = WorkerRepository(client: repository.client)
        self.startedAt = clock.now()
        self.channels = channels
        self.fcmChannels = fcmChannels
        self.configuration = configuration
        self.clock = clock
        var logger = logger
        logger[metadataKey: LogKey.worker] = "\(configuration.owner)"
        self.logger = logger
    }

    /// Sends until graceful shutdown; then stops leasing, and the batches it holds drain (``Configuration/drainTimeout``):
    /// answers to what was written are awaited, everything else goes back to the cohort under the lease. Cancelled
    /// instead (the service group failed), it drains at once the same way.
    public func run() async throws {
        let stopping = StopFlag()
        logger.info("dispatcher started")
        try await withGracefulShutdownHandler {
            await reportStatus()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.heartbeat(until: stopping) }
                group.addTask { await self.advance(until: stopping) }
                var inFlight = 0
                var pollPending = false
                while !stopping.isSet && !Task.isCancelled {
                    let now = clock.now()
                    var leased = false
                    if inFlight < configuration.maxBatchesInFlight {
                        do {
                            if let batch = try await lease(now: now) {
                                leased = true
                                inFlight += 1
                                metrics.batchesInFlight(inFlight)
                                // The batch runs apart from this task's cancellation: cancelled or not, it ends by
                                // recording or giving back what it holds, told to by a drain.
                                let sending = Task { await self.send(batch) }
                                group.addTask {
                                    _ = await sending.value
                                    throw BatchFinished()
                                }
                            }
                        } catch is CancellationError {
                            // Stopping: the drain below gives back what is held.
                        } catch {
                            logger.error("could not lease a batch", metadata: [LogKey.error: "\(String(reflecting: error))"])
                            noteError("could not lease a batch", error)
                        }
                    }
                    if leased { continue }
                    // Wait for a batch to finish (then lease at once) or for the poll interval.
                    if !pollPending {
                        pollPending = true
                        let poll = now.addingTimeInterval(configuration.pollInterval.seconds)
                        group.addTask {
                            // Cancelled (the service is being torn down): the loop sees it and drains.
                            try? await self.clock.sleep(poll)
                            throw PollElapsed()
                        }
                    }
                    do {
                        _ = try await group.next()
                    } catch is BatchFinished {
                        inFlight -= 1
                        metrics.batchesInFlight(inFlight)
                    } catch is PollElapsed {
                        pollPending = false
                    }
                }
                drain(timeout: stopping.isSet ? configuration.drainTimeout : .zero)
                if stopping.isSet { await reportStatus() }
                while inFlight > 0 {
                    do {
                        _ = try await group.next()
                    } catch is BatchFinished {
                        inFlight -= 1
                    } catch is PollElapsed {
                    }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            stopping.set()
        }
        logger.info("dispatcher stopped")
    }

    /// Tells every batch held to drain by `timeout` from now.
    private func drain(timeout: Duration) {
        let deadline = clock.now().addingTimeInterval(timeout.seconds)
        drainDeadline.withLock { $0 = min($0 ?? deadline, deadline) }
        let mailboxes = held.withLock { $0.values.map(\.mailbox) }
        if !mailboxes.isEmpty {
            logger.notice(
                "draining: the batches held finish what they wrote and give the rest back",
                metadata: [LogKey.batches: "\(mailboxes.count)", LogKey.deadlineIn: "\(timeout)"]
            )
        }
        for mailbox in mailboxes { mailbox.poke() }
    }

    /// The worker as it runs, on a clock that jumps: from the clock's now until `end`, moves broadcasts along,
    /// leases and sends every batch as it comes due (each device at its instant according to the clock),
    /// and jumps the clock to the next due batch (or an expiring lease) in between. Tests call this with a
    /// clock whose `sleep` sets it to the instant, to run waves an hour apart in no time.
    public func step(until end: Date) async throws -> StepReport {
        var report = StepReport()
        while true {
            let now = clock.now()
            let events = try await advancer.advance(now: now, logger: logger)
            report.events += events
            log(events)
            try await failUnsendable(now: now)
            // One batch, then the broadcasts are moved along again (as `run` does every second).
            if clock.now() <= end, let batch = try await lease(now: clock.now()) {
                let outcomes = await send(batch)
                report.batches += 1
                for outcome in outcomes {
                    if case .skipped = outcome.result { report.skipped += 1 } else { report.sent += 1 }
                }
                continue
            }
            guard clock.now() < end else { return report }
            let next = try await repository.nextDue(now: clock.now(), logger: logger).map { $0.addingTimeInterval(-configuration.lookahead.seconds) }
            var wake = max(clock.now(), next ?? end)
            if wake <= clock.now(), let retry = health.nextRetry(now: clock.monotonic()) {
                // Work is due, but of an app this worker leaves to others for now: on when it tries again.
                wake = clock.now().addingTimeInterval(retry - clock.monotonic())
            }
            // A moment past the instant: an expiring lease can be taken over only after it.
            try await clock.sleep(min(end, wake.addingTimeInterval(0.001)))
        }
    }

    private func lease(now: Date) async throws -> LeasedBatch? {
        let excluding = held.withLock { Array($0.keys) }
        let excludedApps = health.excludedApps(now: clock.monotonic())
        let leasedAt = clock.monotonic()
        let batch = try await database {
            try await self.repository.lease(
                owner: self.configuration.owner,
                now: now,
                lookahead: self.configuration.lookahead.seconds,
                duration: self.configuration.leaseDuration.seconds,
                batchDuration: self.configuration.batchDuration.seconds,
                maxBatchSize: self.configuration.maxBatchSize,
                excluding: excluding,
                excludingApps: excludedApps,
                logger: self.logger
            )
        }
        if let batch {
            held.withLock { $0[batch.id] = HeldBatch(batch: batch, trustedUntil: leasedAt + configuration.leaseDuration.seconds) }
        }
        return batch
    }

    /// Moves the broadcasts along every ``Configuration/advanceInterval``, beside the sending: counting a
    /// later wave's audience takes seconds at millions of devices, and other broadcasts' batches must not
    /// wait for it. Fails the broadcasts that no worker can send (``UnsendablePolicy``).
    private func advance(until stopping: StopFlag) async {
        while !stopping.isSet && !Task.isCancelled {
            let now = clock.now()
            do {
                log(try await answered(within: configuration.advancePatience) { try await self.advancer.advance(now: now, logger: self.logger) })
                try await database { try await self.failUnsendable(now: now) }
                let since = now.addingTimeInterval(-DispatchMetrics.endedShownFor)
                metrics.tick(
                    now: now,
                    broadcasts: try await database { try await self.repository.gauges(now: now, endedSince: since, logger: self.logger) }
                )
                try await answered(within: configuration.advancePatience) {
                    try await ReceiptTallier(client: self.repository.client).run(now: now, logger: self.logger)
                }
            } catch is CancellationError {
                return
            } catch {
                logger.error("could not advance broadcasts", metadata: [LogKey.error: "\(String(reflecting: error))"])
                noteError("could not advance broadcasts", error)
            }
            do {
                try await clock.sleep(now.addingTimeInterval(configuration.advanceInterval.seconds))
            } catch {
                return
            }
        }
    }

    /// Ends as failed the running broadcasts whose app no worker could send for through a provider for
    /// ``Configuration/failAfter``, with the workers' reasons.
    private func failUnsendable(now: Date) async throws {
        let candidates = try await senders.givenBackBroadcasts(logger: logger)
        guard !candidates.isEmpty else { return }
        let rules = UnsendablePolicy.Configuration(failAfter: configuration.failAfter.seconds)
        for failure in UnsendablePolicy.failures(candidates, now: now, configuration: rules) {
            let broadcast = failure.broadcastID.uuidString.lowercased()
            if try await repository.fail(id: failure.broadcastID, reason: failure.reason, now: now, logger: logger) {
                metrics.failed(cause: "unsendable")
                logger.error(
                    "the broadcast cannot be sent by any worker; it ends as failed",
                    metadata: [LogKey.broadcast: "\(broadcast)", LogKey.provider: "\(failure.provider.rawValue)", LogKey.reason: "\(failure.reason)"]
                )
            }
        }
    }

    /// Renews the leases held, every third of a lease; tells a batch whose lease was lost or whose broadcast was
    /// cancelled at once.
    private func heartbeat(until stopping: StopFlag) async throws {
        while !Task.isCancelled {
            // Cancelled when the dispatcher stops: an ordinary end, not an error to report.
            do {
                try await clock.sleep(clock.now().addingTimeInterval(configuration.leaseDuration.seconds / 3))
            } catch {
                return
            }
            let batches = held.withLock { $0.values.filter { !$0.lost }.map(\.batch) }
            do {
                try await renew(batches)
            } catch {
                logger.warning("could not renew leases", metadata: [LogKey.error: "\(String(reflecting: error))"])
            }
            await reportStatus()
        }
    }

    /// Tells the `workers` table how this worker stands (each heartbeat, and when it starts and drains); a failure
    /// is logged and left for the next heartbeat.
    private func reportStatus() async {
        let error = lastError.withLock { $0 }
        let status = WorkerStatus(
            name: configuration.owner,
            startedAt: startedAt,
            seenAt: clock.now(),
            draining: drainDeadline.withLock { $0 } != nil,
            batches: held.withLock { $0.count },
            problems: health.problems,
            lastError: error?.message,
            lastErrorAt: error?.at
        )
        do {
            try await database { try await self.workers.report(status, logger: self.logger) }
        } catch {
            logger.warning("could not report this worker's status", metadata: [LogKey.error: "\(String(reflecting: error))"])
        }
    }

    /// Remembers `error` as this worker's last, for its status.
    private func noteError(_ message: String, _ error: any Error) {
        let text = "\(message): \(error)"
        lastError.withLock { $0 = (String(text.prefix(500)), clock.now()) }
    }

    /// Renews the leases of `batches`; marks the ones lost or cancelled and pokes their batches.
    /// - Returns: the ids still held.
    @discardableResult
    private func renew(_ batches: [LeasedBatch]) async throws -> Set<Int64> {
        guard !batches.isEmpty else { return [] }
        let now = clock.now()
        let renewedAt = clock.monotonic()
        let renewal = try await database {
            try await self.repository.renew(
                batches,
                owner: self.configuration.owner,
                duration: self.configuration.leaseDuration.seconds,
                now: now,
                logger: self.logger
            )
        }
        let (lost, poked) = held.withLock { held -> ([LeasedBatch], [BatchMailbox]) in
            var poked: [BatchMailbox] = []
            for id in renewal.held {
                held[id]?.trustedUntil = renewedAt + configuration.leaseDuration.seconds
            }
            for id in renewal.stopped where held[id]?.cancelled == false {
                held[id]?.cancelled = true
                if let mailbox = held[id]?.mailbox { poked.append(mailbox) }
            }
            let lost = HeldBatch.lost(renewed: batches, still: renewal.held, held: held)
            for batch in lost {
                held[batch.id]?.lost = true
                if let mailbox = held[batch.id]?.mailbox { poked.append(mailbox) }
            }
            return (lost, poked)
        }
        for mailbox in poked { mailbox.poke() }
        if !lost.isEmpty {
            logger.warning(
                "lost the leases of batches still being sent; they stop, and their new holder sends them",
                metadata: [LogKey.batches: "\(lost.map(\.id))"]
            )
        }
        return renewal.held
    }

    // MARK: Sending a batch

    /// Sends a batch as ``BatchSendMachine`` decides and records it, or gives it back. A batch that cannot be read
    /// is left to its lease, which expires, and is sent again then.
    @discardableResult
    private func send(_ batch: LeasedBatch) async -> [BatchOutcome] {
        defer { held.withLock { _ = $0.removeValue(forKey: batch.id) } }
        var logger = logger
        logger[metadataKey: LogKey.broadcast] = "\(batch.broadcastID.uuidString.lowercased())"
        logger[metadataKey: LogKey.batch] = "\(batch.id)"
        logger[metadataKey: LogKey.leases] = "\(batch.leases)"
        do {
            let started = ContinuousClock.now
            let (now, logger) = (clock.now(), logger)
            guard let app = try await database({ try await self.apps.find(id: batch.appID, logger: logger) }) else {
                throw ChannelError(message: "app \(batch.appID) does not exist")
            }
            let targets = try await database { try await self.repository.targets(of: batch, now: now, logger: logger) }
            guard let edition = try await database({ try await self.editions.find(id: batch.editionID, logger: logger) }) else {
                throw ChannelError(message: "edition \(batch.editionID) does not exist")
            }
            var ways = try ways(for: batch, app: app, edition: edition, providers: Set(targets.map(\.provider)))
            let read = ContinuousClock.now
            var machine = BatchSendMachine(
                batch: batch,
                targets: targets,
                providers: ways.states,
                readyAlerts: ways.readyAlerts,
                configuration: BatchSendMachine.Configuration(
                    tick: configuration.tick.seconds,
                    catchUpTolerance: configuration.catchUpTolerance.seconds,
                    unreachablePatience: configuration.unreachablePatience.seconds,
                    notSentRounds: configuration.notSentRounds
                )
            )
            guard let mailbox = held.withLock({ $0[batch.id]?.mailbox }) else { return [] }
            var sending: [Task<Void, Never>] = []
            var decision = machine.next(.started, conditions(batch, ways))
            let completion: BatchSendMachine.Completion
            loop: while true {
                for send in decision.sends {
                    guard let channel = ways.channels[send.provider] else { continue }
                    metrics.late(by: send.late)
                    sending.append(
                        Task {
                            mailbox.deposit(await channel.send(send.pushes, targets: targets, sentAt: send.sentAt, logger: logger))
                        }
                    )
                }
                switch decision.action {
                case .wait(let until):
                    let deadline = drainDeadline.withLock { $0 }
                    if deadline != nil { for task in sending { task.cancel() } }
                    await mailbox.wait(until: min(until, deadline ?? until), clock: clock)
                    let answers = mailbox.take()
                    decision = machine.next(answers.isEmpty ? .woke : .answered(answers), conditions(batch, ways))
                case .waitForProvider(let provider, let until):
                    logger.warning(
                        "\(provider.displayName) is unreachable or not answering; the batch holds its sends until it is back",
                        metadata: [LogKey.provider: "\(provider.rawValue)"]
                    )
                    while ways.channels[provider]?.isUnreachable == true && clock.now() < until && conditions(batch, ways).keepsSending {
                        do {
                            try await clock.sleep(min(until, clock.now().addingTimeInterval(0.05)))
                        } catch {
                            break
                        }
                    }
                    decision = machine.next(.providerWaitEnded, conditions(batch, ways))
                case .claimSlot(let index, let remaining, let notBefore):
                    do {
                        let start = try await reclaim(batch, from: index, remaining: remaining, notBefore: notBefore, logger: logger)
                        decision = machine.next(.slotClaimed(start), conditions(batch, ways))
                    } catch {
                        // Only a drain or cancellation ends the retries: the machine then winds the batch up.
                        decision = machine.next(.woke, conditions(batch, ways, draining: true))
                    }
                case .reloadCredentials(let provider):
                    let reload = await reloadCredentials(provider, batch: batch, logger: logger)
                    if reload == .changed {
                        ways = try self.ways(for: batch, app: app, edition: edition, providers: Set(targets.map(\.provider)))
                    }
                    decision = machine.next(.credentialsReloaded(provider, reload), conditions(batch, ways))
                case .confirmLease:
                    do {
                        let still = try await renew([batch])
                        decision = machine.next(.leaseConfirmed(still.contains(batch.id)), conditions(batch, ways))
                    } catch {
                        logger.warning("could not confirm a lease; trying again", metadata: [LogKey.error: "\(String(reflecting: error))"])
                        try? await clock.sleep(clock.now().addingTimeInterval(0.25))
                        decision = machine.next(.woke, conditions(batch, ways))
                    }
                case .finish(let end):
                    completion = end
                    break loop
                }
            }
            let sentAll = ContinuousClock.now
            return await finish(batch, app: app, completion, logger: logger) {
                logger.debug(
                    "batch done",
                    metadata: [
                        LogKey.devices: "\(targets.count)", LogKey.readTime: "\(started.duration(to: read))",
                        LogKey.sendTime: "\(read.duration(to: sentAll))",
                        LogKey.recordTime: "\(sentAll.duration(to: .now))",
                    ]
                )
            }
        } catch let error as APNsNotificationError {
            await fail(batch, cause: "push", reason: "the \(batch.kind.rawValue) push cannot be built: \(error)", logger: logger)
            return []
        } catch let error as FCMMessageError {
            await fail(batch, cause: "push", reason: "the \(batch.kind.rawValue) FCM message cannot be built: \(error)", logger: logger)
            return []
        } catch let error as UnreadableRow {
            await fail(batch, cause: "data", reason: "\(error)", logger: logger)
            return []
        } catch let error as ChannelError {
            await fail(batch, cause: "data", reason: "\(error)", logger: logger)
            return []
        } catch {
            logger.error("could not send a batch; it is sent again when its lease expires", metadata: [LogKey.error: "\(String(reflecting: error))"])
            noteError("could not send a batch", error)
            metrics.batch([], kind: batch.kind.rawValue, result: "failed")
            return []
        }
    }

    /// The batch's ways out: per provider its targets use, the channel with the batch's pushes made, or why there is none.
    private struct Ways {
        var channels: [PushProvider: any BatchChannel] = [:]
        var states: [PushProvider: BatchSendMachine.ProviderState] = [:]
        var readyAlerts = false
    }

    private func ways(for batch: LeasedBatch, app: App, edition: Edition, providers: Set<PushProvider>) throws -> Ways {
        var ways = Ways()
        if providers.contains(.apns) {
            switch channels.channel(app: app, environment: batch.environment) {
            case .ready(let client):
                let pushes = try channels.service.pushes(for: edition, batch: batch, readyAlerts: batch.readyAlertsFrom != nil)
                ways.channels[.apns] = PreparedChannel(service: channels.service, client: client, app: app, pushes: pushes)
                ways.states[.apns] = .ready
                ways.readyAlerts = channels.service.hasReadyAlert(pushes)
            case .notConfigured:
                ways.states[.apns] = .notConfigured
            case .unavailable(let reason):
                ways.states[.apns] = .unavailable(reason)
            }
        }
        if providers.contains(.fcm) {
            switch fcmChannels?.channel(app: app, environment: batch.environment) ?? .notConfigured {
            case .ready(let client):
                if let fcmChannels {
                    let pushes = try fcmChannels.service.pushes(for: edition, batch: batch, readyAlerts: false)
                    ways.channels[.fcm] = PreparedChannel(service: fcmChannels.service, client: client, app: app, pushes: pushes)
                    ways.states[.fcm] = .ready
                }
            case .notConfigured:
                ways.states[.fcm] = .notConfigured
            case .unavailable(let reason):
                ways.states[.fcm] = .unavailable(reason)
            }
        }
        return ways
    }

    /// What the batch's machine sees now.
    private func conditions(_ batch: LeasedBatch, _ ways: Ways, draining: Bool = false) -> BatchSendMachine.Conditions {
        let now = clock.now()
        let entry = held.withLock { $0[batch.id] }
        let lease: BatchSendMachine.LeaseState =
            if entry?.lost ?? true {
                .lost
            } else if entry?.cancelled == true {
                .cancelled
            } else if let entry, clock.monotonic() > entry.trustedUntil {
                .unconfirmed
            } else {
                .held
            }
        let unreachable = PushProvider.allCases.first { ways.channels[$0]?.isUnreachable == true }
        let silence = ways.channels.values.map(\.silenceLimit).max() ?? .zero
        let deadline = drainDeadline.withLock { $0 } ?? (draining ? now : nil)
        return BatchSendMachine.Conditions(now: now, lease: lease, unreachable: unreachable, silenceLimit: silence.seconds, drainDeadline: deadline)
    }

    /// Reads the app's credentials for `provider` again, from the database and their file or variable.
    private func reloadCredentials(_ provider: PushProvider, batch: LeasedBatch, logger: Logger) async -> BatchSendMachine.Reload {
        let app: App?
        do {
            app = try await database { try await self.apps.find(id: batch.appID, logger: logger) }
        } catch {
            return .failed("app \(batch.appID): its credentials could not be read again: \(error)")
        }
        guard let app else { return .failed("app \(batch.appID) does not exist any more") }
        let reload: BatchSendMachine.Reload =
            switch provider {
            case .apns: channels.reload(app: app, environment: batch.environment)
            case .fcm: fcmChannels?.reload(app: app, environment: batch.environment) ?? .failed("this worker sends no FCM")
            }
        logger.warning(
            "\(provider.displayName) refused this worker's credentials; they were read again",
            metadata: [LogKey.app: "\(app.id)", LogKey.provider: "\(provider.rawValue)", LogKey.result: "\(reload)"]
        )
        return reload
    }

    /// Records the batch, or gives it back, as the machine ended it; `done` logs the batch's timings once recorded.
    private func finish(
        _ batch: LeasedBatch,
        app: App,
        _ completion: BatchSendMachine.Completion,
        logger: Logger,
        done: () -> Void
    ) async -> [BatchOutcome] {
        switch completion {
        case .abandon:
            logger.warning("lost the lease of a batch before recording it; the worker that took it over sends the rest")
            metrics.batch([], kind: batch.kind.rawValue, result: "lost")
            return []
        case .record(let outcomes):
            held.withLock { $0[batch.id]?.recording = true }
            let recorded: Bool
            do {
                recorded = try await recordRetrying(batch, outcomes: outcomes, logger: logger)
            } catch {
                logger.error(
                    "could not record a batch; it is sent again when its lease expires",
                    metadata: [LogKey.error: "\(String(reflecting: error))"]
                )
                noteError("could not record a batch", error)
                metrics.batch(outcomes, kind: batch.kind.rawValue, result: "failed")
                return outcomes
            }
            done()
            if !recorded {
                logger.warning("lost the lease of a batch before recording it; the worker that took it over records it")
            }
            metrics.batch(outcomes, kind: batch.kind.rawValue, result: recorded ? "recorded" : "lost")
            if recorded { await reportSent(outcomes, app: app, logger: logger) }
            return outcomes
        case .giveBack(let recorded, let returned, let reason):
            held.withLock { $0[batch.id]?.recording = true }
            let because: String
            switch reason {
            case .draining: because = "draining"
            case .credentials(let provider, let problem): because = "\(provider.rawValue): \(problem)"
            }
            do {
                let given = try await retrying("could not give a batch back; trying again", logger: logger, until: recordGiveUp()) {
                    let now = self.clock.now()
                    return try await self.database {
                        try await self.repository.giveBack(
                            batch,
                            recorded: recorded,
                            firstReturned: returned.first ?? 0,
                            returned: returned.count,
                            because: because,
                            owner: self.configuration.owner,
                            now: now,
                            logger: logger
                        )
                    }
                }
                logger.notice(
                    given ? "gave a batch back to its cohort" : "lost the lease of a batch before giving it back",
                    metadata: [LogKey.returned: "\(returned.count)", LogKey.devices: "\(recorded.count)", LogKey.reason: "\(because)"]
                )
                metrics.batch(recorded, kind: batch.kind.rawValue, result: given ? "givenBack" : "lost")
                if given { await reportSent(recorded, app: app, logger: logger) }
            } catch {
                logger.error(
                    "could not give a batch back; it is sent again when its lease expires",
                    metadata: [LogKey.error: "\(String(reflecting: error))"]
                )
                noteError("could not give a batch back", error)
                metrics.batch(recorded, kind: batch.kind.rawValue, result: "failed")
            }
            if case .credentials(let provider, let problem) = reason {
                await cannotSend(app: app, provider: provider, problem: problem, logger: logger)
            }
            return recorded
        }
    }

    /// This worker cannot send for `app` through `provider`: it leaves the app's batches to the others for a
    /// backoff, says so once per backoff (log, `sender_status`), and is unready meanwhile.
    private func cannotSend(app: App, provider: PushProvider, problem: String, logger: Logger) async {
        let code = problem.contains("refused") ? "refused" : "load"
        let (state, news) = health.failed(appID: app.id, provider: provider, code: code, reason: problem, now: clock.monotonic())
        guard news else { return }
        logger.error(
            "this worker cannot send for the app; its batches are left to the other workers for a while",
            metadata: [
                LogKey.app: "\(app.id)", LogKey.provider: "\(provider.rawValue)", LogKey.reason: "\(problem)",
                LogKey.backoff: "\(Int(state.retryAt - clock.monotonic()))s",
            ]
        )
        do {
            let now = clock.now()
            try await database {
                try await self.senders.reportProblem(
                    appID: app.id,
                    provider: provider,
                    worker: self.configuration.owner,
                    problem: problem,
                    now: now,
                    logger: logger
                )
            }
        } catch {
            logger.warning("could not report that this worker cannot send for an app", metadata: [LogKey.error: "\(String(reflecting: error))"])
        }
    }

    /// The providers through which `outcomes` went out: this worker can send for the app through them (a problem it
    /// had is over), which it tells the database at most every 30 seconds.
    private func reportSent(_ outcomes: [BatchOutcome], app: App, logger: Logger) async {
        let providers = Set(
            outcomes.compactMap { outcome -> PushProvider? in
                switch outcome.result {
                case .accepted, .rejected, .fateUnknown: outcome.provider
                case .notSent, .skipped: nil
                }
            }
        )
        for provider in PushProvider.allCases where providers.contains(provider) {
            if health.sent(appID: app.id, provider: provider) != nil {
                logger.notice("this worker sends for the app again", metadata: [LogKey.app: "\(app.id)", LogKey.provider: "\(provider.rawValue)"])
            }
            guard health.shouldReportSent(appID: app.id, provider: provider, now: clock.monotonic()) else { continue }
            do {
                let now = clock.now()
                try await database {
                    try await self.senders.reportSent(appID: app.id, provider: provider, worker: self.configuration.owner, now: now, logger: logger)
                }
            } catch {
                logger.warning("could not report that this worker sent for an app", metadata: [LogKey.error: "\(String(reflecting: error))"])
            }
        }
    }

    /// Ends the batch's broadcast as failed: nothing of it can be sent, and retrying every batch until the
    /// deadline would only hide that in the logs. If the database cannot be told, the batch's lease expires
    /// and the next worker to lease it tries again.
    private func fail(_ batch: LeasedBatch, cause: String, reason: String, logger: Logger) async {
        logger.error("the broadcast cannot be sent; it ends as failed", metadata: [LogKey.reason: "\(reason)"])
        metrics.batch([], kind: batch.kind.rawValue, result: "failed")
        do {
            let now = clock.now()
            if try await database({ try await self.repository.fail(id: batch.broadcastID, reason: reason, now: now, logger: logger) }) {
                metrics.failed(cause: cause)
            }
        } catch {
            logger.error("could not mark the broadcast failed", metadata: [LogKey.error: "\(String(reflecting: error))"])
        }
    }

    /// A new slot for the rest of a batch, starting no earlier than `notBefore`; nil when its lease was lost.
    /// Retried while the database is unreachable (sending on without a slot would be the burst pacing exists
    /// to prevent), until the worker drains.
    private func reclaim(_ batch: LeasedBatch, from index: Int, remaining: Int, notBefore: Date?, logger: Logger) async throws -> Date? {
        try await retrying("could not claim a new slot for a late batch; trying again", logger: logger, until: nil) {
            if self.held.withLock({ $0[batch.id]?.lost ?? true }) { return nil }
            let now = max(self.clock.now(), notBefore ?? .distantPast)
            return try await self.database {
                try await self.repository.reclaimSlot(
                    batch,
                    from: index,
                    remaining: remaining,
                    owner: self.configuration.owner,
                    now: now,
                    logger: logger
                )
            }
        }
    }

    /// Records the batch's outcomes, trying again while the database is unreachable: the batch stays held
    /// and its lease renewed meanwhile, so nobody sends it again, for at most ``Configuration/recordPatience``
    /// (or until a drain's deadline has passed by a second and a half).
    private func recordRetrying(_ batch: LeasedBatch, outcomes: [BatchOutcome], logger: Logger) async throws -> Bool {
        try await retrying("could not record a batch; trying again", logger: logger, until: recordGiveUp()) {
            let now = self.clock.now()
            return try await self.database {
                try await self.repository.record(batch, outcomes: outcomes, owner: self.configuration.owner, now: now, logger: logger)
            }
        }
    }

    /// When recording stops being retried, on the monotonic clock.
    private func recordGiveUp() -> TimeInterval {
        let patience = clock.monotonic() + configuration.recordPatience.seconds
        guard let deadline = drainDeadline.withLock({ $0 }) else { return patience }
        return min(patience, clock.monotonic() + max(0, deadline.timeIntervalSince(clock.now())) + 1.5)
    }

    /// One call to the database, given up as failed (``DatabaseCallUnanswered``) after
    /// ``Configuration/databasePatience`` (at least the lease): see there.
    private func database<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let value = try await answered(within: max(configuration.databasePatience, configuration.leaseDuration), operation)
        metrics.reachedDatabase()
        return value
    }

    /// Runs `operation` until it succeeds, waiting 0.25 s, then twice as long each time up to 5 s (on the
    /// dispatcher's clock), after a failure; rethrows the failure once the monotonic clock reaches `giveUp` (never when
    /// nil), the worker drains (when `giveUp` is nil), or the task is cancelled.
    private func retrying<Value>(
        _ message: Logger.Message,
        logger: Logger,
        until giveUp: TimeInterval?,
        _ operation: () async throws -> Value
    ) async throws -> Value {
        var delay = 0.25
        while true {
            do {
                return try await operation()
            } catch {
                let draining = drainDeadline.withLock { $0 } != nil
                guard giveUp.map({ clock.monotonic() < $0 }) ?? !draining, !Task.isCancelled else { throw error }
                logger.warning(message, metadata: [LogKey.error: "\(String(reflecting: error))"])
                try await clock.sleep(clock.now().addingTimeInterval(delay))
                delay = min(delay * 2, 5)
            }
        }
    }

    private func log(_ events: [BroadcastEvent]) {
        for event in events {
            switch event {
            case .waveStarted(let broadcast, let wave, let kind, let planned, let start):
                logger.notice(
                    "wave started",
                    metadata: [
                        LogKey.broadcast: "\(broadcast.uuidString.lowercased())", LogKey.wave: "\(wave)", LogKey.kind: "\(kind.rawValue)",
                        LogKey.planned: "\(planned)",
                        LogKey.start: "\(start)",
                    ]
                )
            case .waveFinished(let broadcast, let wave):
                logger.info("wave finished", metadata: [LogKey.broadcast: "\(broadcast.uuidString.lowercased())", LogKey.wave: "\(wave)"])
            case .completed(let broadcast):
                logger.notice("broadcast completed", metadata: [LogKey.broadcast: "\(broadcast.uuidString.lowercased())"])
            case .expired(let broadcast):
                // The deadline, not an error, ended it: with `--max-pushes auto` the last wave often runs into it.
                logger.notice(
                    "broadcast expired at the edition's deadline with devices left",
                    metadata: [LogKey.broadcast: "\(broadcast.uuidString.lowercased())"]
                )
            }
        }
    }
}

/// A batch a worker holds, and what became of its lease meanwhile.
struct HeldBatch: Sendable {
    var batch: LeasedBatch
    /// Until when (``BroadcastClock/monotonic``) the lease surely holds: from before the lease or its last renewal
    /// was asked for, plus its duration. Past it, the batch writes nothing until a renewal confirms the lease.
    var trustedUntil: TimeInterval = .infinity
    /// Where the batch hears of answers, lease news and a drain.
    let mailbox = BatchMailbox()
    /// Its lease was taken over: sending stops, the new holder sends the rest.
    var lost = false
    /// Its broadcast was cancelled: the rest is recorded as skipped.
    var cancelled = false
    /// Its outcomes are being recorded: a renewal that no longer finds it may have run just after the
    /// record committed (the batch is done), which is no loss.
    var recording = false

    /// The batches of `renewed` whose renewal did not find them: their leases were lost. A batch that is
    /// being recorded, or was recorded and let go meanwhile, is not: it is done, not taken over; if its lease
    /// had been lost, recording it says so.
    static func lost(renewed: [LeasedBatch], still: Set<Int64>, held: [Int64: HeldBatch]) -> [LeasedBatch] {
        renewed.filter { batch in
            guard !still.contains(batch.id), let entry = held[batch.id] else { return false }
            return !entry.recording
        }
    }
}

private struct BatchFinished: Error {}

private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
private struct PollElapsed: Error {}

extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
