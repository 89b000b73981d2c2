import Foundation
import Logging
import PostgresNIO

/// The audit log in PostgreSQL (`audit_log`): written by the repositories that make a change, in the change's own
/// transaction (``PostgresClient/audited(_:logger:_:entry:)``), and read by the console and `paperboy audit`.
public struct AuditRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Records an entry on its own, for what changes nothing else.
    public func record(_ entry: AuditEntry, logger: Logger) async throws {
        try await Self.insert(entry, on: client, logger: logger)
    }

    /// Deletes the entries written before `cutoff` (the retention: `paperboy prune --audit-retention`), at most
    /// `batchSize` a statement. How many were deleted.
    public func prune(before cutoff: Date, batchSize: Int = 10_000, logger: Logger) async throws -> Int {
        var deleted = 0
        while true {
            let rows = try await client.query(
                """
                WITH gone AS (
                    DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < \(cutoff) ORDER BY at LIMIT \(max(1, batchSize)))
                    RETURNING 1
                ) SELECT count(*) FROM gone
                """,
                logger: logger
            )
            var count = 0
            for try await value in rows.decode(Int.self) { count = value }
            deleted += count
            if count < batchSize { return deleted }
        }
    }

    /// Makes the audit log append-only for `role` (the role `paperboy serve` and the CLI connect as, when it is not
    /// the one that migrates and owns the tables): it may read and add entries, and count sign-ins (`times`,
    /// `last_at`, `session_id`), but neither change an entry's what, who or when, nor delete or truncate one. The
    /// retention is then the owner's to run (`paperboy prune` as the owner). Run as the table's owner.
    /// - Throws: ``StoreError`` naming `role` when it is not a plain role name, does not exist, or is the role running
    ///   this (the owner: it could grant itself the rights back).
    public func makeAppendOnly(for role: String, logger: Logger) async throws {
        guard role.range(of: #"^[a-z_][a-z0-9_]{0,62}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "role", message: "\(role) is not a role name of lower-case letters, digits and _")
        }
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.query(
                "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = \(role)), \(role) = current_user",
                logger: logger
            )
            for try await (exists, current) in rows.decode((Bool, Bool).self) {
                guard exists else { throw StoreError(code: .notFound, field: "role", message: "there is no role \(role)") }
                guard !current else {
                    throw StoreError(
                        code: .invalid,
                        field: "role",
                        message: "\(role) is the role migrating (the audit log's owner); name the role the server connects as"
                    )
                }
            }
            for statement in [
                "REVOKE ALL ON audit_log FROM \(role)",
                "GRANT SELECT, INSERT ON audit_log TO \(role)",
                "GRANT UPDATE (times, last_at, session_id) ON audit_log TO \(role)",
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
    }

    /// How many entries were written before `cutoff` (a dry run of ``prune(before:batchSize:logger:)``).
    public func count(before cutoff: Date, logger: Logger) async throws -> Int {
        let rows = try await client.query("SELECT count(*) FROM audit_log WHERE at < \(cutoff)", logger: logger)
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }

    /// The entries that name a broadcast, oldest first.
    public func entries(broadcastID: UUID, logger: Logger) async throws -> [AuditEntry] {
        try await entries("WHERE broadcast_id = \(broadcastID) ORDER BY at, id", logger: logger)
    }

    /// The most recent entries, newest first: at most `limit`, since `since` when given, older than the entry
    /// `before` when given (the next page).
    public func recent(limit: Int = 100, since: Date? = nil, before: Int64? = nil, logger: Logger) async throws -> [AuditEntry] {
        let limit = max(1, min(limit, 10_000))
        return try await entries(
            """
            WHERE (\(since)::timestamptz IS NULL OR at >= \(since)) AND (\(before)::bigint IS NULL OR id < \(before))
            ORDER BY at DESC, id DESC LIMIT \(limit)
            """,
            logger: logger
        )
    }

    static let columns = "id, at, surface, role, name, address, action, app_id, broadcast_id, edition_id, detail, session_id, times, last_at"

    private func entries(_ tail: PostgresQuery, logger: Logger) async throws -> [AuditEntry] {
        let query = PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM audit_log " + tail.sql, binds: tail.binds)
        let rows = try await client.query(query, logger: logger)
        var found: [AuditEntry] = []
        for try await (id, at, surface, role, name, address, action, app, broadcast, edition, detail, session, times, lastAt) in rows.decode(
            (Int64, Date, String, String, String?, String?, String, Int?, UUID?, UUID?, String, Int64?, Int32, Date?).self
        ) {
            found.append(
                AuditEntry(
                    id: id,
                    at: at,
                    surface: AuditEntry.Surface(rawValue: surface) ?? .admin,
                    role: role,
                    name: name,
                    address: address,
                    action: action,
                    appID: app,
                    broadcastID: broadcast,
                    editionID: edition,
                    detail: detail,
                    sessionID: session,
                    times: Int(times),
                    lastAt: lastAt
                )
            )
        }
        return found
    }

    /// Writes `entry` where `runner` runs its statements: a connection inside the change's transaction. The time is
    /// the database's (`now()`, the transaction's start), not `entry.at`.
    package static func insert(_ entry: AuditEntry, on runner: some StatementRunner, logger: Logger) async throws {
        _ = try await runner.run(
            """
            INSERT INTO audit_log (surface, role, name, address, action, app_id, broadcast_id, edition_id, detail, session_id)
            VALUES (\(entry.surface.rawValue), \(entry.role), \(entry.name), \(entry.address), \(entry.action),
                \(entry.appID.map { Int32(clamping: $0) }), \(entry.broadcastID), \(entry.editionID), \(entry.detail), \(entry.sessionID))
            """,
            logger: logger
        )
    }

    /// Counts a sign-in: the line of the same surface, role, name and address written within the last hour gets one
    /// more (`times`, `last_at`, the newest session), or a new line is written. One statement; a viewer signing in
    /// again and again adds one line an hour, not one a sign-in.
    package static func countSignIn(_ entry: AuditEntry, on runner: some StatementRunner, logger: Logger) async throws {
        _ = try await runner.run(
            """
            WITH counted AS (
                UPDATE audit_log SET times = times + 1, last_at = now(), session_id = \(entry.sessionID)
                WHERE id = (
                    SELECT id FROM audit_log
                    WHERE at > now() - interval '1 hour' AND action = \(entry.action) AND surface = \(entry.surface.rawValue)
                        AND role = \(entry.role) AND name IS NOT DISTINCT FROM \(entry.name) AND address IS NOT DISTINCT FROM \(entry.address)
                    ORDER BY at DESC, id DESC LIMIT 1
                )
                RETURNING id
            )
            INSERT INTO audit_log (surface, role, name, address, action, detail, session_id)
            SELECT \(entry.surface.rawValue), \(entry.role), \(entry.name), \(entry.address), \(entry.action), \(entry.detail), \(entry.sessionID)
            WHERE NOT EXISTS (SELECT 1 FROM counted)
            """,
            logger: logger
        )
    }
}

