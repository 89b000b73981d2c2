import Foundation
import Logging
import PaperboyCore
import Synchronization

/// The worker machine's I/O actions, one small function each: do the I/O, report what came of it as the next event.
extension WorkerExecutor {
    /// One I/O action; nil when it reports nothing back (and for the actions that are not I/O: ``startSend(_:_:deliver:)``,
    /// ``withdraw(_:)``, ``ended(_:_:)``).
    public func run(_ action: WorkerMachine.Action) async -> WorkerMachine.Event? {
        switch action {
        case .lease(let request): await lease(request)
        case .read(let batch): await read(batch)
        case .claimSlot(let batch, let from, let remaining, let notBefore):
            await claimSlot(batch, from: from, remaining: remaining, notBefore: notBefore)
        case .renew(let batches): await renew(batches)
        case .confirmLease(let batch): await confirm(batch)
        case .reloadCredentials(let batch, let provider, let generation): await reload(batch, provider, refusedGeneration: generation)
        case .write(let batch, let completion): await write(batch, completion)
        case .failBroadcast(let batch, let cause, let reason): await fail(batch, cause: cause, reason: reason)
        case .reportProblem(let problem): await report(problem)
        case .reportSent(let key, let recovered): await reportSent(key, recovered: recovered)
        case .raiseHold(let suspicion): await raise(suspicion)
        case .reportStatus: await reportStatus()
        case .send, .withdraw, .ended, .stop: nil
        }
    }

    /// One call to the store; an answer is the database reached (`paperboy_database_reached_timestamp_seconds`).
    func stored<Value: Sendable>(_ operation: () async throws -> Value) async throws -> Value {
        let value = try await operation()
        metrics.reachedDatabase()
        return value
    }

    func lease(_ request: WorkerMachine.LeaseRequest) async -> WorkerMachine.Event? {
        do {
            let asked = clock.monotonic()
            let query = LeaseQuery(
                owner: owner,
                now: moment().now,
                lookahead: configuration.lookahead,
                duration: configuration.leaseDuration,
                batchDuration: configuration.batchDuration,
                maxBatchSize: configuration.maxBatchSize,
                excludingBatches: request.excludingBatches,
                excludingApps: request.excludingApps,
                excludingProviders: request.excludingProviders,
                takeOver: request.takeOver,
                takeOverGrace: request.takeOverGrace
            )
            let lease = try await stored { try await store.lease(query, logger: logger) }
            // The batch's slot is on the store's clock: pace on it, measured now, before anything of it is sent.
            if let databaseNow = lease?.batch.leasedAt { measure(databaseNow, askedAt: asked) }
            // The targets the carve read: the machine reads the batch next (``read(_:)``), and takes them then.
            if let lease, let targets = lease.targets {
                state.withLock { $0.carved[lease.batch.id] = CarvedTargets(leases: lease.batch.leases, targets: targets) }
            }
            return .leased(lease?.batch)
        } catch is CancellationError {
            return nil
        } catch {
            logger.error("could not lease a batch", metadata: [LogKey.error: "\(String(reflecting: error))"])
            noteError("could not lease a batch", error)
            return .leaseFailed("\(error)")
        }
    }

