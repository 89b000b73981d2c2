import Foundation
import Logging
import PostgresNIO
import Synchronization

extension PostgresClient {
    /// Runs `body` in a transaction on one connection of the pool: `BEGIN`, then `COMMIT`, or `ROLLBACK` when
    /// `body` throws, whose error is then rethrown as it is.
    ///
    /// Used in place of PostgresNIO's `withTransaction` for one reason. That one writes its `ROLLBACK` even when
    /// the server has just closed the connection (PostgreSQL stopped, restarted, failed over), and in PostgresNIO
    /// 1.33.2 a query written to a connection whose channel is already torn down is never answered: the write
    /// fails inside NIO with no promise to fail, and the caller waits forever. A dispatcher waiting there stops
    /// leasing for good (the fault test "PostgreSQL stopped and started again" caught it: 717 of 2,000 devices
    /// sent, then nothing, with the database back). So here a connection that is closed gets no `ROLLBACK` (the
    /// server ended the transaction when it closed it), and a `ROLLBACK` that is not answered within
    /// `rollbackPatience` closes the connection instead.
    package func transaction<Result: Sendable>(
        logger: Logger,
        rollbackPatience: Duration = .seconds(5),
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            try await connection.query("BEGIN;", logger: logger)
            let value: Result
            do {
                value = try await body(connection)
            } catch {
                if !connection.isClosed && !Self.isConnectionLost(error) {
                    do {
                        try await answered(within: rollbackPatience) { _ = try await connection.query("ROLLBACK;", logger: logger) }
                    } catch is DatabaseCallUnanswered {
                        logger.warning("ROLLBACK was not answered; closing the connection", metadata: ["psql_connection_id": "\(connection.id)"])
                        try? await connection.close()
                    } catch {
                        // The ROLLBACK failed: the connection is unusable and the pool replaces it.
                    }
                }
                throw error
            }
            // The same hazard for COMMIT: a connection closed meanwhile would never answer it.
            guard !connection.isClosed else { throw ConnectionClosedBeforeCommit() }
            try await connection.query("COMMIT;", logger: logger)
            return value
        }
    }

    /// Whether `error` says the connection is gone, so that nothing more can be sent on it.
    static func isConnectionLost(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        return [.clientClosedConnection, .serverClosedConnection, .connectionError].contains(error.code)
    }
}

/// Which of two racing tasks came first.
private final class Settled: Sendable {
    private let done = Atomic<Bool>(false)
    /// True for the first caller only.
    func first() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}

/// The connection closed before the transaction could be committed: the server rolled it back.
struct ConnectionClosedBeforeCommit: Error, CustomStringConvertible {
    var description: String { "the database connection closed before COMMIT; the transaction was rolled back" }
}

/// A database call that got no answer within its time limit, and was left behind.
public struct DatabaseCallUnanswered: Error, CustomStringConvertible {
    public var limit: Duration
    public var description: String { "the database did not answer within \(limit)" }
}

/// Runs `operation` and returns its result, or throws ``DatabaseCallUnanswered`` once `limit` has passed
/// without one, leaving the operation behind.
///
/// For calls that must not wait forever: PostgresNIO 1.33.2 never answers a query written to a connection
/// the server has just closed (PostgreSQL restarted or failed over): the pool can hand out a connection in
/// the instant it closes, and the write then fails inside NIO with no promise to fail. The operation left
/// behind holds only its own task (the connection is gone); one that was merely slow may still finish
/// later, and its result is dropped, so `limit` must be longer than the call ever takes when it works.
public func answered<Value: Sendable>(
    within limit: Duration,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let settled = Settled()
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
        let timer = Task {
            try? await Task.sleep(for: limit)
            if !Task.isCancelled, settled.first() { continuation.resume(throwing: DatabaseCallUnanswered(limit: limit)) }
        }
        Task {
            let result: Result<Value, any Error>
            do {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            timer.cancel()
            if settled.first() { continuation.resume(with: result) }
        }
    }
}
