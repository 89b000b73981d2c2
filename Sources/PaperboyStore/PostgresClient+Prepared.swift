import Logging
import PaperboyCore
import PostgresNIO

extension PostgresClient {
    /// Runs a prepared statement and returns its rows; when the statement fails, its connection is closed, so that
    /// the pool opens another.
    ///
    /// PostgresNIO (1.33.2) prepares a statement once per connection and keeps what its PREPARE came to for the
    /// connection's life, a failure included (`PreparedStatementStateMachine`'s `error` state): every later
    /// execution of the statement there fails at once with that error, without reaching the server. A PREPARE fails
    /// for reasons that pass: a lock held past `lock_timeout` or `statement_timeout` (a migration altering a table it
    /// reads), a query cancelled by an operator. Which of the two failed, the PREPARE or the execution, the error does
    /// not say; either is rare, and a new connection costs milliseconds, so any failure closes the connection.
    package func executePrepared<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> [Statement.Row]
    where Statement.Row: Sendable {
        try await withConnection { connection in try await connection.executePrepared(statement, logger: logger) }
    }
}

extension PostgresConnection {
    /// Runs a prepared statement on this connection and returns its rows; when the statement fails, the connection
    /// is closed (see ``PostgresClient/executePrepared(_:logger:)``). Inside a transaction, the closed connection ends
    /// it: the server rolls it back, and ``PostgresClient/transaction(logger:rollbackPatience:_:)`` sends no ROLLBACK.
    package func executePrepared<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> [Statement.Row] {
        do {
            var rows: [Statement.Row] = []
            for try await row in try await execute(statement, logger: logger) { rows.append(row) }
            return rows
        } catch let error as PSQLError {
            if !isClosed {
                logger.warning(
                    "a prepared statement failed; closing its connection, where it would fail again",
                    metadata: ["psql_connection_id": "\(id)", LogKey.error: "\(error.serverWords)"]
                )
                // It fails only when the connection is closed already, which is what it is for.
                try? await close()
            }
            throw error
        }
    }
}

extension PSQLError {
    /// Whether the server refused a row for a unique index or primary key (SQLSTATE 23505): any, or the one named.
    package func isUniqueViolation(of constraint: String? = nil) -> Bool {
        serverInfo?[.sqlState] == "23505" && (constraint == nil || serverInfo?[.constraintName] == constraint)
    }

    /// The server's words only (SQLSTATE and message), for logs: the error's full description holds the statement's
    /// text and its values.
    package var serverWords: String {
        serverInfo.map { "\($0[.sqlState] ?? "") \($0[.message] ?? "")" } ?? "\(code)"
    }
}