    /// Reads a leased batch: its app, targets, edition and the app's holds; makes each provider's way out.
    func read(_ batch: LeasedBatch) async -> WorkerMachine.Event {
        let logger = batchLogger(batch)
        do {
            let now = moment().now
            guard let app = try await stored({ try await store.app(id: batch.appID, logger: logger) }) else {
                return .batchUnreadable(batch.id, .broadcast(cause: "data", reason: "app \(batch.appID) does not exist"))
            }
            let carved = state.withLock { $0.carved.removeValue(forKey: batch.id) }
            let targets =
                if let carved, carved.leases == batch.leases {
                    carved.targets
                } else {
                    try await stored { try await store.targets(of: batch, now: now, logger: logger) }
                }
            guard let edition = try await stored({ try await store.edition(id: batch.editionID, logger: logger) }) else {
                return .batchUnreadable(batch.id, .broadcast(cause: "data", reason: "edition \(batch.editionID) does not exist"))
            }
            let standing = try await stored { try await store.standing(appID: app.id, environment: batch.environment, logger: logger) }
            var contents = WorkerMachine.BatchContents(
                targets: targets,
                providers: [:],
                appProviders: transport.configuredProviders(for: app),
                configuration: app.credentialsVersion,
                confirmed: standing.confirmed
            )
            var channels: [PushProvider: any BatchChannel] = [:]
            for provider in Set(targets.map(\.provider)).sorted(by: { $0.rawValue < $1.rawValue }) {
                if let reason = standing.held[provider] {
                    contents.providers[provider] = .held(reason)
                    continue
                }
                switch try transport.way(provider, for: batch, app: app, edition: edition) {
                case .ready(let channel, let readyAlert):
                    channels[provider] = channel
                    contents.providers[provider] = .ready(generation: channel.generation)
                    if readyAlert { contents.readyAlertProviders.insert(provider) }
                case .notConfigured, nil:
                    contents.providers[provider] = .notConfigured
                case .unavailable(let reason):
                    contents.providers[provider] = .unavailable(reason)
                }
            }
            state.withLock { $0.batches[batch.id] = BatchWays(batch: batch, app: app, edition: edition, channels: channels, targets: targets) }
            return .batchRead(batch.id, contents)
        } catch let error as PushBuildError {
            let reason = "the \(batch.kind.rawValue) \(error.provider.displayName) push cannot be built: \(error.underlying)"
            return .batchUnreadable(batch.id, .broadcast(cause: "push", reason: reason))
        } catch let error as UnreadableRow {
            return .batchUnreadable(batch.id, .broadcast(cause: "data", reason: "\(error)"))
        } catch {
            return .batchUnreadable(batch.id, .database(String(reflecting: error)))
        }
    }

    func claimSlot(_ batch: LeasedBatch, from index: Int, remaining: Int, notBefore: Date?) async -> WorkerMachine.Event? {
        let logger = batchLogger(batch)
        do {
            let now = moment().now
            let start = try await stored {
                try await store.reclaimSlot(
                    batch,
                    from: index,
                    remaining: remaining,
                    owner: owner,
                    now: now,
                    notBefore: notBefore,
                    logger: logger
                )
            }
            guard let start else { return .leaseLost(batch.id) }
            return .slotClaimed(batch.id, start)
        } catch is CancellationError {
            return nil
        } catch {
            logger.warning("could not claim a new slot for a late batch; trying again", metadata: [LogKey.error: "\(String(reflecting: error))"])
            return .slotClaimFailed(batch.id, "\(error)")
        }
    }

    func renew(_ batches: [LeasedBatch]) async -> WorkerMachine.Event? {
        do {
            let now = moment().now
            let renewal = try await stored {
                try await store.renew(batches, owner: owner, duration: configuration.leaseDuration, now: now, logger: logger)
            }
            return .renewed(renewal)
        } catch is CancellationError {
            return nil
        } catch {
            logger.warning("could not renew leases", metadata: [LogKey.error: "\(String(reflecting: error))"])
            return .renewFailed("\(error)")
        }
    }

    func confirm(_ batch: LeasedBatch) async -> WorkerMachine.Event? {
        do {
            let now = moment().now
            let renewal = try await stored {
                try await store.renew([batch], owner: owner, duration: configuration.leaseDuration, now: now, logger: logger)
            }
            return .leaseConfirmed(batch.id, renewal)
        } catch is CancellationError {
            return nil
        } catch {
            batchLogger(batch).warning("could not confirm a lease; trying again", metadata: [LogKey.error: "\(String(reflecting: error))"])
            return .leaseConfirmFailed(batch.id, "\(error)")
        }
    }

    /// Reads the app's credentials for `provider` again, from the store and their file or variable; when they
    /// changed, the batch's channel is made again from the app as read now, and the batch is sent under the app as
    /// read now (its configuration version with it).
    func reload(_ batch: LeasedBatch, _ provider: PushProvider, refusedGeneration: Int) async -> WorkerMachine.Event {
        let logger = batchLogger(batch)
        let reload = await reloaded(batch, provider, refusedGeneration: refusedGeneration, logger: logger)
        logger.warning(
            "\(provider.displayName) refused this worker's credentials; they were read again",
            metadata: [LogKey.app: "\(batch.appID)", LogKey.provider: "\(provider.rawValue)", LogKey.result: "\(reload)"]
        )
        return .credentialsReloaded(batch.id, provider, reload)
    }

