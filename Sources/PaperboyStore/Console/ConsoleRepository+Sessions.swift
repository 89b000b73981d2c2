import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// The console's generated secret (migration 0024), the one its CSRF keys are derived from.
public struct ConsoleKeyRow: Sendable, Equatable {
    /// 32 random bytes.
    public var secret: [UInt8]

    public init(secret: [UInt8]) {
        self.secret = secret
    }
}

/// A signed-in browser as the server keeps it (`console_sessions`, migration 0035). The cookie holds only a random
/// secret; the row is found by its SHA-256.
public struct ConsoleSessionRow: Sendable, Equatable {
    /// The session's public handle: what the audit log and the console's session list name.
    public var id: Int64
    /// `operator` or `viewer`.
    public var role: String
    /// A digest of the role's token at sign-in: a changed token ends the session.
    public var tokenMark: [UInt8]
    /// The name typed at sign-in.
    public var name: String?
    /// The client's address at sign-in.
    public var address: String?
    public var signedInAt: Date
    /// When a request last renewed it (the database's clock).
    public var seenAt: Date
    /// Its absolute end (the database's clock).
    public var expiresAt: Date

    public init(
        id: Int64,
        role: String,
        tokenMark: [UInt8],
        name: String?,
        address: String?,
        signedInAt: Date,
        seenAt: Date,
        expiresAt: Date
    ) {
        self.id = id
        self.role = role
        self.tokenMark = tokenMark
        self.name = name
        self.address = address
        self.signedInAt = signedInAt
        self.seenAt = seenAt
        self.expiresAt = expiresAt
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
        let rows = try await client.query("SELECT secret FROM console_keys WHERE id = 1", logger: logger)
        for try await secret in rows.decode(ByteBuffer.self) {
            return ConsoleKeyRow(secret: Array(buffer: secret))
        }
        return nil
    }

    static let sessionColumns = "id, role, token_mark, name, address, signed_in_at, seen_at, expires_at"

    /// Starts a session that ends `lifetime` seconds from now (the database's clock), with the sign-in counted in the
    /// audit log in the same transaction (``AuditRepository/countSignIn(_:on:logger:)``: one row per role, name and
    /// address an hour). Sessions that ended more than a day ago are forgotten on the way.
    public func startSession(
        secretDigest: [UInt8],
        role: String,
        tokenMark: [UInt8],
        name: String?,
        address: String?,
        lifetime: TimeInterval,
        audit: AuditEntry?,
        logger: Logger
    ) async throws -> ConsoleSessionRow {
        try await client.transaction(logger: logger) { connection in
            _ = try await connection.query("DELETE FROM console_sessions WHERE expires_at < now() - interval '1 day'", logger: logger)
            let rows = try await connection.query(
                """
                INSERT INTO console_sessions (secret_digest, role, token_mark, name, address, expires_at)
                VALUES (\(ByteBuffer(bytes: secretDigest)), \(role), \(ByteBuffer(bytes: tokenMark)), \(name.map { $0.clipped(toCodePoints: 64) }),
                    \(address.map { $0.clipped(toCodePoints: 64) }), now() + make_interval(secs => \(lifetime)))
                RETURNING \(unescaped: Self.sessionColumns)
                """,
                logger: logger
            )
            guard let row = try await Self.sessionRows(rows).first else {
                throw StoreError(code: .conflict, message: "the session could not be stored")
            }
            if var audit {
                audit.sessionID = row.id
                try await AuditRepository.countSignIn(audit, on: connection, logger: logger)
            }
            return row
        }
    }

    /// How a request names its session.
    public enum SessionKey: Sendable {
        /// The SHA-256 of the cookie's secret (a request).
        case secretDigest([UInt8])
        /// The session's handle (a live stream checking its session is still good).
        case id(Int64)
    }

