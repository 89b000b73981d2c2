import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch

/// ``DispatchModel`` as a worker's store: the ``WorkerStore`` protocol PostgreSQL's store conforms to, over the model.
/// The simulation's workers reach it through ``SimulatedStore`` (which adds the seed's database faults); the contract
/// suite runs the same test functions against it and against PostgreSQL.
///
/// Not thread-safe, and need not be: a simulation runs on one task, and a test uses it from one.
public final class ModelStore: WorkerStore, @unchecked Sendable {
    public typealias App = SimulatedApp
    public typealias Edition = UUID

    public var model: DispatchModel
    /// The database's own clock (PostgreSQL's `now()`).
    public var clock: () -> Date
    /// As `BroadcastRepository.leaseClock`: true, leases, slots and records are on ``clock`` whatever instant the
    /// worker gives (production's `.database`); false, on the worker's (a test's `.caller`).
    public let answersOnItsClock: Bool

    public init(model: DispatchModel = DispatchModel(), answersOnItsClock: Bool, clock: @escaping () -> Date = { Date() }) {
        self.model = model
        self.answersOnItsClock = answersOnItsClock
        self.clock = clock
    }

    /// The instant a lease, slot or record is written at (`BroadcastRepository.leaseNow`).
    func leaseNow(_ now: Date) -> Date {
        answersOnItsClock ? clock() : now
    }

    public func lease(_ query: LeaseQuery, logger: Logger) async throws -> StoreLease? {
        let now = leaseNow(query.now)
        guard
            var batch = model.lease(
                owner: query.owner,
                now: now,
                lookahead: query.lookahead,
                duration: query.duration,
                batchDuration: query.batchDuration,
                maxBatchSize: query.maxBatchSize,
                excluding: query.excludingBatches,
                excludingApps: query.excludingApps,
                excludingProviders: query.excludingProviders,
                takeOver: query.takeOver,
                takeOverGrace: query.takeOverGrace
            )
        else { return nil }
        batch.leasedAt = now
        return StoreLease(batch: batch)
    }

    public func targets(of batch: LeasedBatch, now: Date, logger: Logger) async throws -> [BatchTarget] {
        model.targets(of: batch, now: now)
    }

    public func app(id: Int, logger: Logger) async throws -> SimulatedApp? {
        guard let providers = model.appProviders[id] else { return nil }
        return SimulatedApp(id: id, credentialsVersion: model.appVersions[id, default: 0], providers: providers)
    }

    /// The model keeps no editions' contents: an edition is its id, found when a broadcast sends it.
    public func edition(id: UUID, logger: Logger) async throws -> UUID? {
        model.broadcasts.values.contains { $0.edition == id } ? id : nil
    }

    public func standing(appID: Int, environment: APNsEnvironment, logger: Logger) async throws -> ProviderStanding {
        var held: [PushProvider: String] = [:]
        for provider in PushProvider.allCases {
            if let hold = model.holds[HoldKey(appID: appID, environment: environment, provider: provider)] { held[provider] = hold.reason }
        }
        return ProviderStanding(held: held, confirmed: model.confirmed(appID: appID, environment: environment, now: clock()))
    }

    public func reclaimSlot(
        _ batch: LeasedBatch,
        from index: Int,
        remaining: Int,
        owner: String,
        now: Date,
        notBefore: Date?,
        logger: Logger
    ) async throws -> Date? {
        model.reclaimSlot(batch, from: index, remaining: remaining, owner: owner, now: leaseNow(now), notBefore: notBefore)
    }

    public func renew(_ batches: [LeasedBatch], owner: String, duration: TimeInterval, now: Date, logger: Logger) async throws -> LeaseRenewal {
        model.renew(batches, owner: owner, duration: duration, now: leaseNow(now))
    }

    public func record(
        _ batch: LeasedBatch,
        outcomes: [BatchOutcome],
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        model.record(batch, outcomes: outcomes, owner: owner, configuration: configuration, now: leaseNow(now))
    }

    public func giveBack(
        _ batch: LeasedBatch,
        recorded: [BatchOutcome],
        returned: [Int],
        because: BatchSendMachine.GiveBack,
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        model.giveBack(
            batch,
            recorded: recorded,
            firstReturned: returned.first ?? 0,
            returned: returned.count,
            because: because.description,
            providers: because.providerList,
            held: because.heldProviders,
            owner: owner,
            configuration: configuration,
            now: leaseNow(now)
        )
    }

    public func fail(broadcast: UUID, reason: String, now: Date, logger: Logger) async throws -> Bool {
        model.fail(broadcast, reason: reason, now: now)
    }

    public func reportProblem(_ problem: SenderHealth.Problem, worker: String, now: Date, logger: Logger) async throws {
        model.reportProblem(appID: problem.appID, provider: problem.provider, worker: worker, problem: problem.reason, now: now)
    }

    public func reportSent(_ key: AppProvider, worker: String, now: Date, logger: Logger) async throws {
        model.reportSent(appID: key.appID, provider: key.provider, worker: worker, now: now)
    }

    public func raise(_ suspicion: MisconfigurationGuard.Suspicion, by worker: String, logger: Logger) async throws -> Bool {
        raiseHold(suspicion, by: worker)
    }

    /// ``raise(_:by:logger:)`` without a task: the simulation's per-second duties raise the fleet rule's holds too.
    public func raiseHold(_ suspicion: MisconfigurationGuard.Suspicion, by worker: String) -> Bool {
        model.raiseHold(
            appID: suspicion.appID,
            environment: suspicion.environment,
            provider: suspicion.provider,
            answer: suspicion.answer,
            reason: suspicion.reason,
            by: worker,
            version: suspicion.version
        )
    }

    public func report(_ status: WorkerStatus, logger: Logger) async throws -> Date? {
        clock()
    }
}

/// An app as the model's workers read it: its providers and its configuration version.
public struct SimulatedApp: WorkerApp, Equatable {
    public var id: Int
    public var credentialsVersion: Int
    public var providers: Set<PushProvider>
}
