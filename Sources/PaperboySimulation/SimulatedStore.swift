import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch

/// One worker's way to the simulation's database: the ``ModelStore`` every worker shares, reached at the instant the
/// seed drew for each call, failing while the seed has the database down, and losing a commit's answer now and then.
/// What each call went through is noted for coverage, and who held which batch for the invariants.
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

    var answersOnItsClock: Bool { simulation.database.answersOnItsClock }

    /// The database, as the seed has it now: throws while it is down.
    private func reach() throws -> ModelStore {
        if let down = simulation.databaseDown, simulation.now >= down.from && simulation.now < down.until {
            simulation.covered.insert("databaseError")
            throw SimulatedDatabaseDown()
        }
        return simulation.database
    }

    /// A write that committed, and whose answer the seed may lose on the way back.
    private func committed<Value>(_ value: Value) throws -> Value {
        if simulation.random.chance(simulation.scenario.lostCommitChance) {
            simulation.covered.insert("lostCommit")
            throw SimulatedCommitAnswerLost()
        }
        return value
    }

    /// A call that committed and, on a slow database, answered after the worker gave up on it.
    private func slow<Value>(_ value: Value) throws -> Value {
        try committed(value)
    }

    /// The database's clock as a worker reads it from an answer: a few milliseconds off, as a round trip measures it.
    private func measured(_ instant: Date) -> Date {
        instant.addingTimeInterval(simulation.random.between(-0.01...0.01))
    }

    func lease(_ query: LeaseQuery, logger: Logger) async throws -> StoreLease? {
        guard var lease = try await reach().lease(query, logger: logger) else { return nil }
        let batch = lease.batch
        if batch.leases > 1 {
            simulation.covered.insert("takeover")
            // Taken from a worker that is stopped or dead: what it wrote of the batch may be sent again.
            for other in simulation.workers.indices
            where other != worker && simulation.workers[other].held.contains(batch.id) && simulation.workers[other].life != .running {
                simulation.workers[other].abandoned.insert(batch.id)
            }
        }
        // A slow database: the lease committed, and its answer came after the worker gave up on the call. The batch
        // is this worker's in the store, unknown to it: another worker takes it over once the lease expires.
        if simulation.random.chance(simulation.scenario.lostCommitChance) {
            simulation.covered.insert("leaseAnswerLost")
            throw SimulatedCommitAnswerLost()
        }
        lease.batch.leasedAt = batch.leasedAt.map(measured)
        simulation.workers[worker].held.insert(batch.id)
        return lease
    }

    func targets(of batch: LeasedBatch, now: Date, logger: Logger) async throws -> [BatchTarget] {
        try await reach().targets(of: batch, now: now, logger: logger)
    }

    func app(id: Int, logger: Logger) async throws -> SimulatedApp? {
        try await reach().app(id: id, logger: logger)
    }

    func edition(id: UUID, logger: Logger) async throws -> UUID? {
        try await reach().edition(id: id, logger: logger)
    }

    func standing(appID: Int, environment: APNsEnvironment, logger: Logger) async throws -> ProviderStanding {
        try await reach().standing(appID: appID, environment: environment, logger: logger)
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
        let database = try reach()
        simulation.covered.insert("slotClaim")
        return try slow(
            try await database.reclaimSlot(batch, from: index, remaining: remaining, owner: owner, now: now, notBefore: notBefore, logger: logger)
        )
    }

    func renew(_ batches: [LeasedBatch], owner: String, duration: TimeInterval, now: Date, logger: Logger) async throws -> LeaseRenewal {
        try slow(try await reach().renew(batches, owner: owner, duration: duration, now: now, logger: logger))
    }

    func record(
        _ batch: LeasedBatch,
        outcomes: [BatchOutcome],
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        try committed(
            try await reach().record(batch, outcomes: outcomes, owner: owner, configuration: configuration, now: now, logger: logger)
        )
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
        let written = try await reach().giveBack(
            batch,
            recorded: recorded,
            returned: returned,
            because: because,
            owner: owner,
            configuration: configuration,
            now: now,
            logger: logger
        )
        return try committed(written)
    }

    func fail(broadcast: UUID, reason: String, now: Date, logger: Logger) async throws -> Bool {
        try await reach().fail(broadcast: broadcast, reason: reason, now: now, logger: logger)
    }

    func reportProblem(_ problem: SenderHealth.Problem, worker: String, now: Date, logger: Logger) async throws {
        try await reach().reportProblem(problem, worker: worker, now: now, logger: logger)
    }

    func reportSent(_ key: AppProvider, worker: String, now: Date, logger: Logger) async throws {
        try await reach().reportSent(key, worker: worker, now: now, logger: logger)
    }

    func raise(_ suspicion: MisconfigurationGuard.Suspicion, by worker: String, logger: Logger) async throws -> Bool {
        _ = try reach()
        simulation.covered.insert("hold")
        return simulation.raiseHold(suspicion, by: worker)
    }

    func report(_ status: WorkerStatus, logger: Logger) async throws -> Date? {
        try await reach().report(status, logger: logger).map(measured)
    }
}

struct SimulatedDatabaseDown: Error, CustomStringConvertible {
    var description: String { "database down" }
}

struct SimulatedCommitAnswerLost: Error, CustomStringConvertible {
    var description: String { "the COMMIT's answer was lost" }
}
