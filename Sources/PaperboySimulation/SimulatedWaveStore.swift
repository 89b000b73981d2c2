import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch

/// The duties' way to the simulation's database for the real ``WaveDriver``: the ``ModelStore`` every worker shares
/// (its ``WaveStore`` conformance, the model of `PostgresWaveStore`'s statements), failing while the seed has the
/// database down.
///
/// Not thread-safe, and need not be: a simulation runs on one task, and nothing of it leaves that task.
final class SimulatedWaveStore: WaveStore, @unchecked Sendable {
    typealias Broadcast = DispatchModel.Broadcast
    typealias Locked = ModelLockedWaves

    unowned let simulation: Simulation

    init(simulation: Simulation) {
        self.simulation = simulation
    }

    private func reach() throws -> ModelStore {
        if let down = simulation.databaseDown, simulation.now >= down.from && simulation.now < down.until {
            simulation.covered.insert("databaseError")
            throw SimulatedDatabaseDown()
        }
        return simulation.database
    }

    func endedBroadcastsWithUncountedPushes(logger: Logger) async throws -> [DispatchModel.Broadcast] {
        try await reach().endedBroadcastsWithUncountedPushes(logger: logger)
    }

    func countPushes(of broadcast: DispatchModel.Broadcast, logger: Logger) async throws -> WavePushCount {
        let count = try await reach().countPushes(of: broadcast, logger: logger)
        if count.dormant > 0 { simulation.covered.insert("countedDormant") }
        return count
    }

    func runningBroadcastIDs(logger: Logger) async throws -> [UUID] {
        try await reach().runningBroadcastIDs(logger: logger)
    }

    func withLockedBroadcast<Result: Sendable>(
        _ id: UUID,
        logger: Logger,
        _ body: (ModelLockedWaves) async throws -> Result
    ) async throws -> Result? {
        try await reach().withLockedBroadcast(id, logger: logger, body)
    }

    func storedCounts(broadcastID: UUID, wave: Int, logger: Logger) async throws -> WavePolicy.Counts? {
        try await reach().storedCounts(broadcastID: broadcastID, wave: wave, logger: logger)
    }

    func claimCount(broadcastID: UUID, wave: Int, owner: String, seconds: Double, logger: Logger) async throws -> Bool {
        try await reach().claimCount(broadcastID: broadcastID, wave: wave, owner: owner, seconds: seconds, logger: logger)
    }

    func storeCounts(_ counts: WavePolicy.Counts, broadcastID: UUID, wave: Int, owner: String, now: Date, logger: Logger) async throws {
        try await reach().storeCounts(counts, broadcastID: broadcastID, wave: wave, owner: owner, now: now, logger: logger)
    }

    func recordMembers(of broadcast: DispatchModel.Broadcast, wave: Int, kind: BroadcastProgress.Wave.Kind, logger: Logger) async throws -> [Int] {
        let counted = try await reach().recordMembers(of: broadcast, wave: wave, kind: kind, logger: logger)
        if counted.contains(where: { $0 > 0 }) { simulation.covered.insert("wave\(min(wave, 3))Counted") }
        return counted
    }
}
