import APNs
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
        public var leaseDuration: TimeInterval = 30
        /// Batches are leased when their first device is due within this many seconds: long enough to
        /// read the batch before its first instant, short enough that a held batch rarely waits.
        public var lookahead: TimeInterval = 0.5
        /// A batch holds the devices due in this many seconds at the wave's rate…
        public var batchDuration: TimeInterval = 1
        /// …but no more than this many.
        public var maxBatchSize: Int = 1000
        /// Batches one worker holds at once (sending, or waiting for their instant, or being recorded).
        /// With ``maxBatchSize`` this bounds what a worker that dies may have sent without recording.
        public var maxBatchesInFlight: Int = 4
        /// How often the worker looks for due work when it has none.
        public var pollInterval: TimeInterval = 0.2
        /// How often broadcasts are moved along (waves finished and started, deadlines).
        public var advanceInterval: TimeInterval = 1
        /// Devices due within this many seconds of each other are sent together.
        public var tick: TimeInterval = 0.02

        public init(owner: String = Configuration.defaultOwner()) {
            self.owner = owner
        }

        /// The same worker on a clock that runs `factor` times faster than the wall clock: every duration
        /// is in the clock's time, so it is stretched to keep the same wall-clock behaviour (the demo).
        public func scaled(by factor: Double) -> Configuration {
            var scaled = self
            scaled.leaseDuration *= factor
            scaled.lookahead *= factor
            scaled.batchDuration *= factor
            scaled.pollInterval *= factor
            scaled.advanceInterval *= factor
            scaled.tick *= factor
            return scaled
        }

        public static func defaultOwner() -> String {
            "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UInt16.random(in: 0...UInt16.max))"
        }
    }

    /// What one ``step(now:)`` did, for tests and the demo.
    public struct StepReport: Sendable, Equatable {
        public var events: [BroadcastEvent] = []
        public var batches = 0
        public var sent = 0
        public var skipped = 0
    }

    private let repository: BroadcastRepository
    private let editions: EditionRepository
    private let channels: APNsChannels
    private let configuration: Configuration
    private let clock: DispatchClock
    private let logger: Logger
    /// The batches this worker holds, with whether their lease was lost (then their sending stops).
    private let held = Mutex<[Int64: (batch: LeasedBatch, lost: Bool)]>([:])
    private let metrics = DispatchMetrics()

    public init(
        repository: BroadcastRepository,
        editions: EditionRepository,
        channels: APNsChannels,
        configuration: Configuration = Configuration(),
        clock: DispatchClock = .system,
        logger: Logger
    ) {
        self.repository = repository
        self.editions = editions
        self.channels = channels
        self.configuration = configuration
        self.clock = clock
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.owner)"
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
                var nextAdvance = Date.distantPast
                var inFlight = 0
                var pollPending = false
                while !stopping.isSet && !Task.isCancelled {
                    let now = clock.now()
                    if now >= nextAdvance {
                        nextAdvance = now.addingTimeInterval(configuration.advanceInterval)
                        do {
                            log(try await repository.advance(now: now, logger: logger))
                            metrics.tick(now: now, running: try await repository.runningTotals(logger: logger))
                        } catch {
                            logger.error("could not advance broadcasts", metadata: ["error": "\(String(reflecting: error))"])
                        }
                    }
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
                            logger.error("could not lease a batch", metadata: ["error": "\(String(reflecting: error))"])
                        }
                    }
                    if leased { continue }
                    // Wait for a batch to finish (then lease at once) or for the poll interval.
                    if !pollPending {
                        pollPending = true
                        let poll = now.addingTimeInterval(configuration.pollInterval)
                        group.addTask {
                            try await self.clock.sleep(poll)
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

    /// One pass at `now`, without waiting: moves broadcasts along, then leases and sends every batch due
    /// by `now + lookahead`, each device at its instant according to the clock. Tests call this with a
    /// clock whose `sleep` returns at once, to run waves an hour apart in no time.
    public func step() async throws -> StepReport {
        var report = StepReport()
        let now = clock.now()
        report.events = try await repository.advance(now: now, logger: logger)
        log(report.events)
        while let batch = try await lease(now: now) {
            let outcomes = await send(batch)
            report.batches += 1
            for outcome in outcomes {
                if case .skipped = outcome.result { report.skipped += 1 } else { report.sent += 1 }
            }
        }
        return report
    }

    private func lease(now: Date) async throws -> LeasedBatch? {
        let batch = try await repository.lease(
            owner: configuration.owner, now: now, lookahead: configuration.lookahead, duration: configuration.leaseDuration,
            batchDuration: configuration.batchDuration, maxBatchSize: configuration.maxBatchSize,
            excluding: held.withLock { Array($0.keys) }, logger: logger
        )
        if let batch { held.withLock { $0[batch.id] = (batch, false) } }
        return batch
    }

    /// Renews the leases held, every third of a lease.
    private func heartbeat(until stopping: StopFlag) async throws {
        while !Task.isCancelled {
            try await clock.sleep(clock.now().addingTimeInterval(configuration.leaseDuration / 3))
            let batches = held.withLock { $0.values.filter { !$0.lost }.map(\.batch) }
            do {
                let still = try await repository.renew(
                    batches, owner: configuration.owner, until: clock.now().addingTimeInterval(configuration.leaseDuration), logger: logger
                )
                let lost = batches.filter { !still.contains($0.id) }
                if !lost.isEmpty {
                    held.withLock { held in for batch in lost { held[batch.id]?.lost = true } }
                    logger.warning(
                        "lost the leases of batches still being sent; they stop, and their new holder sends them",
                        metadata: ["batches": "\(lost.map(\.id))"]
                    )
                }
            } catch {
                logger.warning("could not renew leases", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    /// Sends a batch at the plan's pace and records it. A batch that cannot be read or sent is left to its
    /// lease, which expires, and is sent again then.
    @discardableResult
    private func send(_ batch: LeasedBatch) async -> [BatchOutcome] {
        defer { held.withLock { _ = $0.removeValue(forKey: batch.id) } }
        var logger = logger
        logger[metadataKey: "broadcast"] = "\(batch.broadcastID)"
        logger[metadataKey: "batch"] = "\(batch.id)"
        do {
            let started = ContinuousClock.now
            let targets = try await repository.targets(of: batch, now: clock.now(), logger: logger)
            let channel = try await channels.channel(appID: batch.appID, environment: batch.environment, logger: logger)
            let notifications = try await notifications(for: batch, logger: logger)
            let read = ContinuousClock.now
            let outcomes = await withTaskGroup(of: [BatchOutcome].self) { group -> [BatchOutcome] in
                var index = 0
                var skipped: [BatchOutcome] = []
                while index < targets.count {
                    let due = batch.sendTime(index: index)
                    var end = index + 1
                    while end < targets.count && batch.sendTime(index: end).timeIntervalSince(due) < configuration.tick { end += 1 }
                    do {
                        try await clock.sleep(due)
                    } catch {
                        break
                    }
                    // A lease that ran out (a slow machine, a database outage) belongs to another worker now.
                    if held.withLock({ $0[batch.id]?.lost ?? false }) { break }
                    let sentAt = max(due, clock.now())
                    metrics.late(by: sentAt.timeIntervalSince(due))
                    var deliveries: [(deviceID: Int64, delivery: APNsDelivery)] = []
                    for target in targets[index..<end] {
                        if sentAt >= batch.deadline {
                            skipped.append(BatchOutcome(deviceID: target.deviceID, sentAt: sentAt, result: .skipped("deadline")))
                        } else if batch.kind == .background && target.pushesInLastHour >= BroadcastOptions.hourlyBudget {
                            skipped.append(BatchOutcome(deviceID: target.deviceID, sentAt: sentAt, result: .skipped("hourlyBudget")))
                        } else if let notification = notifications[target.tier] {
                            deliveries.append((target.deviceID, APNsDelivery(notification, to: target.token.hex, topic: channel.topic)))
                        }
                    }
                    index = end
                    guard !deliveries.isEmpty else { continue }
                    group.addTask {
                        let results = await channel.client.send(deliveries.map(\.delivery))
                        return zip(deliveries, results).map { pair in
                            BatchOutcome(deviceID: pair.0.deviceID, sentAt: sentAt, result: Self.result(of: pair.1.outcome, at: sentAt))
                        }
                    }
                }
                var outcomes = skipped
                for await part in group { outcomes += part }
                return outcomes
            }
            let sentAll = ContinuousClock.now
            let recorded = try await repository.record(batch, outcomes: outcomes, owner: configuration.owner, now: clock.now(), logger: logger)
            logger.debug(
                "batch done",
                metadata: [
                    "devices": "\(targets.count)", "read": "\(started.duration(to: read))", "sent": "\(read.duration(to: sentAll))",
                    "recorded": "\(sentAll.duration(to: .now))", "lateBy": "\(String(format: "%.3f", clock.now().timeIntervalSince(batch.sendTime(index: max(0, targets.count - 1)))))s",
                ]
            )
            if !recorded {
                logger.warning("lost the lease of a batch before recording it; the worker that took it over records it")
            }
            metrics.batch(outcomes, kind: batch.kind.rawValue, result: recorded ? "recorded" : "lost")
            return outcomes
        } catch {
            logger.error("could not send a batch; it is sent again when its lease expires", metadata: ["error": "\(String(reflecting: error))"])
            metrics.batch([], kind: batch.kind.rawValue, result: "failed")
            return []
        }
    }

    /// The payload per tier: the same push for every device of a tier.
    private func notifications(for batch: LeasedBatch, logger: Logger) async throws -> [ImageTier: APNsNotification] {
        guard let edition = try await editions.find(id: batch.editionID, logger: logger) else {
            throw ChannelError(message: "edition \(batch.editionID) does not exist")
        }
        var notifications: [ImageTier: APNsNotification] = [:]
        for tier in ImageTier.allCases {
            let push = EditionPush(edition: edition, tier: tier)
            switch batch.kind {
            case .background:
                notifications[tier] = try .background(push, expiration: edition.deadline)
            case .alert:
                notifications[tier] = try .alert(
                    title: "Your \(edition.manifest.publication) edition is ready",
                    body: "The edition of \(edition.manifest.issueDate) is waiting to be downloaded.",
                    appKeys: push,
                    expiration: edition.deadline
                )
            }
        }
        return notifications
    }

    static func result(of outcome: APNsOutcome, at sentAt: Date) -> BatchOutcome.Result {
        switch outcome {
        case .accepted: .accepted
        case .rejected(let rejection):
            .rejected(reason: "\(rejection.reason)", unregisteredAt: rejection.status == 410 ? (rejection.timestamp ?? sentAt) : nil)
        case .fateUnknown: .fateUnknown
        case .notSent: .notSent
        }
    }

    private func log(_ events: [BroadcastEvent]) {
        for event in events {
            switch event {
            case .waveStarted(let broadcast, let wave, let kind, let planned, let start):
                logger.notice("wave started", metadata: ["broadcast": "\(broadcast)", "wave": "\(wave)", "kind": "\(kind.rawValue)", "planned": "\(planned)", "start": "\(start)"])
            case .waveFinished(let broadcast, let wave):
                logger.info("wave finished", metadata: ["broadcast": "\(broadcast)", "wave": "\(wave)"])
            case .completed(let broadcast):
                logger.notice("broadcast completed", metadata: ["broadcast": "\(broadcast)"])
            case .expired(let broadcast):
                logger.warning("broadcast expired at the edition's deadline with devices left", metadata: ["broadcast": "\(broadcast)"])
            }
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
