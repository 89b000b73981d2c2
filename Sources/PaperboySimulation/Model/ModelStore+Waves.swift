import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch

/// ``DispatchModel`` as the wave driver's store: the ``WaveStore`` protocol `PostgresWaveStore` conforms to. The
/// simulation's duties reach it through ``SimulatedWaveStore`` (which adds the seed's database faults); the contract
/// suite runs the same test function against it and against PostgreSQL.
extension ModelStore: WaveStore {
    public typealias Broadcast = DispatchModel.Broadcast
    public typealias Locked = ModelLockedWaves

    public func endedBroadcastsWithUncountedPushes(logger: Logger) async throws -> [DispatchModel.Broadcast] {
        model.endedBroadcastsWithUncountedPushes()
    }

    /// As `countAllPushes`, at most 16 statements a call; the model counts 16 recorded batches a statement as they
    /// are. PostgreSQL sorts them by key first and counts a key range a statement (migration 0039): what each
    /// statement costs, not what is counted.
    public func countPushes(of broadcast: DispatchModel.Broadcast, logger: Logger) async throws -> WavePushCount {
        var total = WavePushCount()
        for _ in 0..<16 {
            let count = model.countPushes(broadcast.id, batches: 16)
            guard count.batches > 0 else { break }
            total = WavePushCount(
                batches: total.batches + count.batches,
                devices: total.devices + count.devices,
                dormant: total.dormant + count.dormant
            )
        }
        return total
    }

    public func runningBroadcastIDs(logger: Logger) async throws -> [UUID] {
        model.runningBroadcastIDs()
    }

    public func withLockedBroadcast<Result: Sendable>(
        _ id: UUID,
        logger: Logger,
        _ body: (ModelLockedWaves) async throws -> Result
    ) async throws -> Result? {
        guard let rows = model.locked(id) else { return nil }
        return try await body(
            ModelLockedWaves(
                store: self,
                broadcast: rows.broadcast,
                waves: rows.waves,
                firstWaveCohorts: rows.broadcast.firstWave,
                lastWaveHasWorkLeft: rows.workLeft,
                firstWavePushesUncounted: model.hasUncountedPushes(id)
            )
        )
    }

    public func storedCounts(broadcastID: UUID, wave: Int, logger: Logger) async throws -> WavePolicy.Counts? {
        model.storedCounts(broadcastID, wave: wave)
    }

    public func claimCount(broadcastID: UUID, wave: Int, owner: String, seconds: Double, logger: Logger) async throws -> Bool {
        model.claimCount(broadcastID, wave: wave, owner: owner, seconds: seconds, now: clock())
    }

    public func storeCounts(_ counts: WavePolicy.Counts, broadcastID: UUID, wave: Int, owner: String, now: Date, logger: Logger) async throws {
        model.storeCounts(counts, broadcast: broadcastID, wave: wave, owner: owner)
    }

    public func recordMembers(
        of broadcast: DispatchModel.Broadcast,
        wave: Int,
        kind: BroadcastProgress.Wave.Kind,
        logger: Logger
    ) async throws -> [Int] {
        model.recordMembers(broadcast.id, wave: wave, kind: kind, now: clock())
    }
}

/// A running broadcast's rows as the driver reads them under the lock, and its writes, on the model.
public struct ModelLockedWaves: LockedWaves, @unchecked Sendable {
    let store: ModelStore
    public let broadcast: DispatchModel.Broadcast
    public let waves: [StoredWave]
    public let firstWaveCohorts: [StaggerPlan.Cohort]
    public let lastWaveHasWorkLeft: Bool
    public let firstWavePushesUncounted: Bool

    public func finishWave(_ wave: Int, now: Date) async throws {
        store.model.finishWave(broadcast.id, wave: wave, now: now)
    }

    public func startWave(_ wave: Int, kind: BroadcastProgress.Wave.Kind, plan: StaggerPlan, now: Date) async throws {
        store.model.startWave(broadcast.id, wave: wave, kind: kind, plan: plan, now: now)
    }

    public func finish(_ state: BroadcastProgress.State, now: Date) async throws {
        store.model.end(broadcast.id, as: state, now: now)
    }
}

extension DispatchModel.Broadcast: WaveBroadcast {}