/// Where a repository's statements run: the pool (each statement its own transaction) or one connection inside a
/// transaction, so that a change and its audit entry are written together.
package protocol StatementRunner: Sendable {
    func run(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence
}

extension PostgresClient: StatementRunner {
    package func run(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await self.query(query, logger: logger)
    }
}

extension PostgresConnection: StatementRunner {
    package func run(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await self.query(query, logger: logger)
    }
}

extension PostgresClient {
    /// Runs `change`, and when `audit` is given writes it to the audit log in the same transaction: both are
    /// stored or neither. Without `audit`, `change` runs on the pool as it always did.
    ///
    /// - Parameters:
    ///   - entry: the entry to write once the change has run: `audit` with what only the change knows filled in (the
    ///     id of what it made), or nil when the change turned out to change nothing.
    package func audited<Result: Sendable>(
        _ audit: AuditEntry?,
        logger: Logger,
        _ change: (any StatementRunner) async throws -> Result,
        entry: (AuditEntry, Result) -> AuditEntry? = { entry, _ in entry }
    ) async throws -> Result {
        guard let audit else { return try await change(self) }
        return try await transaction(logger: logger) { connection in
            let result = try await change(connection)
            if let written = entry(audit, result) {
                try await AuditRepository.insert(written, on: connection, logger: logger)
            }
            return result
        }
    }
}
