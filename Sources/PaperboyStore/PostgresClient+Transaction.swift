import Foundation
import Logging
import PaperboyCore
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
    /// server ended the transaction when it closed it), and a `ROLLBACK` that fails, is not answered within
    /// `rollbackPatience` or is not sent because the task was cancelled closes the connection instead: the pool
    /// would hand it out again inside the transaction.
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
                    } catch {
                        // Not answered, failed, or never sent (the task was cancelled, as on SIGTERM: `answered` then
                        // ends at once): the connection may still be inside the transaction, and PostgresNIO's pool
                        // hands it out as it is, where the next BEGIN is only a warning and the next COMMIT commits
                        // this body's writes. Closed, the server rolls it back; the pool opens another.
                        logger.log(
                            level: error is CancellationError ? .debug : .warning,
                            "ROLLBACK did not complete; closing the connection",
                            metadata: ["psql_connection_id": "\(connection.id)", LogKey.error: "\(String(reflecting: error))"]
                        )
                        // It fails only when the connection is closed already, which is what it is for.
                        try? await connection.close()
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
/// without one, leaving the operation behind; throws `CancellationError` at once when the calling task is
/// cancelled, and cancels the operation.
///
/// For calls that must not wait forever: PostgresNIO 1.33.2 never answers a query written to a connection
/// the server has just closed (PostgreSQL restarted or failed over): the pool can hand out a connection in
/// the instant it closes, and the write then fails inside NIO with no promise to fail. The operation left
/// behind holds only its own task (the connection is gone); one that was merely slow may still finish
/// later, and its result is dropped, so `limit` must be longer than the call ever takes when it works.
///
/// Cancellation ends the wait at once because a process stopping on SIGTERM cancels what has not stopped
/// in time: a caller that waited out `limit` instead (the dispatcher's advance allows 30 minutes) kept
/// `paperboy serve` running for as long after its PostgreSQL was stopped.
public func answered<Value: Sendable>(
    within limit: Duration,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let call = PendingCall<Value>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
            call.begin(continuation, limit: limit, operation)
        }
    } onCancel: {
        call.settle(.failure(CancellationError()), cancellingOperation: true)
    }
}

/// The race of ``answered(within:_:)``: the operation, its time limit and the caller's cancellation; the
/// first to settle resumes the caller, once.
private final class PendingCall<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        /// How it settled before ``begin`` ran (the caller was cancelled already).
        var early: Result<Value, any Error>?
        var settled = false
        var operation: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private let state = Mutex(State())

    func begin(
        _ continuation: CheckedContinuation<Value, any Error>,
        limit: Duration,
        _ operation: @escaping @Sendable () async throws -> Value
    ) {
        let early: Result<Value, any Error>? = state.withLock { state in
            guard !state.settled else { return state.early }
            state.continuation = continuation
            state.timer = Task {
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                self.settle(.failure(DatabaseCallUnanswered(limit: limit)), cancellingOperation: false)
            }
            state.operation = Task {
                let result: Result<Value, any Error>
                do {
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                self.settle(result, cancellingOperation: false)
            }
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Resumes the caller with `result` unless something settled first.
    func settle(_ result: Result<Value, any Error>, cancellingOperation: Bool) {
        let settled = state.withLock { state -> (CheckedContinuation<Value, any Error>?, Task<Void, Never>?, Task<Void, Never>?)? in
            guard !state.settled else { return nil }
            state.settled = true
            if state.continuation == nil { state.early = result }
            defer { state.continuation = nil }
            return (state.continuation, state.operation, state.timer)
        }
        guard let (continuation, operation, timer) = settled else { return }
        timer?.cancel()
        if cancellingOperation { operation?.cancel() }
        continuation?.resume(with: result)
    }
}