    private func reloaded(_ batch: LeasedBatch, _ provider: PushProvider, refusedGeneration: Int, logger: Logger) async -> BatchSendMachine.Reload {
        let app: Store.App?
        do {
            app = try await stored { try await store.app(id: batch.appID, logger: logger) }
        } catch {
            return .failed("app \(batch.appID): its credentials could not be read again: \(error)")
        }
        guard let app else { return .failed("app \(batch.appID) does not exist any more") }
        guard let reload = transport.reload(provider, app: app, environment: batch.environment, refusedGeneration: refusedGeneration) else {
            return .failed("this worker sends no \(provider.displayName)")
        }
        guard case .changed = reload, let edition = state.withLock({ $0.batches[batch.id]?.edition }) else { return reload }
        do {
            guard case .ready(let channel, _) = try transport.way(provider, for: batch, app: app, edition: edition) else {
                return .failed("app \(app.id): its \(provider.displayName) credentials could not be used after they were read again")
            }
            state.withLock {
                $0.batches[batch.id]?.channels[provider] = channel
                $0.batches[batch.id]?.app = app
            }
            return .changed(generation: channel.generation)
        } catch {
            return .failed("\(error)")
        }
    }

    /// Records the batch, or gives it back, as its machine ended it.
    func write(_ batch: LeasedBatch, _ completion: BatchSendMachine.Completion) async -> WorkerMachine.Event? {
        let logger = batchLogger(batch)
        do {
            let now = moment().now
            // The configuration the devices were sent under: "not valid" answers to one changed since are not the tokens'.
            let version = state.withLock { $0.batches[batch.id]?.app.credentialsVersion }
            let written: Bool
            switch completion {
            case .record(let outcomes):
                written = try await stored {
                    try await store.record(batch, outcomes: outcomes, owner: owner, configuration: version, now: now, logger: logger)
                }
            case .giveBack(let recorded, let returned, let because):
                written = try await stored {
                    try await store.giveBack(
                        batch,
                        recorded: recorded,
                        returned: returned,
                        because: because,
                        owner: owner,
                        configuration: version,
                        now: now,
                        logger: logger
                    )
                }
            case .abandon:
                return .leaseLost(batch.id)
            }
            return written ? .written(batch.id) : .leaseLost(batch.id)
        } catch is CancellationError {
            return nil
        } catch {
            logger.warning("could not record a batch; trying again", metadata: [LogKey.error: "\(String(reflecting: error))"])
            return .writeFailed(batch.id, "\(error)")
        }
    }

    /// Ends the batch's broadcast as failed: nothing of it can be sent, and retrying every batch until the deadline
    /// would only hide that in the logs. If the store cannot be told, the batch's lease expires and the next worker
    /// to lease it tries again.
    func fail(_ batch: LeasedBatch, cause: String, reason: String) async -> WorkerMachine.Event? {
        let logger = batchLogger(batch)
        logger.error("the broadcast cannot be sent; it ends as failed", metadata: [LogKey.reason: "\(reason)"])
        do {
            let now = moment().now
            if try await stored({ try await store.fail(broadcast: batch.broadcastID, reason: reason, now: now, logger: logger) }) {
                metrics.failed(cause: cause)
            }
        } catch {
            logger.error("could not mark the broadcast failed", metadata: [LogKey.error: "\(String(reflecting: error))"])
        }
        return nil
    }

    /// This worker cannot send for the app through the provider: said once per backoff, in the log and the store.
    func report(_ problem: SenderHealth.Problem) async -> WorkerMachine.Event? {
        logger.error(
            "this worker cannot send for the app; its batches are left to the other workers for a while",
            metadata: [
                LogKey.app: "\(problem.appID)", LogKey.provider: "\(problem.provider.rawValue)", LogKey.reason: "\(problem.reason)",
                LogKey.backoff: "\(Int(problem.retryAt - clock.monotonic()))s",
            ]
        )
        do {
            let now = moment().now
            try await stored { try await store.reportProblem(problem, worker: owner, now: now, logger: logger) }
        } catch {
            logger.warning("could not report that this worker cannot send for an app", metadata: [LogKey.error: "\(String(reflecting: error))"])
        }
        return nil
    }

