import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// Receipts are recorded with a prepared statement (``RecordReceipt``), which PostgresNIO prepares once per
/// connection and keeps, failed or not, for the connection's life.
@Suite("Receipts' prepared statement")
struct RecordReceiptTests {
    /// A migration's `ALTER TABLE receipts …` holds the table (ACCESS EXCLUSIVE) for a moment, longer than the
    /// role's `lock_timeout` (or `statement_timeout`), just as a connection prepares the statement for the first time.
    /// The limit is there to catch a hang; setting up its database under the parallel suite's load on two cores took
    /// 88 s once (2026-12-02), so a minute was not enough.
    @Test(
        "a receipt whose PREPARE failed once (a migration held the table) fails alone; the next one on that connection is recorded",
        .timeLimit(.minutes(3))
    )
    func prepareFailedOnce() async throws {
        try await TestDatabase.with { db in
            let (appID, editionID) = try await ReceiptContextTests.prepare(db)
            // One connection, so that every receipt below runs where the PREPARE failed (or on its replacement).
            var configuration = db.configuration
            configuration.maximumConnections = 1
            let client = configuration.makeClient(logger: db.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                await client.start(in: &group)
                defer { group.cancelAll() }
                try await client.query("SET lock_timeout = '200ms'", logger: db.logger)
                let receipts = ReceiptRepository(client: client)
                let report = ReceiptReport(editionID: editionID, result: .newData)
                try await db.client.withConnection { migration in
                    try await migration.query("BEGIN", logger: db.logger)
                    try await migration.query("LOCK TABLE receipts IN ACCESS EXCLUSIVE MODE", logger: db.logger)
                    let error = await #expect(throws: PSQLError.self) {
                        try await receipts.record(appID: appID, token: ReceiptContextTests.token, report, logger: db.logger)
                    }
                    #expect(error?.serverInfo?[.sqlState] == "55P03", "the lock wait timed out: \(String(reflecting: error))")
                    try await migration.query("COMMIT", logger: db.logger)
                }
                do {
                    let recorded = try await receipts.record(appID: appID, token: ReceiptContextTests.token, report, logger: db.logger)
                    #expect(recorded.created && recorded.receipt.result == .newData)
                } catch {
                    Issue.record("the next receipt, the lock long gone, failed: \(String(reflecting: error))")
                }
            }
        }
    }
}
