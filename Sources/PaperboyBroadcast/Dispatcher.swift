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
    private let channels: APNsChannels
    private let fcmChannels: FCMChannels?
    private let configuration: Configuration
    private let clock: BroadcastClock
    private let logger: Logger
    /// The batches this worker holds, with whether their lease was lost or their broadcast cancelled (then
    /// their sending stops).
    private let held = Mutex<[Int64: HeldBatch]>([:])
    private let metrics = DispatchMetrics()

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
        self.channels = channels
        self.fcmChannels = fcmChannels
        self.configuration = configuration
        self.clock = clock
        var logger = logger
        logger[metadataKey: LogKey.worker] = "\(configuration.owner)"
        self.logger = logger
    }

    /// Sends until graceful shutdown; then stops leasing and finishes the batches it holds (a few seconds
    /// of sends), so nothing it leased waits for a lease to expire.
    public func run() async throws {
        let stopping = StopFlag()
        logger.info("dispatcher started")
        try await withGracefulShutdownHandler {
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
                                group.addTask {
                                    _ = await self.send(batch)
                                    throw BatchFinished()
                                }
                            }
                        } catch {
                            logger.error("could not lease a batch", metadata: [LogKey.error: "\(String(reflecting: error))"])
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
                // Drain: finish the batches held.
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
            // A moment past the instant: an expiring lease can be taken over only after it.
            try await clock.sleep(min(end, max(clock.now(), next ?? end).addingTimeInterval(0.001)))
        }
    }

    private func lease(now: Date) async throws -> LeasedBatch? {
        let excluding = held.withLock { Array($0.keys) }
        let batch = try await database {
            try await self.repository.lease(
                owner: self.configuration.owner,
                now: now,
                lookahead: self.configuration.lookahead.seconds,
                duration: self.configuration.leaseDuration.seconds,
                batchDuration: self.configuration.batchDuration.seconds,
                maxBatchSize: self.configuration.maxBatchSize,
                excluding: excluding,
                logger: self.logger
            )
        }
        if let batch { held.withLock { $0[batch.id] = HeldBatch(batch: batch) } }
        return batch
    }

    /// Moves the broadcasts along every ``Configuration/advanceInterval``, beside the sending: counting a
    /// later wave's audience takes seconds at millions of devices, and other broadcasts' batches must not
    /// wait for it.
    private func advance(until stopping: StopFlag) async {
        while !stopping.isSet && !Task.isCancelled {
            let now = clock.now()
            do {
                log(try await answered(within: configuration.advancePatience) { try await self.advancer.advance(now: now, logger: self.logger) })
                metrics.tick(now: now, running: try await database { try await self.repository.runningTotals(logger: self.logger) })
            } catch {
                logger.error("could not advance broadcasts", metadata: [LogKey.error: "\(String(reflecting: error))"])
            }
            do {
                try await clock.sleep(now.addingTimeInterval(configuration.advanceInterval.seconds))
            } catch {
                return
            }
        }
    }

    /// Renews the leases held, every third of a lease.
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
                let now = clock.now()
                let renewal = try await database {
                    try await self.repository.renew(
                        batches,
                        owner: self.configuration.owner,
                        duration: self.configuration.leaseDuration.seconds,
                        now: now,
                        logger: self.logger
                    )
                }
                let still = renewal.held
                if !renewal.stopped.isEmpty {
                    held.withLock { held in for id in renewal.stopped { held[id]?.cancelled = true } }
                }
                let lost = held.withLock { held in
                    let lost = HeldBatch.lost(renewed: batches, still: still, held: held)
                    for batch in lost { held[batch.id]?.lost = true }
                    return lost
                }
                if !lost.isEmpty {
                    logger.warning(
                        "lost the leases of batches still being sent; they stop, and their new holder sends them",
                        metadata: [LogKey.batches: "\(lost.map(\.id))"]
                    )
                }
            } catch {
                logger.warning("could not renew leases", metadata: [LogKey.error: "\(String(reflecting: error))"])
            }
        }
    }

    /// Sends a batch at the plan's pace and records it. A batch that cannot be read or sent is left to its
    /// lease, which expires, and is sent again then.
    ///
    /// Pacing: the batch goes out in its slot of the wave's shared timeline. A worker that finds itself behind
    /// that slot (it was paused, the machine starved, the database or APNs stalled) claims a new slot for the
    /// rest instead of sending the backlog at once. Devices APNs never received (`notSent`) are sent again
    /// in a later slot of the same wave, up to ``Configuration/notSentRounds`` times.
    @discardableResult
    private func send(_ batch: LeasedBatch) async -> [BatchOutcome] {
        defer { held.withLock { _ = $0.removeValue(forKey: batch.id) } }
        var logger = logger
        logger[metadataKey: LogKey.broadcast] = "\(batch.broadcastID.uuidString.lowercased())"
        logger[metadataKey: LogKey.batch] = "\(batch.id)"
        do {
            let started = ContinuousClock.now
            let (now, logger) = (clock.now(), logger)
            let targets = try await database { try await self.repository.targets(of: batch, now: now, logger: logger) }
            let senders = try await database { try await self.senders(for: batch, targets: targets, logger: logger) }
            let read = ContinuousClock.now
            var outcomes: [BatchOutcome] = []
            var pending = Array(targets.indices)
            var slotStart = batch.slotStart
            for round in 0...configuration.notSentRounds where !pending.isEmpty {
                if round > 0 {
                    guard let start = try await reclaim(batch, from: pending[0], remaining: pending.count, notBefore: nil, logger: logger) else {
                        break
                    }
                    slotStart = start
                }
                let last = round == configuration.notSentRounds
                let result = await sendRound(
                    batch,
                    targets: targets,
                    positions: pending,
                    slotStart: slotStart,
                    senders: senders,
                    logger: logger
                )
                pending = last ? [] : result.notSent
                outcomes += last ? result.outcomes : result.outcomes.filter { $0.result != .notSent }
                if result.stopped { break }
            }
            let sentAll = ContinuousClock.now
            held.withLock { $0[batch.id]?.recording = true }
            let recorded = try await recordRetrying(batch, outcomes: outcomes, logger: logger)
            logger.debug(
                "batch done",
                metadata: [
                    LogKey.devices: "\(targets.count)", LogKey.readTime: "\(started.duration(to: read))",
                    LogKey.sendTime: "\(read.duration(to: sentAll))",
                    LogKey.recordTime: "\(sentAll.duration(to: .now))",
                ]
            )
            if !recorded {
                logger.warning("lost the lease of a batch before recording it; the worker that took it over records it")
            }
            metrics.batch(outcomes, kind: batch.kind.rawValue, result: recorded ? "recorded" : "lost")
            return outcomes
        } catch let error as APNsNotificationError {
            await fail(batch, cause: "push", reason: "the \(batch.kind.rawValue) push cannot be built: \(error)", logger: logger)
            return []
        } catch let error as FCMMessageError {
            await fail(batch, cause: "push", reason: "the \(batch.kind.rawValue) FCM message cannot be built: \(error)", logger: logger)
            return []
        } catch let error as ChannelError {
            await fail(batch, cause: "key", reason: "\(error)", logger: logger)
            return []
        } catch {
            logger.error("could not send a batch; it is sent again when its lease expires", metadata: [LogKey.error: "\(String(reflecting: error))"])
            metrics.batch([], kind: batch.kind.rawValue, result: "failed")
            return []
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

    /// One pass over `positions` (indices into `targets`), the first at `slotStart`, the rest at the wave's
    /// rate. Stops when the lease is lost (nothing more is sent or recorded: the new holder does it) or the
    /// broadcast was cancelled (the rest are recorded as skipped, `cancelled`).
    private func sendRound(
        _ batch: LeasedBatch,
        targets: [BatchTarget],
        positions: [Int],
        slotStart: Date,
        senders: BatchSenders,
        logger: Logger
    ) async -> (outcomes: [BatchOutcome], notSent: [Int], stopped: Bool) {
        var slot = (start: slotStart, position: 0)
        func due(_ position: Int) -> Date {
            batch.rate > 0 ? slot.start.addingTimeInterval(Double(position - slot.position) / batch.rate) : slot.start
        }
        return await withTaskGroup(of: [(position: Int, outcome: BatchOutcome)].self) { group in
            var position = 0
            var settled: [BatchOutcome] = []
            var stopped = false
            var waitedForAPNs = false
            /// Set when the batch waited for APNs: the rest goes out in a new slot that starts no earlier than this.
            var resumeNotBefore: Date?
            while position < positions.count {
                var end = position + 1
                while end < positions.count && due(end).timeIntervalSince(due(position)) < configuration.tick.seconds { end += 1 }
                let instant = due(position)
                do {
                    try await clock.sleep(instant)
                } catch {
                    break
                }
                let state = held.withLock { $0[batch.id].map { (lost: $0.lost, cancelled: $0.cancelled) } } ?? (lost: false, cancelled: false)
                if state.lost {
                    stopped = true
                    break
                }
                if state.cancelled {
                    stopped = true
                    let now = clock.now()
                    settled += positions[position...].map { BatchOutcome(deviceID: targets[$0].deviceID, sentAt: now, result: .skipped(.cancelled)) }
                    break
                }
                if let away = senders.unreachable, !waitedForAPNs {
                    // Requests sent now would wait in the client and all go out the moment the service is back:
                    // wait for it here instead, then the devices that fell due take the wave's next free slot.
                    waitedForAPNs = true
                    logger.warning(
                        "\(away) is unreachable or not answering; the batch holds its sends until it is back",
                        metadata: [LogKey.batch: "\(batch.id)"]
                    )
                    // Read now: answers that come in when the service is back, seconds late, raise it for a moment.
                    let silenceLimit = senders.silenceLimit
                    let giveUp = clock.now().addingTimeInterval(configuration.unreachablePatience.seconds)
                    while senders.unreachable != nil && clock.now() < giveUp
                        && held.withLock({ $0[batch.id].map { !$0.lost && !$0.cancelled } ?? false })
                    {
                        do {
                            try await clock.sleep(clock.now().addingTimeInterval(0.05))
                        } catch {
                            break
                        }
                    }
                    // An APNs that hung (connections open, nothing answered) processes what was written to it
                    // before the client saw the silence all at once when it is back: about the silence limit's
                    // worth of the rate. The rest of the batch waits as long again, so that this backlog and
                    // the paced sends do not fall in the same second.
                    resumeNotBefore = clock.now().addingTimeInterval(silenceLimit.seconds)
                    continue
                }
                waitedForAPNs = waitedForAPNs && senders.unreachable != nil
                if resumeNotBefore != nil || clock.now().timeIntervalSince(instant) > configuration.catchUpTolerance.seconds {
                    // Behind the slot, or back after APNs was away: the rest takes the wave's next free slot,
                    // after the work claimed meanwhile, so the backlog never goes out faster than the plan.
                    do {
                        guard
                            let start = try await reclaim(
                                batch,
                                from: positions[position],
                                remaining: positions.count - position,
                                notBefore: resumeNotBefore,
                                logger: logger
                            )
                        else {
                            stopped = true
                            break
                        }
                        resumeNotBefore = nil
                        metrics.late(by: start.timeIntervalSince(instant))
                        slot = (start, position)
                    } catch {
                        stopped = true
                        break
                    }
                    continue
                }
                let sentAt = max(instant, clock.now())
                metrics.late(by: sentAt.timeIntervalSince(instant))
                var deliveries: [(position: Int, delivery: APNsDelivery)] = []
                var readyPositions = Set<Int>()
                var messages: [(position: Int, delivery: FCMDelivery)] = []
                var fcmMessages = FCMMessageCache()
                for target in positions[position..<end] {
                    let device = targets[target]
                    // The ready alert goes in place of the device's last background follow-up (not a background
                    // push: iOS's background budget does not apply).
                    let ready =
                        senders.readyNotification != nil && device.provider == .apns && device.notifyWhenReady
                        && batch.readyAlertsFrom.map { sentAt >= $0 } == true
                    if let reason = SendRules.skipReason(
                        for: device,
                        kind: ready ? .alert : batch.kind,
                        at: sentAt,
                        deadline: batch.deadline,
                        fcmHasChannel: senders.fcm != nil
                    ) {
                        settled.append(BatchOutcome(deviceID: device.deviceID, sentAt: sentAt, result: .skipped(reason)))
                        continue
                    }
                    switch device.token {
                    case .apns(let token):
                        if ready, let channel = senders.apns, let notification = senders.readyNotification {
                            deliveries.append((target, APNsDelivery(notification, to: token.hex, topic: channel.topic)))
                            readyPositions.insert(target)
                        } else if let channel = senders.apns, let notification = senders.apnsNotifications[device.tier] {
                            deliveries.append((target, APNsDelivery(notification, to: token.hex, topic: channel.topic)))
                        }
                    case .fcm(let token):
                        if let message = fcmMessages.message(tier: device.tier, platform: device.platform, sentAt: sentAt, senders: senders) {
                            messages.append((target, FCMDelivery(message, to: token.text)))
                        }
                    }
                }
                position = end
                if let channel = senders.apns, !deliveries.isEmpty {
                    group.addTask {
                        let results = await channel.client.send(deliveries.map(\.delivery))
                        return Self.outcomes(deliveries.map(\.position), results.map { SendRules.result(of: $0.outcome) }, .apns, targets, sentAt)
                            .map { position, outcome in
                                var outcome = outcome
                                outcome.alert = readyPositions.contains(position)
                                return (position, outcome)
                            }
                    }
                }
                if let channel = senders.fcm, !messages.isEmpty {
                    group.addTask {
                        let results = await channel.client.send(messages.map(\.delivery))
                        if results.contains(where: {
                            if case .rejected(let rejection) = $0.outcome { rejection.action == .fixConfiguration } else { false }
                        }) {
                            logger.error(
                                "FCM cannot reach this app's iOS devices: Firebase holds no valid APNs credentials for it (THIRD_PARTY_AUTH_ERROR); upload the APNs key in the Firebase console"
                            )
                        }
                        return Self.outcomes(messages.map(\.position), results.map { SendRules.result(of: $0.outcome) }, .fcm, targets, sentAt)
                    }
                }
            }
            var notSent: [Int] = []
            var outcomes = settled
            for await part in group {
                for (target, outcome) in part {
                    outcomes.append(outcome)
                    if outcome.result == .notSent { notSent.append(target) }
                }
            }
            return (outcomes, notSent.sorted(), stopped)
        }
    }

    /// What the provider's answers mean for the targets at `positions` (indices into `targets`).
    private static func outcomes(
        _ positions: [Int],
        _ results: [BatchOutcome.Result],
        _ provider: PushProvider,
        _ targets: [BatchTarget],
        _ sentAt: Date
    ) -> [(position: Int, outcome: BatchOutcome)] {
        zip(positions, results).map { position, result in
            (position, BatchOutcome(deviceID: targets[position].deviceID, sentAt: sentAt, result: result, provider: provider))
        }
    }

    /// A new slot for the rest of a batch, starting no earlier than `notBefore`; nil when its lease was lost.
    /// Retried while the database is unreachable: sending on without a slot would be the burst pacing exists
    /// to prevent.
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
    /// and its lease renewed meanwhile, so nobody sends it again, for at most ``Configuration/recordPatience``.
    private func recordRetrying(_ batch: LeasedBatch, outcomes: [BatchOutcome], logger: Logger) async throws -> Bool {
        let giveUp = clock.now().addingTimeInterval(configuration.recordPatience.seconds)
        return try await retrying("could not record a batch; trying again", logger: logger, until: giveUp) {
            let now = self.clock.now()
            return try await self.database {
                try await self.repository.record(batch, outcomes: outcomes, owner: self.configuration.owner, now: now, logger: logger)
            }
        }
    }

    /// One call to the database, given up as failed (``DatabaseCallUnanswered``) after
    /// ``Configuration/databasePatience`` (at least the lease): see there.
    private func database<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await answered(within: max(configuration.databasePatience, configuration.leaseDuration), operation)
    }

    /// Runs `operation` until it succeeds, waiting 0.25 s, then twice as long each time up to 5 s (on the
    /// dispatcher's clock), after a failure; rethrows the failure once the clock reaches `giveUp` (never when nil)
    /// or the task is cancelled.
    private func retrying<Value>(
        _ message: Logger.Message,
        logger: Logger,
        until giveUp: Date?,
        _ operation: () async throws -> Value
    ) async throws -> Value {
        var delay = 0.25
        while true {
            do {
                return try await operation()
            } catch {
                guard giveUp.map({ clock.now() < $0 }) ?? true, !Task.isCancelled else { throw error }
                logger.warning(message, metadata: [LogKey.error: "\(String(reflecting: error))"])
                try await clock.sleep(clock.now().addingTimeInterval(delay))
                delay = min(delay * 2, 5)
            }
        }
    }

    /// The batch's ways out: APNs for its APNs devices (the app's key, the push per tier), FCM for its FCM
    /// devices (the app's service account, the edition). Only the providers the batch's devices use: an
    /// FCM-only batch needs no APNs key, an APNs-only batch no service account.
    private func senders(for batch: LeasedBatch, targets: [BatchTarget], logger: Logger) async throws -> BatchSenders {
        guard let edition = try await editions.find(id: batch.editionID, logger: logger) else {
            throw ChannelError(message: "edition \(batch.editionID) does not exist")
        }
        var senders = BatchSenders(edition: edition, kind: batch.kind, wave: batch.wave, androidPriority: batch.androidPriority)
        if targets.contains(where: { $0.provider == .apns }) {
            senders.apns = try await channels.channel(appID: batch.appID, environment: batch.environment, logger: logger)
            senders.apnsNotifications = try BroadcastPreflight.notifications(for: edition, kind: batch.kind, wave: batch.wave)
            if batch.readyAlertsFrom != nil, targets.contains(where: { $0.provider == .apns && $0.notifyWhenReady }) {
                senders.readyNotification = try BroadcastPreflight.readyNotification(for: edition, wave: batch.wave)
            }
        }
        if targets.contains(where: { $0.provider == .fcm }), let fcmChannels {
            senders.fcm = try await fcmChannels.channel(appID: batch.appID, logger: logger)
        }
        return senders
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
