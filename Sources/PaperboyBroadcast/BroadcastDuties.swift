import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import ServiceLifecycle
import Synchronization

/// The per-second duties beside the sending, on every worker: moves broadcasts along (``WaveDriver``: waves
/// finished and started, deadlines), fails the broadcasts no worker can send (``UnsendablePolicy``), applies the
/// deactivations held for "token not valid" answers once nobody suspects a misconfiguration, keeps the broadcasts'
/// gauges, and tallies receipts (``ReceiptTallier``). Each duty runs on its own: one that fails is logged and the
/// others still run. Counting a later wave's audience takes seconds at millions of devices, so this runs beside the
/// sending, never in its way.
public final class BroadcastDuties: Service {
    let repository: BroadcastRepository
    let advancer: WaveAdvancer
    let senders: SenderStatusRepository
    let holds: ProviderHoldRepository
    let tallier: ReceiptTallier
    let configuration: Dispatcher.Configuration
    let clock: BroadcastClock
    let metrics: DispatchMetrics
    let logger: Logger
    /// When the fleet's old evidence was last deleted.
    let evidencePruned = Mutex<Date?>(nil)

    init(repository: BroadcastRepository, configuration: Dispatcher.Configuration, clock: BroadcastClock, metrics: DispatchMetrics, logger: Logger) {
        self.repository = repository
        self.advancer = WaveAdvancer(
            store: PostgresWaveStore(repository: repository),
            countAhead: configuration.countAhead.seconds,
            owner: configuration.owner,
            claimSeconds: min(configuration.advancePatience, .seconds(600)).seconds
        )
        self.senders = SenderStatusRepository(client: repository.client)
        self.holds = ProviderHoldRepository(client: repository.client)
        self.tallier = ReceiptTallier(client: repository.client, policy: ReceiptTallyPolicy(dispatcher: configuration))
        self.configuration = configuration
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// Every ``Dispatcher/Configuration/advanceInterval`` until cancelled or shut down.
    public func run() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let now = clock.now()
            _ = await once(now: now)
            do {
                try await clock.sleep(now.addingTimeInterval(configuration.advanceInterval.seconds))
            } catch {
                return
            }
        }
    }

    /// One round of every duty at `now`; returns what advancing the broadcasts did.
    @discardableResult
    func once(now: Date) async -> [BroadcastEvent] {
        let events =
            await duty("could not advance broadcasts", patience: configuration.advancePatience) {
                try await self.advancer.advance(now: now, logger: self.logger)
            } ?? []
        log(events)
        await duty("could not check for broadcasts nobody can send") { try await self.failUnsendable(now: now) }
        await duty("could not apply held deactivations") { try await self.applyHeldDeactivations(now: now) }
        await duty("could not read the broadcasts' gauges") {
            let since = now.addingTimeInterval(-DispatchMetrics.endedShownFor)
            self.metrics.tick(now: now, broadcasts: try await self.repository.gauges(now: now, endedSince: since, logger: self.logger))
            self.metrics.holds(try await self.holds.all(logger: self.logger))
        }
        await duty("could not tally receipts", patience: configuration.advancePatience) {
            try await self.tallier.run(now: now, logger: self.logger)
        }
        return events
    }

    /// Applies the held deactivations ten minutes old (by the database's clock, which stamped the answers) of the apps'
    /// providers whose answers from every worker say no misconfiguration (``MisconfigurationGuard/judge(_:configuration:)``),
    /// each once the provider accepted a push sent after it (``MisconfigurationGuard/appliedBefore(_:configuration:)``);
    /// holds those whose answers do, as one worker's guard would have had it seen them all. Once a minute, forgets the
    /// evidence older than a day.
    func applyHeldDeactivations(now: Date) async throws {
        let rules = MisconfigurationGuard.Configuration()
        var clear: [HoldKey: Date] = [:]
        for fleet in try await holds.fleetAnswers(smallFleet: rules.smallFleet, logger: logger) {
            switch MisconfigurationGuard.judge(fleet, configuration: rules) {
            case .apply:
                if fleet.due > 0, let before = MisconfigurationGuard.appliedBefore(fleet, configuration: rules) {
                    clear[HoldKey(appID: fleet.appID, environment: fleet.environment, provider: fleet.provider)] = before
                }
            case .wait:
                continue
            case .hold(let suspicion):
                let raised = try await holds.raise(suspicion, by: configuration.owner, logger: logger)
                if raised {
                    logger.critical(
                        "most of the app's answers from every worker say its tokens are not valid for it: a misconfiguration is likely, so its sends through the provider are held and no device is deactivated; fix the configuration, then run paperboy apps release (or confirm the deactivations with paperboy apps confirm-deactivations)",
                        metadata: suspicion.metadata
                    )
                }
            }
        }
        let applied = try await holds.applyDue(only: clear, logger: logger)
        if applied > 0 {
            logger.notice("applied held deactivations: no misconfiguration was suspected", metadata: [LogKey.devices: "\(applied)"])
        }
        if evidencePruned.withLock({ last in
            guard last.map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return false }
            last = now
            return true
        }) {
            try await holds.pruneEvidence(logger: logger)
        }
    }

    /// Runs one duty within `patience` (the database's otherwise); a failure is logged and left for the next round.
    @discardableResult
    private func duty<Value: Sendable>(
        _ message: Logger.Message,
        patience: Duration? = nil,
        _ body: @escaping @Sendable () async throws -> Value
    ) async -> Value? {
        do {
            return try await answered(within: patience ?? max(configuration.databasePatience, configuration.leaseDuration), body)
        } catch is CancellationError {
            return nil
        } catch {
            logger.error(message, metadata: [LogKey.error: "\(String(reflecting: error))"])
            return nil
        }
    }

    /// Ends as failed the running broadcasts whose app no worker could send for through a provider for
    /// ``Dispatcher/Configuration/failAfter``, counted in the broadcast, with the workers' reasons.
    func failUnsendable(now: Date) async throws {
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

    func log(_ events: [BroadcastEvent]) {
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
