import Foundation
import Logging
import PaperboyCore
import PaperboyTesting
import PostgresNIO
import Testing

@testable import PaperboyStore

/// Receipts are recorded through sessions of their own (``DatabaseConfiguration/makeReceiptClient(logger:)``), where
/// their prepared statements are planned once: left to PostgreSQL's choice, the statement of receipts arriving together
/// was planned again for every batch of a few receipts (issue 49).
@Suite("Receipts' own sessions")
struct ReceiptSessionTests {
    /// Runs `body` with a running receipt client for the test's database.
    static func withReceiptClient<Result: Sendable>(_ db: TestDatabase, _ body: (PostgresClient) async throws -> Result) async throws -> Result {
        let client = db.configuration.makeReceiptClient(logger: db.logger)
        let running = await client.started()
        defer { running.cancel() }
        let result = try await body(client)
        running.cancel()
        _ = await running.ended(within: .seconds(30))
        return result
    }

    @Test("batches of two receipts, eight times on one session: the generic plan every time, never a custom one")
    func plannedOnce() async throws {
        try await TestDatabase.with { db in
            let (appID, editionID) = try await ReceiptBatcherTests.prepare(db, devices: 16)
            let plans = try await Self.withReceiptClient(db) { client in
                try await client.withConnection { connection in
                    for batch in 0..<8 {
                        let receipts = (0..<2).map { i in
                            RecordReceipt(
                                appID: appID,
                                candidates: [.apns(ReceiptBatcherTests.token(batch * 2 + i))],
                                ReceiptReport(editionID: editionID, result: .newData)
                            )
                        }
                        let rows = try await connection.executePrepared(RecordReceipts(receipts: receipts), logger: db.logger)
                        #expect(rows.count == 2 && rows.allSatisfy { $0.1 != nil && $0.7 == true }, "batch \(batch): both receipts created")
                    }
                    let rows = try await connection.query(
                        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = \(String(reflecting: RecordReceipts.self))",
                        logger: db.logger
                    )
                    var plans: [(Int64, Int64)] = []
                    for try await row in rows.decode((Int64, Int64).self) { plans.append(row) }
                    return plans
                }
            }
            #expect(plans.count == 1, "the statement is prepared on the session")
            #expect(plans.first?.0 == 8, "eight executions on the generic plan")
            #expect(plans.first?.1 == 0, "no custom plan: the statement was never planned again")
        }
    }

    @Test("the receipts' sessions force generic plans and name themselves; the process's own sessions leave plans to PostgreSQL")
    func settings() async throws {
        try await TestDatabase.with { db in
            func show(_ client: PostgresClient) async throws -> [String] {
                let rows = try await client.query(
                    "SELECT current_setting('plan_cache_mode'), current_setting('application_name'), current_setting('jit')",
                    logger: db.logger
                )
                var values: [String] = []
                for try await row in rows.decode((String, String, String).self) { values = [row.0, row.1, row.2] }
                return values
            }
            let receipts = try await Self.withReceiptClient(db) { try await show($0) }
            let process = try await show(db.client)
            #expect(receipts == ["force_generic_plan", "paperboy receipts", "off"])
            #expect(process.first == "auto")
        }
    }

    @Test("a repository given a recording client records receipts through it, and reads a kept one back through it")
    func recordsThroughItsClient() async throws {
        try await TestDatabase.with { db in
            let (appID, editionID) = try await ReceiptBatcherTests.prepare(db, devices: 2)
            let sessions = try await Self.withReceiptClient(db) { client in
                let receipts = ReceiptRepository(client: db.client, recordingClient: client)
                let report = ReceiptReport(editionID: editionID, result: .newData, bytes: 10)
                let first = try await receipts.record(appID: appID, token: ReceiptBatcherTests.token(1), report, logger: db.logger)
                let again = try await receipts.record(appID: appID, token: ReceiptBatcherTests.token(1), report, logger: db.logger)
                #expect(first.created && !again.created && again.receipt.bytes == 10)
                // The pool opens connections when asked for one: sessions of this name exist only if receipts used them.
                let rows = try await db.client.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'paperboy receipts'",
                    logger: db.logger
                )
                var count = 0
                for try await row in rows.decode(Int.self) { count = row }
                return count
            }
            #expect(sessions >= 1)
        }
    }
}
