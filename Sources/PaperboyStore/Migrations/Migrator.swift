import Logging
import PaperboyCore
import PostgresNIO

/// Applies ``Migration``s in order and records each with its checksum in `paperboy_migrations`.
///
/// Running it twice is a no-op. A recorded migration whose SQL changed since is refused, naming the file.
/// Two migrators at once (two processes starting together) are serialized by a PostgreSQL advisory lock.
public struct Migrator: Sendable {
    /// The advisory lock key that serializes migrators ("paperboy" in ASCII).
    static let lockKey: Int64 = 0x7061_7065_7262_6f79

    public let migrations: [Migration]

    public init(migrations: [Migration] = Migration.bundled) {
        self.migrations = migrations.sorted { $0.name < $1.name }
    }

    /// Applies every pending migration, each in its own transaction.
    ///
    /// - Returns: the names of the migrations applied now (empty when the database was current).
    /// - Throws: ``MigrationError`` when an applied file changed or the database knows a migration this
    ///   build does not.
    @discardableResult
    public func migrate(client: PostgresClient, logger: Logger) async throws -> [String] {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            do {
                let applied = try await migrateLocked(connection: connection, logger: logger)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    /// What is applied and what is pending, without changing anything.
    public func status(client: PostgresClient, logger: Logger) async throws -> MigrationStatus {
        try await client.withConnection { connection in
            let recorded = try await recordedMigrations(connection: connection, logger: logger, create: false)
            return try status(recorded: recorded)
        }
    }

    private func migrateLocked(connection: PostgresConnection, logger: Logger) async throws -> [String] {
        let recorded = try await recordedMigrations(connection: connection, logger: logger, create: true)
        let status = try status(recorded: recorded)
        for migration in migrations where status.pending.contains(migration.name) {
            logger.info("applying migration", metadata: [LogKey.migration: "\(migration.name)"])
            try await connection.withTransaction(logger: logger) { transaction in
                for statement in migration.statements {
                    try await transaction.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await transaction.query(
                    "INSERT INTO paperboy_migrations (name, checksum) VALUES (\(migration.name), \(migration.checksum))",
                    logger: logger
                )
            }
        }
        return status.pending
    }

    private func recordedMigrations(connection: PostgresConnection, logger: Logger, create: Bool) async throws -> [String: String] {
        if create {
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS paperboy_migrations (
                    name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                logger: logger
            )
        } else {
            let exists = try await connection.query("SELECT to_regclass('paperboy_migrations') IS NOT NULL", logger: logger)
            for try await (present) in exists.decode(Bool.self) where !present { return [:] }
        }
        var recorded: [String: String] = [:]
        let rows = try await connection.query("SELECT name, checksum FROM paperboy_migrations", logger: logger)
        for try await (name, checksum) in rows.decode((String, String).self) {
            recorded[name] = checksum
        }
        return recorded
    }

    private func status(recorded: [String: String]) throws(MigrationError) -> MigrationStatus {
        let known = Set(migrations.map(\.name))
        if let unknown = recorded.keys.sorted().first(where: { !known.contains($0) }) {
            throw MigrationError(code: .unknownMigration, file: unknown)
        }
        for migration in migrations {
            if let checksum = recorded[migration.name], checksum != migration.checksum {
                throw MigrationError(code: .changedAfterApplied, file: migration.name)
            }
        }
        return MigrationStatus(
            applied: migrations.map(\.name).filter { recorded[$0] != nil },
            pending: migrations.map(\.name).filter { recorded[$0] == nil }
        )
    }
}

/// Which migrations a database has.
public struct MigrationStatus: Sendable, Equatable {
    public var applied: [String]
    public var pending: [String]
    /// Whether the database has every migration of this build.
    public var isCurrent: Bool { pending.isEmpty }
}

/// A database whose migrations this build cannot reconcile.
public struct MigrationError: Error, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// An applied migration's file changed since; migrations are append-only.
        case changedAfterApplied
        /// The database has a migration that this build does not know: it is newer than this binary.
        case unknownMigration
    }

    public var code: Code
    /// The migration file concerned.
    public var file: String

    public var description: String {
        switch code {
        case .changedAfterApplied:
            "migration \(file) was changed after it was applied; restore the original file and add a new numbered migration instead"
        case .unknownMigration:
            "the database has migration \(file), which this build of paperboy does not know; run a newer paperboy"
        }
    }
}
