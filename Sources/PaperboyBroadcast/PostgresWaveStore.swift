import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore

/// Production's ``WaveStore``: the statements that move a broadcast from wave to wave, in PostgreSQL
/// (``BroadcastRepository`` and ``CohortRepository``), for the ``WaveDriver`` every worker's duties run.
struct PostgresWaveStore: WaveStore {
    typealias Broadcast = PaperboyStore.Broadcast
    typealias Locked = LockedBroadcast

    let repository: BroadcastRepository
    let cohorts: CohortRepository

    init(repository: BroadcastRepository) {
        self.repository = repository
        self.cohorts = CohortRepository(client: repository.client)
    }

    func endedBroadcastsWithUncountedPushes(logger: Logger) async throws -> [Broadcast] {
        try await repository.endedBroadcastsWithUncountedPushes(logger: logger)
    }

    /// 16 statements at most per call: about 1,000 recorded batches sorted by key, or 16 key ranges counted (the rest on
    /// the next round).
    func countPushes(of broadcast: Broadcast, logger: Logger) async throws -> WavePushCount {
        let count = try await repository.countAllPushes(of: broadcast, logger: logger)
        return WavePushCount(batches: count.sorted, ranges: count.ranges, devices: count.devices, dormant: count.dormant)
    }

    func runningBroadcastIDs(logger: Logger) async throws -> [UUID] {
        try await repository.runningBroadcastIDs(logger: logger)
    }

    func withLockedBroadcast<Result: Sendable>(
        _ id: UUID,
        logger: Logger,
        _ body: (LockedBroadcast) async throws -> Result
    ) async throws -> Result? {
        try await repository.withLockedBroadcast(id, logger: logger, body)
    }

    func storedCounts(broadcastID: UUID, wave: Int, logger: Logger) async throws -> WavePolicy.Counts? {
        guard let stored = try await repository.storedCounts(broadcastID: broadcastID, wave: wave, logger: logger) else { return nil }
        var perCohort: [BroadcastProgress.Wave.Kind: [Int]] = [:]
        for (kind, counts) in stored.perCohort {
            if let kind = BroadcastProgress.Wave.Kind(rawValue: kind) { perCohort[kind] = counts }
        }
        return WavePolicy.Counts(afterWave: wave - 1, perCohort: perCohort, countedAt: stored.countedAt)
    }

    func claimCount(broadcastID: UUID, wave: Int, owner: String, seconds: Double, logger: Logger) async throws -> Bool {
        try await repository.claimCount(broadcastID: broadcastID, wave: wave, owner: owner, seconds: seconds, logger: logger)
    }

    func storeCounts(_ counts: WavePolicy.Counts, broadcastID: UUID, wave: Int, owner: String, now: Date, logger: Logger) async throws {
        let stored = BroadcastRepository.StoredCounts(
            perCohort: Dictionary(uniqueKeysWithValues: counts.perCohort.map { ($0.key.rawValue, $0.value) }),
            countedAt: counts.countedAt ?? now
        )
        try await repository.storeCounts(stored, broadcastID: broadcastID, wave: wave, owner: owner, logger: logger)
    }

    func recordMembers(of broadcast: Broadcast, wave: Int, kind: BroadcastProgress.Wave.Kind, logger: Logger) async throws -> [Int] {
        try await cohorts.recordMembers(
            of: WaveAudience(broadcast, wave: wave, kind: kind),
            broadcastID: broadcast.id,
            cohorts: broadcast.options.cohorts,
            logger: logger
        )
    }
}

extension PaperboyStore.Broadcast: WaveBroadcast {}
extension LockedBroadcast: LockedWaves {}

/// Production's wave driver: over PostgreSQL.
typealias WaveAdvancer = WaveDriver<PostgresWaveStore>
