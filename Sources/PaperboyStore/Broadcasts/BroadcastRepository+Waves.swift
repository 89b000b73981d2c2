import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

/// A running broadcast held under its row lock (`FOR UPDATE`), with the rows that decide what comes next and
/// the writes that may follow. The decisions are not the Store's: `PaperboyBroadcast`'s wave policy makes them.
public struct LockedBroadcast: Sendable {
    public let broadcast: Broadcast
    /// Its waves, in order.
    public let waves: [StoredWave]
    /// Wave 1's cohorts as planned (their slots and devices), in cohort order.
    public let firstWaveCohorts: [StaggerPlan.Cohort]
    /// Whether the last wave still has devices to carve into batches, or batches not yet recorded.
    public let lastWaveHasWorkLeft: Bool
    /// Whether wave 1 has recorded pushes not yet counted towards dormancy (``BroadcastRepository/countPushes(of:batches:logger:)``).
    public let firstWavePushesUncounted: Bool
    let connection: PostgresConnection
    let logger: Logger

    /// Marks `wave` finished at `now`.
    public func finishWave(_ wave: Int, now: Date) async throws {
        try await connection.query(
            "UPDATE broadcast_waves SET finished_at = \(now) WHERE broadcast_id = \(broadcast.id) AND wave = \(Int16(wave))",
            logger: logger
        )
    }

    /// Stores wave `wave` with its plan and cohorts.
    public func startWave(_ wave: Int, kind: BroadcastProgress.Wave.Kind, plan: StaggerPlan, now: Date) async throws {
        try await BroadcastRepository.insertWave(
            wave,
            kind: kind,
            plan: plan,
            cohorts: broadcast.options.cohorts,
            broadcastID: broadcast.id,
            on: connection,
            logger: logger
        )
        try await connection.query("UPDATE broadcasts SET updated_at = \(now) WHERE id = \(broadcast.id)", logger: logger)
    }

    /// Ends the broadcast in `state` (`completed` or `expired`).
    public func finish(_ state: BroadcastProgress.State, now: Date) async throws {
        try await connection.query(
            "UPDATE broadcasts SET state = \(state.rawValue), finished_at = \(now), updated_at = \(now) WHERE id = \(broadcast.id)",
            logger: logger
        )
    }
}

extension BroadcastRepository {
    /// The ids of the running broadcasts.
    public func runningBroadcastIDs(logger: Logger) async throws -> [UUID] {
        let rows = try await client.query(RequestStatements.runningBroadcasts, logger: logger)
        var ids: [UUID] = []
        for try await id in rows.decode(UUID.self) { ids.append(id) }
        return ids
    }

    /// Runs `body` in one transaction with the broadcast locked, when it is running and no other worker holds
    /// it (that one is advancing it): nil otherwise, without waiting.
    ///
    /// Hold the lock briefly: it holds off a cancel and every delivery recorded for the broadcast (their
    /// foreign key check shares the row). Count audiences outside it.
    public func withLockedBroadcast<Result: Sendable>(
        _ id: UUID,
        logger: Logger,
        _ body: (LockedBroadcast) async throws -> Result
    ) async throws -> Result? {
        try await client.transaction(logger: logger) { connection -> Result? in
            let locked = try await connection.query(
                "SELECT id FROM broadcasts WHERE id = \(id) AND state = 'running' FOR UPDATE SKIP LOCKED",
                logger: logger
            )
            guard try await locked.collect().count == 1 else { return nil }
            guard let broadcast = try await self.select(Self.selectBroadcasts("WHERE b.id = \(id)"), on: connection, logger: logger).first else {
                return nil
            }
            var waves: [StoredWave] = []
            let waveRows = try await connection.query(Self.wavesQuery(broadcastID: id), logger: logger)
            for try await row in waveRows.decode((Int16, String, Date, Double, Bool).self) {
                waves.append(StoredWave(wave: Int(row.0), kind: .init(rawValue: row.1) ?? .background, start: row.2, rate: row.3, finished: row.4))
            }
            var firstWaveCohorts: [StaggerPlan.Cohort] = []
            let cohortRows = try await connection.query(Self.firstWaveCohortsQuery(broadcastID: id), logger: logger)
            let firstRate = waves.first?.rate ?? 0
            for try await (cohort, planned, start, end) in cohortRows.decode((Int32, Int32, Date, Date).self) {
                firstWaveCohorts.append(
                    StaggerPlan.Cohort(index: Int(cohort), devices: Int(planned), start: start, end: end, rate: planned == 0 ? 0 : firstRate)
                )
            }
            var workLeft = false
            if let last = waves.last, !last.finished {
                let open = try await connection.query(Self.workLeftQuery(broadcastID: id, wave: last.wave), logger: logger)
                for try await value in open.decode(Bool.self) { workLeft = value }
            }
            // Only wave-1 batches leave pushes to count, and the next wave waits until they are counted; while wave 1
            // has work left the policy does not ask.
            var uncounted = false
            if waves.count == 1 && !workLeft {
                let rows = try await connection.query(RequestStatements.hasUncountedPushes(broadcastID: id), logger: logger)
                for try await value in rows.decode(Bool.self) { uncounted = value }
            }
            return try await body(
                LockedBroadcast(
                    broadcast: broadcast,
                    waves: waves,
                    firstWaveCohorts: firstWaveCohorts,
                    lastWaveHasWorkLeft: workLeft,
                    firstWavePushesUncounted: uncounted,
                    connection: connection,
                    logger: logger
                )
            )
        }
    }

    /// A broadcast's waves, in order (broadcast_waves' primary key).
    static func wavesQuery(broadcastID: UUID) -> PostgresQuery {
        "SELECT wave, kind, starts_at, rate, finished_at IS NOT NULL FROM broadcast_waves WHERE broadcast_id = \(broadcastID) ORDER BY wave"
    }

    /// Wave 1's cohort slots as planned, which every later wave keeps (broadcast_cohorts' primary key: as
    /// many rows as the broadcast has cohorts).
    static func firstWaveCohortsQuery(broadcastID: UUID) -> PostgresQuery {
        "SELECT cohort, planned, starts_at, ends_at FROM broadcast_cohorts WHERE broadcast_id = \(broadcastID) AND wave = 1 ORDER BY cohort"
    }

    /// Whether wave `wave` has devices left to carve (`broadcast_cohorts_open`) or batches not recorded
    /// (`broadcast_batches_open`).
    static func workLeftQuery(broadcastID: UUID, wave: Int) -> PostgresQuery {
        """
        SELECT EXISTS (SELECT 1 FROM broadcast_cohorts WHERE broadcast_id = \(broadcastID) AND wave = \(Int16(wave)) AND next_key < end_key)
            OR EXISTS (SELECT 1 FROM broadcast_batches WHERE broadcast_id = \(broadcastID) AND wave = \(Int16(wave)) AND done_at IS NULL)
        """
    }
}
