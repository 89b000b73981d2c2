import Foundation
import Logging
import PostgresNIO

/// A later wave's audience counts, shared by the workers (`broadcast_counts`): counting takes minutes at 10
/// million devices, so one worker claims the count and stores it, and the others read it instead of running
/// the same count at the same time.
extension BroadcastRepository {
    /// Counts stored for a wave: per kind (its raw value), per cohort, and when they were taken (the counting
    /// worker's clock).
    public struct StoredCounts: Sendable, Equatable {
        public var perCohort: [String: [Int]]
        public var countedAt: Date

        public init(perCohort: [String: [Int]], countedAt: Date) {
            self.perCohort = perCohort
            self.countedAt = countedAt
        }
    }

    /// The counts stored for `wave` of the broadcast, if any.
    public func storedCounts(broadcastID: UUID, wave: Int, logger: Logger) async throws -> StoredCounts? {
        let rows = try await client.query(
            """
            SELECT counts::text, counted_at FROM broadcast_counts
            WHERE broadcast_id = \(broadcastID) AND wave = \(Int16(wave)) AND counts IS NOT NULL AND counted_at IS NOT NULL
            """,
            logger: logger
        )
        var found: StoredCounts?
        for try await (json, countedAt) in rows.decode((String, Date).self) {
            let perCohort = try JSONDecoder().decode([String: [Int]].self, from: Data(json.utf8))
            found = StoredCounts(perCohort: perCohort, countedAt: countedAt)
        }
        return found
    }

    /// Claims the count of `wave` for `owner` for `seconds` (the database's clock): true unless another worker
    /// holds a claim that has not lapsed. A claim ends when its counts are stored.
    public func claimCount(broadcastID: UUID, wave: Int, owner: String, seconds: Double, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            INSERT INTO broadcast_counts (broadcast_id, wave, counter, counting_until)
            VALUES (\(broadcastID), \(Int16(wave)), \(owner), now() + make_interval(secs => \(seconds)))
            ON CONFLICT (broadcast_id, wave) DO UPDATE SET counter = EXCLUDED.counter, counting_until = EXCLUDED.counting_until
                WHERE broadcast_counts.counting_until IS NULL OR broadcast_counts.counting_until < now()
                    OR broadcast_counts.counter = EXCLUDED.counter
            RETURNING 1
            """,
            logger: logger
        )
        var claimed = false
        for try await _ in rows.decode(Int.self) { claimed = true }
        return claimed
    }

    /// Stores the counts `owner` took for `wave` and ends its claim; nothing if its claim was taken over meanwhile.
    public func storeCounts(_ counts: StoredCounts, broadcastID: UUID, wave: Int, owner: String, logger: Logger) async throws {
        let json = String(decoding: try JSONEncoder().encode(counts.perCohort), as: UTF8.self)
        try await client.query(
            """
            UPDATE broadcast_counts SET counts = \(json)::jsonb, counted_at = \(counts.countedAt), counting_until = NULL
            WHERE broadcast_id = \(broadcastID) AND wave = \(Int16(wave)) AND counter = \(owner)
            """,
            logger: logger
        )
    }
}
