import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Receipts that arrive together recorded together: group commit for the morning's largest load.
///
/// The receipts waiting go together in one ``RecordReceipts`` statement when ``ReceiptGrouping`` says: at once on a
/// quiet server, else at most one statement that is not full every `linger` (5 ms), with every receipt that came
/// meanwhile (up to `maxBatch`). A receipt is answered only once the statement that wrote it has returned
/// (committed): an answered receipt is never lost.
///
/// A batch that fails is recorded again one receipt at a time (``RecordReceipt``), so that one receipt the database
/// refuses fails alone and the others are answered as they would have been.
actor ReceiptBatcher<C: Clock> where C.Duration == Duration, C.Instant: Sendable {
    /// What ``RecordReceipt`` answers for one receipt.
    typealias Answer = RecordReceipt.Row

    private struct Pending {
        let receipt: RecordReceipt
        let continuation: CheckedContinuation<Answer, any Error>
    }

    private let client: PostgresClient
    private let grouping: ReceiptGrouping
    private let clock: C
    private var waiting: [Pending] = []
    private var running = 0
    private var lastStart: C.Instant?
    /// A wake-up is scheduled (``ReceiptGrouping/Decision/wait(until:)``): one at a time.
    private var wakeScheduled = false

    /// How many statements ran and how many receipts they held (for tests and the benchmark's report).
    private(set) var statements = 0
    private(set) var recorded = 0

    init(client: PostgresClient, grouping: ReceiptGrouping = .standard, clock: C) {
        self.client = client
        self.grouping = grouping
        self.clock = clock
    }

    func record(_ receipt: RecordReceipt, logger: Logger) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            waiting.append(Pending(receipt: receipt, continuation: continuation))
            startBatches(logger: logger)
        }
    }

    private func startBatches(logger: Logger) {
        while true {
            let now = clock.now
            switch grouping.next(waiting: waiting.count, running: running, lastStart: lastStart, now: now) {
            case .idle:
                return
            case .wait(let deadline):
                guard !wakeScheduled else { return }
                wakeScheduled = true
                Task {
                    // Cancelled or not, the batcher looks again: a wake-up early or late starts nothing too soon.
                    do { try await self.clock.sleep(until: deadline, tolerance: nil) } catch {}
                    await self.woke(logger: logger)
                }
                return
            case .start(let count):
                let batch = Array(waiting.prefix(count))
                waiting.removeFirst(batch.count)
                running += 1
                lastStart = now
                Task { await self.run(batch, logger: logger) }
            }
        }
    }

    private func woke(logger: Logger) {
        wakeScheduled = false
        startBatches(logger: logger)
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