    /// The session `key` names, when it has not reached its end and was used within `idleTimeout` seconds, both by
    /// the database's clock; nil otherwise. A session last renewed `renewAfter` seconds ago or more is renewed (its
    /// idle time restarts): one statement, which writes at most once in `renewAfter` per session.
    public func session(_ key: SessionKey, idleTimeout: TimeInterval, renewAfter: TimeInterval, logger: Logger) async throws -> ConsoleSessionRow? {
        let query: PostgresQuery =
            switch key {
            case .secretDigest(let digest):
                Self.lookup(column: "secret_digest", ByteBuffer(bytes: digest), idleTimeout: idleTimeout, renewAfter: renewAfter)
            case .id(let id): Self.lookup(column: "id", id, idleTimeout: idleTimeout, renewAfter: renewAfter)
            }
        return try await Self.sessionRows(try await client.query(query, logger: logger)).first
    }

    private static func lookup(
        column: String,
        _ value: some PostgresNonThrowingEncodable,
        idleTimeout: TimeInterval,
        renewAfter: TimeInterval
    ) -> PostgresQuery {
        """
        WITH found AS (
            SELECT \(unescaped: sessionColumns), seen_at <= now() - make_interval(secs => \(renewAfter)) AS stale
            FROM console_sessions
            WHERE \(unescaped: column) = \(value) AND expires_at > now() AND seen_at > now() - make_interval(secs => \(idleTimeout))
        ), renewed AS (
            UPDATE console_sessions s SET seen_at = now() FROM found WHERE s.id = found.id AND found.stale
        )
        SELECT \(unescaped: sessionColumns) FROM found
        """
    }

    /// The sessions that have not reached their end, most recently used first (at most `limit`); some may be past
    /// their idle timeout, which the page says.
    public func sessions(limit: Int = 500, logger: Logger) async throws -> [ConsoleSessionRow] {
        let limit = max(1, min(limit, 10_000))
        return try await Self.sessionRows(
            try await client.query(
                "SELECT \(unescaped: Self.sessionColumns) FROM console_sessions WHERE expires_at > now() ORDER BY seen_at DESC, id DESC LIMIT \(limit)",
                logger: logger
            )
        )
    }

    /// Ends the session `id` (a sign-out, or an operator ending it): its row is deleted, with `audit` in the same
    /// transaction. Whether there was such a session.
    @discardableResult
    public func endSession(id: Int64, audit: AuditEntry? = nil, logger: Logger) async throws -> Bool {
        try await client.audited(audit, logger: logger) { runner in
            let rows = try await runner.run("DELETE FROM console_sessions WHERE id = \(id) RETURNING id", logger: logger)
            for try await _ in rows { return true }
            return false
        } entry: { entry, ended in
            ended ? entry : nil
        }
    }

    /// Ends every session and replaces the generated secret with `newSecret` (a key that leaked with a database copy
    /// makes no CSRF token from now on). How many sessions were ended.
    @discardableResult
    public func endAllSessions(newSecret: [UInt8], audit: AuditEntry? = nil, logger: Logger) async throws -> Int {
        try await client.audited(audit, logger: logger) { runner in
            let rows = try await runner.run("WITH ended AS (DELETE FROM console_sessions RETURNING 1) SELECT count(*) FROM ended", logger: logger)
            var ended = 0
            for try await count in rows.decode(Int.self) { ended = count }
            // `sessions_valid_after` for processes of the previous release during a rolling upgrade.
            _ = try await runner.run(
                """
                INSERT INTO console_keys (id, secret, sessions_valid_after) VALUES (1, \(ByteBuffer(bytes: newSecret)), now())
                ON CONFLICT (id) DO UPDATE SET secret = EXCLUDED.secret, sessions_valid_after = EXCLUDED.sessions_valid_after
                """,
                logger: logger
            )
            return ended
        } entry: { entry, ended in
            var entry = entry
            entry.detail = "\(ended) session\(ended == 1 ? "" : "s") ended; the console's key replaced"
            return entry
        }
    }

    static func sessionRows(_ rows: PostgresRowSequence) async throws -> [ConsoleSessionRow] {
        var found: [ConsoleSessionRow] = []
        for try await (id, role, mark, name, address, signedIn, seen, expires) in rows.decode(
            (Int64, String, ByteBuffer, String?, String?, Date, Date, Date).self
        ) {
            found.append(
                ConsoleSessionRow(
                    id: id,
                    role: role,
                    tokenMark: Array(buffer: mark),
                    name: name,
                    address: address,
                    signedInAt: signedIn,
                    seenAt: seen,
                    expiresAt: expires
                )
            )
        }
        return found
    }
}
