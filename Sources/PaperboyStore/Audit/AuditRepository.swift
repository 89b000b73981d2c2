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

    /// Records an entry on its own: a sign-in or a sign-out, which change nothing else.
    public func record(_ entry: AuditEntry, logger: Logger) async throws {
        try await Self.insert(entry, on: client, logger: logger)
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

    static let columns = "id, at, surface, role, name, address, action, app_id, broadcast_id, edition_id, detail"

    private func entries(_ tail: PostgresQuery, logger: Logger) async throws -> [AuditEntry] {
        let query = PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM audit_log " + tail.sql, binds: tail.binds)
        let rows = try await client.query(query, logger: logger)
        var found: [AuditEntry] = []
        for try await (id, at, surface, role, name, address, action, app, broadcast, edition, detail) in rows.decode(
            (Int64, Date, String, String, String?, String?, String, Int?, UUID?, UUID?, String).self
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
                    detail: detail
                )
            )
        }
        return found
    }

    /// Writes `entry` where `runner` runs its statements: a connection inside the change's transaction.
    package static func insert(_ entry: AuditEntry, on runner: some StatementRunner, logger: Logger) async throws {
        _ = try await runner.run(
            """
            INSERT INTO audit_log (at, surface, role, name, address, action, app_id, broadcast_id, edition_id, detail)
            VALUES (\(entry.at), \(entry.surface.rawValue), \(entry.role), \(entry.name), \(entry.address), \(entry.action),
                \(entry.appID.map { Int32(clamping: $0) }), \(entry.broadcastID), \(entry.editionID), \(entry.detail))
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