    func reportSent(_ key: AppProvider, recovered: Bool) async -> WorkerMachine.Event? {
        if recovered {
            logger.notice("this worker sends for the app again", metadata: [LogKey.app: "\(key.appID)", LogKey.provider: "\(key.provider.rawValue)"])
        }
        do {
            let now = moment().now
            try await stored { try await store.reportSent(key, worker: owner, now: now, logger: logger) }
        } catch {
            logger.warning("could not report that this worker sent for an app", metadata: [LogKey.error: "\(String(reflecting: error))"])
        }
        return nil
    }

    /// Holds the app's provider for a suspected misconfiguration: sending through it stops on every worker and no
    /// device is deactivated, until an operator fixes the configuration or confirms the deactivations.
    func raise(_ suspicion: MisconfigurationGuard.Suspicion) async -> WorkerMachine.Event? {
        let metadata = suspicion.metadata
        do {
            let raised = try await stored { try await store.raise(suspicion, by: owner, logger: logger) }
            if raised {
                logger.critical(
                    "most devices of the app answer that their tokens are not valid for it: a misconfiguration is likely, so its sends through the provider are held and no device is deactivated; fix the configuration, then run paperboy apps release (or confirm the deactivations with paperboy apps confirm-deactivations)",
                    metadata: metadata
                )
            } else {
                // Already held by another worker, or the operator changed the app's configuration since these
                // answers' sends: they say nothing of the new one, and the hold an operator released stays released.
                logger.notice(
                    "most devices of the app answered that their tokens are not valid for it, but the provider is already held or its configuration changed since those sends: nothing new held",
                    metadata: metadata
                )
            }
            return .holdRaised(suspicion.key)
        } catch {
            logger.error(
                "could not hold the app's provider: asked again at the next heartbeat; this worker leaves its sends held meanwhile",
                metadata: [LogKey.error: "\(String(reflecting: error))"]
            )
            noteError("could not hold the app's provider", error)
            return .holdNotRaised(suspicion.key, "\(error)")
        }
    }

    /// Tells the store how this worker stands, and measures the store's clock (workers pace on it).
    func reportStatus() async -> WorkerMachine.Event? {
        let error = lastError.withLock { $0 }
        let (draining, held) = state.withLock { ($0.draining, $0.held) }
        let status = WorkerStatus(
            name: owner,
            startedAt: startedAt,
            seenAt: clock.now(),
            draining: draining,
            batches: held,
            problems: health.problems,
            pauses: health.pauses,
            lastError: error?.message,
            lastErrorAt: error?.at
        )
        do {
            let asked = clock.monotonic()
            let databaseNow = try await stored { try await store.report(status, logger: logger) }
            if let databaseNow { measure(databaseNow, askedAt: asked) }
        } catch is CancellationError {
            // The worker is stopping (SIGTERM, a deploy): the report it was making is of no use any more.
        } catch {
            logger.warning("could not report this worker's status", metadata: [LogKey.error: "\(String(reflecting: error))"])
        }
        return nil
    }

    /// The store's clock, from an answer that carried the store's `now` (the midpoint of the call, on the monotonic
    /// clock, is taken as the instant it was read): the worker's store time runs on from it on its monotonic clock, so
    /// that NTP stepping the wall clock between two measurements moves neither its slots nor its sends (found by the
    /// simulation's clock steps: `paperboy-sim`, seed 1324, a batch's pushes sent 1.47 s late, on top of the next
    /// batch's). Only when the store answers on its own clock (``WorkerStore/answersOnItsClock``).
    /// - Parameter asked: the monotonic seconds when the call was made.
    func measure(_ databaseNow: Date, askedAt asked: TimeInterval) {
        guard store.answersOnItsClock else { return }
        let answered = clock.monotonic()
        let midpoint = asked + (answered - asked) / 2
        state.withLock { $0.storeClock = (databaseNow, midpoint) }
    }
}
