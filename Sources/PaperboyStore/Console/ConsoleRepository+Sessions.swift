import Foundation
import Logging
import PostgresNIO

/// What the console keeps of its sessions (migration 0024): the generated secret its keys are derived from, when
/// everyone was last signed out, and the sessions signed out before they expired.
public struct ConsoleKeyRow: Sendable, Equatable {
    /// 32 random bytes.
    public var secret: [UInt8]
    /// Sessions issued before this are ended.
    public var sessionsValidAfter: Date?

    public init(secret: [UInt8], sessionsValidAfter: Date?) {
        self.secret = secret
        self.sessionsValidAfter = sessionsValidAfter
    }
}

extension ConsoleRepository {
    /// The console's row of `console_keys`, made with `secret` when there is none yet (the first `serve`; every other
    /// then reads the same one).
    public func keys(creatingWith secret: [UInt8], logger: Logger) async throws -> ConsoleKeyRow {
        try await client.query(
            "INSERT INTO console_keys (id, secret) VALUES (1, \(ByteBuffer(bytes: secret))) ON CONFLICT (id) DO NOTHING",
            logger: logger
        )
        guard let row = try await keys(logger: logger) else {
            throw StoreError(code: .conflict, message: "the console's key row could not be made")
        }
        return row
    }

    /// The console's row of `console_keys`, if made.
    public func keys(logger: Logger) async throws -> ConsoleKeyRow? {
        let rows = try await client.query("SELECT secret, sessions_valid_after FROM console_keys WHERE id = 1", logger: logger)
        for try await (secret, validAfter) in rows.decode((ByteBuffer, Date?).self) {
            return ConsoleKeyRow(secret: Array(buffer: secret), sessionsValidAfter: validAfter)
        }
        return nil
    }

    /// Whether the session `id` was signed out, and when everyone was last signed out: one primary-key read each,
    /// in one statement, for every console request that carries a good cookie.
    public func sessionStanding(id: String, logger: Logger) async throws -> (ended: Bool, sessionsValidAfter: Date?) {
        let rows = try await client.query(
            """
            SELECT EXISTS (SELECT 1 FROM console_ended_sessions WHERE session_id = \(id)),
                (SELECT sessions_valid_after FROM console_keys WHERE id = 1)
            """,
            logger: logger
        )
        for try await (ended, validAfter) in rows.decode((Bool, Date?).self) { return (ended, validAfter) }
        return (false, nil)
    }

    /// Ends the session `id` (sign-out), and forgets sessions that would have expired by `now` anyway.
    public func endSession(id: String, expires: Date, now: Date, audit: AuditEntry? = nil, logger: Logger) async throws {
        try await client.audited(audit, logger: logger) { runner in
            _ = try await runner.run(
                "INSERT INTO console_ended_sessions (session_id, expires_at) VALUES (\(id), \(expires)) ON CONFLICT (session_id) DO NOTHING",
                logger: logger
            )
            _ = try await runner.run("DELETE FROM console_ended_sessions WHERE expires_at < \(now)", logger: logger)
        }
    }

    /// Ends every session issued before `now`, and replaces the generated secret with `newSecret` (a key that leaked
    /// with a database copy signs nothing from now on).
    public func endAllSessions(now: Date, newSecret: [UInt8], audit: AuditEntry? = nil, logger: Logger) async throws {
        try await client.audited(audit, logger: logger) { runner in
            _ = try await runner.run(
                """
                INSERT INTO console_keys (id, secret, sessions_valid_after) VALUES (1, \(ByteBuffer(bytes: newSecret)), \(now))
                ON CONFLICT (id) DO UPDATE SET secret = EXCLUDED.secret, sessions_valid_after = EXCLUDED.sessions_valid_after
                """,
                logger: logger
            )
        }
    }
}
