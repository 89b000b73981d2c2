import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore

/// The worker's store in production: every statement a worker runs, in PostgreSQL, each given up as failed
/// (``DatabaseCallUnanswered``) after `patience`. A safeguard, in wall-clock time: PostgresNIO can leave a query on a
/// connection the server just closed (a restart, a failover) unanswered for ever, and a worker waiting on it would
/// hold its batch, or stop leasing, for good.
package struct PostgresWorkerStore: WorkerStore {
    let repository: BroadcastRepository
    let editions: EditionRepository
    let apps: AppRepository
    let holds: ProviderHoldRepository
    let senders: SenderStatusRepository
    let workers: WorkerRepository
    let patience: Duration

    package init(repository: BroadcastRepository, editions: EditionRepository, patience: Duration) {
        self.repository = repository
        self.editions = editions
        self.apps = AppRepository(client: repository.client)
        self.holds = ProviderHoldRepository(client: repository.client)
        self.senders = SenderStatusRepository(client: repository.client)
        self.workers = WorkerRepository(client: repository.client)
        self.patience = patience
    }

    /// Leases are on the database's clock in production; on the caller's in tests that move a clock of their own.
    package var answersOnItsClock: Bool { repository.leaseClock == .database }

    private func call<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await answered(within: patience, operation)
    }

    package func lease(_ query: LeaseQuery, logger: Logger) async throws -> StoreLease? {
        try await call {
            try await repository.leaseReading(
                owner: query.owner,
                now: query.now,
                lookahead: query.lookahead,
                duration: query.duration,
                batchDuration: query.batchDuration,
                maxBatchSize: query.maxBatchSize,
                excluding: query.excludingBatches,
                excludingApps: query.excludingApps,
                excludingProviders: query.excludingProviders.map { ($0.appID, $0.provider) },
                takeOver: query.takeOver,
                takeOverGrace: query.takeOverGrace,
                logger: logger
            ).map { StoreLease(batch: $0.batch, targets: $0.targets) }
        }
    }

    package func targets(of batch: LeasedBatch, now: Date, logger: Logger) async throws -> [BatchTarget] {
        try await call { try await repository.targets(of: batch, now: now, logger: logger) }
    }

    package func app(id: Int, logger: Logger) async throws -> App? {
        try await call { try await apps.find(id: id, logger: logger) }
    }

    package func edition(id: UUID, logger: Logger) async throws -> Edition? {
        try await call { try await editions.find(id: id, logger: logger) }
    }

    package func standing(appID: Int, environment: APNsEnvironment, logger: Logger) async throws -> ProviderStanding {
        let (held, confirmed) = try await call { try await holds.standing(appID: appID, environment: environment, logger: logger) }
        return ProviderStanding(
            held: Dictionary(held.map { ($0.provider, $0.reason) }, uniquingKeysWith: { first, _ in first }),
            confirmed: confirmed
        )
    }

    package func reclaimSlot(
        _ batch: LeasedBatch,
        from index: Int,
        remaining: Int,
        owner: String,
        now: Date,
        notBefore: Date?,
        logger: Logger
    ) async throws -> Date? {
        try await call {
            try await repository.reclaimSlot(batch, from: index, remaining: remaining, owner: owner, now: now, notBefore: notBefore, logger: logger)
        }
    }

    package func renew(_ batches: [LeasedBatch], owner: String, duration: TimeInterval, now: Date, logger: Logger) async throws -> LeaseRenewal {
        try await call { try await repository.renew(batches, owner: owner, duration: duration, now: now, logger: logger) }
    }

    package func record(
        _ batch: LeasedBatch,
        outcomes: [BatchOutcome],
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        try await call {
            try await repository.record(batch, outcomes: outcomes, owner: owner, configuration: configuration, now: now, logger: logger)
        }
    }

    package func giveBack(
        _ batch: LeasedBatch,
        recorded: [BatchOutcome],
        returned: [Int],
        because: BatchSendMachine.GiveBack,
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        try await call {
            try await repository.giveBack(
                batch,
                recorded: recorded,
                firstReturned: returned.first ?? 0,
                returned: returned.count,
                because: because.description,
                providers: because.providerList,
                held: because.heldProviders,
                owner: owner,
                configuration: configuration,
                now: now,
                logger: logger
            )
        }
    }

    package func fail(broadcast: UUID, reason: String, now: Date, logger: Logger) async throws -> Bool {
        try await call { try await repository.fail(id: broadcast, reason: reason, now: now, logger: logger) }
    }

    package func reportProblem(_ problem: SenderHealth.Problem, worker: String, now: Date, logger: Logger) async throws {
        try await call {
            try await senders.reportProblem(
                appID: problem.appID,
                provider: problem.provider,
                worker: worker,
                problem: problem.reason,
                now: now,
                logger: logger
            )
        }
    }

    package func reportSent(_ key: AppProvider, worker: String, now: Date, logger: Logger) async throws {
        try await call { try await senders.reportSent(appID: key.appID, provider: key.provider, worker: worker, now: now, logger: logger) }
    }

    package func raise(_ suspicion: MisconfigurationGuard.Suspicion, by worker: String, logger: Logger) async throws -> Bool {
        try await call { try await holds.raise(suspicion, by: worker, logger: logger) }
    }

    package func report(_ status: WorkerStatus, logger: Logger) async throws -> Date? {
        try await call { try await workers.report(status, logger: logger) }
    }
}

extension App: WorkerApp {}

/// The worker's transport in production: the providers it sends through (``ProviderChannels`` of each: the HTTP/2
/// clients with their retry policies and answer rules), one entry per provider, whatever they are.
struct ProviderTransport: WorkerTransport {
    let providers: [PushProvider: any PushChannels]

    init(_ providers: [any PushChannels]) {
        self.providers = Dictionary(providers.map { ($0.provider, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func configuredProviders(for app: App) -> Set<PushProvider> {
        Set(providers.values.filter { $0.isConfigured(for: app) }.map(\.provider))
    }

    func way(_ provider: PushProvider, for batch: LeasedBatch, app: App, edition: Edition) throws(PushBuildError) -> BatchWay? {
        try providers[provider]?.way(for: batch, app: app, edition: edition)
    }

    func reload(_ provider: PushProvider, app: App, environment: APNsEnvironment, refusedGeneration: Int) -> BatchSendMachine.Reload? {
        providers[provider]?.reload(app: app, environment: environment, refusedGeneration: refusedGeneration)
    }
}
