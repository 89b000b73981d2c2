import Foundation
import Logging
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Synchronization
import Testing

@Suite("Transactions")
struct TransactionTests {
    struct BodyFailed: Error {}

    /// PostgreSQL stopped or failed over mid-transaction: the server closes the connection, the transaction's
    /// next statement fails, and the transaction must end with that error. PostgresNIO's own `withTransaction`
    /// then writes a ROLLBACK to the torn-down channel, which is never answered: a dispatcher waiting there
    /// stopped leasing for good.
    @Test(
        "a transaction whose connection the server closed ends with the body's error at once, and the client goes on",
        .timeLimit(.minutes(3))
    )
    func connectionClosedMidTransaction() async throws {
        try await TestDatabase.with { db in
            // Measured from the body's throw, not from the test's start: terminating the backend and seeing the channel
            // close take seconds under the parallel suite's load, and were once 22 s of a 20 s bound.
            let thrown = Mutex<ContinuousClock.Instant?>(nil)
            await #expect(throws: BodyFailed.self) {
                try await db.client.transaction(logger: db.logger) { connection in
                    var pid: Int32 = 0
                    for try await value in try await connection.query("SELECT pg_backend_pid()", logger: db.logger).decode(Int32.self) {
                        pid = value
                    }
                    try await db.client.query("SELECT pg_terminate_backend(\(pid))", logger: db.logger)
                    // Until NIO has closed the channel and torn its pipeline down (bounded: the test's time limit).
                    while !connection.isClosed { try await Task.sleep(for: .milliseconds(10)) }
                    try await Task.sleep(for: .milliseconds(200))
                    thrown.withLock { $0 = .now }
                    throw BodyFailed()
                }
            }
            // A ROLLBACK written to the closed channel would be waited for until the rollback patience (5 s) gives up.
            let ended = try #require(thrown.withLock { $0 }).duration(to: .now)
            #expect(ended < .seconds(4), "ended when the body failed, not after waiting out the rollback's patience")

            let value = try await db.client.transaction(logger: db.logger) { connection in
                var one = 0
                for try await value in try await connection.query("SELECT 1", logger: db.logger).decode(Int.self) { one = value }
                return one
            }
            #expect(value == 1, "the pool replaced the closed connection")
        }
    }

    // No wall-clock bound on the given-up call: `never` is never resumed, so returning at all proves the limit
    // ended it (were it ignored, the test's time limit would fail it). A bound on the elapsed time failed in CI
    // when the parallel run's first seconds kept both cooperative threads busy for 22 s (tests that wait for a
    // child process block one), not because the limit was late.
    @Test(
        "a call that is never answered is given up after its limit; one that is answered returns its value or error",
        .timeLimit(.minutes(3))
    )
    func answeredWithin() async throws {
        let never: @Sendable () async throws -> Int = {
            // Like a query on a torn-down channel: a continuation nobody resumes.
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            return 0
        }
        await #expect(throws: DatabaseCallUnanswered.self) { try await answered(within: .milliseconds(200), never) }
        #expect(try await answered(within: .seconds(10)) { 42 } == 42)
        await #expect(throws: BodyFailed.self) { try await answered(within: .seconds(10)) { () async throws -> Int in throw BodyFailed() } }
    }

    @Test("a body that throws on a healthy connection is rolled back")
    func rolledBack() async throws {
        try await TestDatabase.with { db in
            try await db.client.query("CREATE TABLE t (x int)", logger: db.logger)
            await #expect(throws: BodyFailed.self) {
                try await db.client.transaction(logger: db.logger) { connection in
                    try await connection.query("INSERT INTO t VALUES (1)", logger: db.logger)
                    throw BodyFailed()
                }
            }
            _ = try await db.client.transaction(logger: db.logger) { connection in
                try await connection.query("INSERT INTO t VALUES (2)", logger: db.logger)
            }
            var rows: [Int] = []
            for try await value in try await db.client.query("SELECT x FROM t", logger: db.logger).decode(Int.self) { rows.append(value) }
            #expect(rows == [2])
        }
    }

    /// SIGTERM cancels a worker in the middle of a transaction: the body fails, and the ROLLBACK fails too (its call
    /// ends at once with `CancellationError`, unsent). PostgresNIO's pool takes the connection back as it is, inside
    /// the open transaction: the next user's `BEGIN` is only a warning there, and its `COMMIT` commits the cancelled
    /// body's writes with its own.
    @Test("a ROLLBACK that fails (the task was cancelled) leaves no connection inside the transaction in the pool", .timeLimit(.minutes(3)))
    func rollbackFailed() async throws {
        try await TestDatabase.with { db in
            try await db.client.query("CREATE TABLE t (x int)", logger: db.logger)
            // One connection, so that the next transaction gets the one the failed ROLLBACK left.
            var configuration = db.configuration
            configuration.maximumConnections = 1
            let client = configuration.makeClient(logger: db.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                await client.start(in: &group)
                defer { group.cancelAll() }
                let cancelled = Task {
                    try await client.transaction(logger: db.logger) { connection in
                        try await connection.query("INSERT INTO t VALUES (1)", logger: db.logger)
                        withUnsafeCurrentTask { $0?.cancel() }
                        throw BodyFailed()
                    }
                }
                await #expect(throws: BodyFailed.self) { try await cancelled.value }
                // The pool's connection is not inside the cancelled transaction (which had a transaction id: it wrote).
                for try await inTransaction in try await client.query("SELECT pg_current_xact_id_if_assigned() IS NOT NULL", logger: db.logger)
                    .decode(Bool.self)
                {
                    #expect(!inTransaction, "the pool handed out a connection inside the cancelled transaction")
                }
                _ = try await client.transaction(logger: db.logger) { connection in
                    try await connection.query("INSERT INTO t VALUES (2)", logger: db.logger)
                }
                var rows: [Int] = []
                for try await value in try await db.client.query("SELECT x FROM t ORDER BY x", logger: db.logger).decode(Int.self) {
                    rows.append(value)
                }
                #expect(rows == [2], "the cancelled transaction's row was not committed by the next one")
            }
        }
    }
}
