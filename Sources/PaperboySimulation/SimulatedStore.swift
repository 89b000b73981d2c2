import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch

/// One worker's view of the simulation's database: ``DispatchModel`` behind the same ``WorkerStore`` protocol as
/// PostgreSQL, called by the real ``WorkerExecutor``. Every call happens at the instant the simulation's seed drew
/// for it to reach the database, on the database's clock (the simulation's `now`), and fails while the seed has the
/// database down; a write may commit and lose its answer. What each call went through is noted for coverage.
///
/// Not thread-safe, and need not be: a simulation runs on one task, and nothing of it leaves that task.
final class SimulatedStore: WorkerStore, @unchecked Sendable {
    typealias App = SimulatedApp
    typealias Edition = UUID

    unowned let simulation: Simulation
    let worker: Int

    init(simulation: Simulation, worker: Int) {
        self.simulation = simulation
        self.worker = worker
    }

    /// The model's instants are the database's own clock, as PostgreSQL's `now()` is.
    var answersOnItsClock: Bool { true }

    /// The database, as the seed has it now: throws while it is down.
    private func reach() throws -> Simulation {
        let simulation = simulation
        if let down = simulation.databaseDown, simulation.now >= down.from && simulation.now < down.until {
            simulation.covered.insert("databaseError")
            throw SimulatedDatabaseDown()
        }
        return simulation
    }

    /// A write that committed, and whose answer the seed may lose on the way back.
    private func committed<Value>(_ value: Value) throws -> Value {
        if simulation.random.chance(simulation.scenario.lostCommitChance) {
            simulation.covered.insert("lostCommit")
            throw SimulatedCommitAnswerLost()
        }
        return value
    }

    /// The database's clock as a worker reads it from an answer: a few milliseconds off, as a round trip measures it.
    private func answeredNow() -> Date {
        simulation.now.addingTimeInterval(simulation.random.between(-0.01...0.01))
    }

    func lease(_ query: LeaseQuery, logger: Logger) async throws -> StoreLease? {
        let simulation = try reach()
        let owner = simulation.workers[worker].name
        guard
            var batch = simulation.model.lease(
                owner: owner,
                now: simulation.now,
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
        batch.leasedAt = answeredNow()
        if batch.leases > 1 {
            simulation.covered.insert("takeover")
            // Taken from a worker that is stopped or dead: what it wrote of the batch may be sent again.
            for other in simulation.workers.indices
            where other != worker && simulation.workers[other].held.contains(batch.id) && simulation.workers[other].life != .running {
                simulation.workers[other].abandoned.insert(batch.id)
            }
        }
        simulation.workers[worker].held.insert(batch.id)
        return StoreLease(batch: batch)
    }

    func targets(of batch: LeasedBatch, now: Date, logger: Logger) async throws -> [BatchTarget] {
        let simulation = try reach()
        return simulation.model.targets(of: batch, now: simulation.now)
    }

    func app(id: Int, logger: Logger) async throws -> SimulatedApp? {
        let model = try reach().model
        guard let providers = model.appProviders[id] else { return nil }
        return SimulatedApp(id: id, credentialsVersion: model.appVersions[id, default: 0], providers: providers)
    }

    func edition(id: UUID, logger: Logger) async throws -> UUID? {
        _ = try reach()
        return id
    }

    func standing(appID: Int, environment: APNsEnvironment, logger: Logger) async throws -> ProviderStanding {
        let simulation = try reach()
        var held: [PushProvider: String] = [:]
        for provider in PushProvider.allCases {
            if let hold = simulation.model.holds[HoldKey(appID: appID, environment: environment, provider: provider)] { held[provider] = hold.reason }
        }
        return ProviderStanding(held: held, confirmed: simulation.model.confirmed(appID: appID, environment: environment, now: simulation.now))
    }

    func reclaimSlot(
        _ batch: LeasedBatch,
        from index: Int,
        remaining: Int,
        owner: String,
        now: Date,
        notBefore: Date?,
        logger: Logger
    ) async throws -> Date? {
        let simulation = try reach()
        simulation.covered.insert("slotClaim")
        return simulation.model.reclaimSlot(batch, from: index, remaining: remaining, owner: owner, now: simulation.now, notBefore: notBefore)
    }

    func renew(_ batches: [LeasedBatch], owner: String, duration: TimeInterval, now: Date, logger: Logger) async throws -> LeaseRenewal {
        let simulation = try reach()
        return simulation.model.renew(batches, owner: owner, duration: duration, now: simulation.now)
    }

    func record(
        _ batch: LeasedBatch,
        outcomes: [BatchOutcome],
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        let simulation = try reach()
        return try committed(simulation.model.record(batch, outcomes: outcomes, owner: owner, configuration: configuration, now: simulation.now))
    }

    func giveBack(
        _ batch: LeasedBatch,
        recorded: [BatchOutcome],
        returned: [Int],
        because: BatchSendMachine.GiveBack,
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        let simulation = try reach()
        let written = simulation.model.giveBack(
            batch,
            recorded: recorded,
            firstReturned: returned.first ?? 0,
            returned: returned.count,
            because: because.description,
            providers: because.providerList,
            held: because.heldProviders,
            owner: owner,
            configuration: configuration,
            now: simulation.now
        )
        return try committed(written)
    }

    func fail(broadcast: UUID, reason: String, now: Date, logger: Logger) async throws -> Bool {
        let simulation = try reach()
        return simulation.model.fail(broadcast, reason: reason, now: simulation.now)
    }

    func reportProblem(_ problem: SenderHealth.Problem, worker: String, now: Date, logger: Logger) async throws {
        let simulation = try reach()
        simulation.model.reportProblem(appID: problem.appID, provider: problem.provider, worker: worker, problem: problem.reason, now: simulation.now)
    }

    func reportSent(_ key: AppProvider, worker: String, now: Date, logger: Logger) async throws {
        let simulation = try reach()
        simulation.model.reportSent(appID: key.appID, provider: key.provider, worker: worker, now: simulation.now)
    }

    func raise(_ suspicion: MisconfigurationGuard.Suspicion, by worker: String, logger: Logger) async throws -> Bool {
        let simulation = try reach()
        simulation.covered.insert("hold")
        return simulation.raiseHold(suspicion, by: worker)
    }

    func report(_ status: WorkerStatus, logger: Logger) async throws -> Date? {
        _ = try reach()
        return answeredNow()
    }
}

/// An app as the simulated workers read it: its providers and its configuration version.
struct SimulatedApp: WorkerApp {
    var id: Int
    var credentialsVersion: Int
    var providers: Set<PushProvider>
}

struct SimulatedDatabaseDown: Error, CustomStringConvertible {
    var description: String { "database down" }
}

struct SimulatedCommitAnswerLost: Error, CustomStringConvertible {
    var description: String { "the COMMIT's answer was lost" }
}
