import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Reading the tallies: what the status, the metrics and the console show. No statement here reads `receipts`.
extension ReceiptTallies {
    /// A broadcast's receipts as tallied, with its edition's.
    public struct BroadcastCounts: Sendable, Equatable {
        /// One cell: receipts of devices whose last delivery of the broadcast was in this wave and cohort.
        public struct Cell: Sendable, Equatable, Hashable {
            public var wave: Int
            public var cohort: Int
            public var provider: PushProvider
            public var result: ReceiptResult
            public var count: Int

            public init(wave: Int, cohort: Int, provider: PushProvider, result: ReceiptResult, count: Int) {
                self.wave = wave
                self.cohort = cohort
                self.provider = provider
                self.result = result
                self.count = count
            }
        }

        /// The broadcast's cells, without empty ones.
        public var cells: [Cell]
        /// The edition's receipts by result, from every device (also those no broadcast reached).
        public var edition: [ReceiptResult: Int]
        /// Receipts that arrived up to this instant (the database's clock) are counted.
        public var countedThrough: Date
    }

    /// The tallies of a broadcast of `editionID`, and the edition's.
    public func counts(broadcastID: UUID, editionID: UUID, logger: Logger) async throws -> BroadcastCounts {
        let rows = try await client.query(Self.broadcastCountsQuery(broadcastID: broadcastID, editionID: editionID), logger: logger)
        var counts = BroadcastCounts(cells: [], edition: [:], countedThrough: .distantPast)
        for try await row in rows.decode((Date, Bool?, Int16?, Int?, Int16?, String?, Int?).self) {
            counts.countedThrough = row.0
            guard let isEdition = row.1, let wave = row.2, let cohort = row.3, let provider = row.4,
                let result = row.5.flatMap(ReceiptResult.init(rawValue:)), let count = row.6
            else { continue }
            if isEdition {
                counts.edition[result, default: 0] += count
            } else {
                counts.cells.append(
                    BroadcastCounts.Cell(wave: Int(wave), cohort: cohort, provider: PushProvider(storageCode: provider), result: result, count: count)
                )
            }
        }
        return counts
    }

    /// The edition's receipts by result, from every device (results with none are left out).
    public func counts(editionID: UUID, logger: Logger) async throws -> [ReceiptResult: Int] {
        let rows = try await client.query(Self.editionCountsQuery(editionID: editionID), logger: logger)
        var counts: [ReceiptResult: Int] = [:]
        for try await (result, count) in rows.decode((String, Int).self) {
            if let result = ReceiptResult(rawValue: result) { counts[result] = count }
        }
        return counts
    }

    /// The watermark, and the broadcast's and the edition's rows (the edition's unique key leads the index).
    static func broadcastCountsQuery(broadcastID: UUID, editionID: UUID) -> PostgresQuery {
        var binds = PostgresBindings(capacity: 2)
        binds.append(broadcastID)
        binds.append(editionID)
        return PostgresQuery(
            unsafeSQL: """
                SELECT s.counted_through, t.broadcast_id IS NULL, t.wave, t.cohort, t.provider, t.result, t.count
                FROM receipt_tally_state s LEFT JOIN receipt_tallies t ON \(cellsCondition(broadcast: "$1", edition: "$2"))
                """,
            binds: binds
        )
    }

    /// The tallies `t` of broadcast `broadcast` and of its edition `edition` (SQL expressions), without empty cells:
    /// what ``counts(broadcastID:editionID:logger:)`` and the status (``BroadcastStatus``) read.
    static func cellsCondition(broadcast: String, edition: String) -> String {
        "t.edition_id = \(edition) AND (t.broadcast_id = \(broadcast) OR t.broadcast_id IS NULL) AND t.count <> 0"
    }

    static func editionCountsQuery(editionID: UUID) -> PostgresQuery {
        """
        SELECT result, sum(count)::bigint FROM receipt_tallies
        WHERE edition_id = \(editionID) AND broadcast_id IS NULL GROUP BY result HAVING sum(count) <> 0
        """
    }
}
