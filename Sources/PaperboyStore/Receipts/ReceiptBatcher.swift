import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Receipts that arrive together recorded together: group commit for the morning's largest load.
///
/// At most `lanes` statements run at once; a receipt that arrives while they all run waits for the next free one and
/// goes with every receipt that waited meanwhile (up to `maxBatch`) in one ``RecordReceipts`` statement. Alone, a
/// receipt goes at once (no timer, no added wait); under load the batches grow by themselves. A receipt is answered
/// only once the statement that wrote it has returned (committed): an answered receipt is never lost.
///
/// A batch that fails is recorded again one receipt at a time (``RecordReceipt``), so that one receipt the database
/// refuses fails alone and the others are answered as they would have been.
actor ReceiptBatcher {
    /// What ``RecordReceipt`` answers for one receipt.
    typealias Answer = RecordReceipt.Row

    private struct Pending {
        let receipt: RecordReceipt
        let continuation: CheckedContinuation<Answer, any Error>
    }

    private let client: PostgresClient
    private let lanes: Int
    private let maxBatch: Int
    private var waiting: [Pending] = []
    private var running = 0

    /// How many statements ran and how many receipts they held (for tests and the benchmark's report).
    private(set) var statements = 0
    private(set) var recorded = 0

    init(client: PostgresClient, lanes: Int = 2, maxBatch: Int = 64) {
        precondition(lanes > 0 && maxBatch > 0, "a batcher runs at least one statement of at least one receipt")
        self.client = client
        self.lanes = lanes
        self.maxBatch = maxBatch
    }

    func record(_ receipt: RecordReceipt, logger: Logger) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            waiting.append(Pending(receipt: receipt, continuation: continuation))
            startBatches(logger: logger)
        }
    }

    private func startBatches(logger: Logger) {
        while running < lanes, !waiting.isEmpty {
            let batch = Array(waiting.prefix(maxBatch))
            waiting.removeFirst(batch.count)
            running += 1
            Task { await self.run(batch, logger: logger) }
        }
    }

    private func run(_ batch: [Pending], logger: Logger) async {
        defer {
            running -= 1
            startBatches(logger: logger)
        }
        statements += 1
        recorded += batch.count
        if batch.count == 1 {
            await recordAlone(batch[0], logger: logger)
            return
        }
        let answers: [Int64: Answer]
        do {
            let rows = try await client.executePrepared(RecordReceipts(receipts: batch.map(\.receipt)), logger: logger)
            answers = Dictionary(rows.map { ($0.0, Self.answer($0)) }, uniquingKeysWith: { first, _ in first })
        } catch {
            logger.warning(
                "a batch of receipts failed; recording them one at a time",
                metadata: ["receipts": "\(batch.count)", LogKey.error: "\(Self.reason(error))"]
            )
            for pending in batch { await recordAlone(pending, logger: logger) }
            return
        }
        for (index, pending) in batch.enumerated() {
            if let answer = answers[Int64(index + 1)] {
                pending.continuation.resume(returning: answer)
            } else {
                // Every input row is answered by the statement; a missing one would be a defect, not a receipt to lose.
                await recordAlone(pending, logger: logger)
            }
        }
    }

    private func recordAlone(_ pending: Pending, logger: Logger) async {
        do {
            guard let answer = try await client.executePrepared(pending.receipt, logger: logger).last else {
                throw StoreError(code: .conflict, field: "editionId", message: "the receipt was not stored")
            }
            pending.continuation.resume(returning: answer)
        } catch {
            pending.continuation.resume(throwing: error)
        }
    }

    private static func answer(_ row: RecordReceipts.Row) -> Answer {
        (row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11, row.12, row.13)
    }

    /// The server's words only (``PSQLError/serverWords``); another error by its type.
    private static func reason(_ error: any Error) -> String {
        (error as? PSQLError)?.serverWords ?? "\(type(of: error))"
    }
}
