import ArgumentParser
import EmbeddedPostgres
import Logging
import PaperboyStore
import PostgresNIO

/// `--database-url`, else `DATABASE_URL`, else the `PG*` variables.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: ArgumentHelp(
            "PostgreSQL URL, e.g. postgres://user:password@host:5432/paperboy (default: $DATABASE_URL, else $PGHOST and the other PG* variables).",
            valueName: "url"
        )
    )
    var databaseURL: String?

    /// The configured database, or nil when none is configured anywhere.
    func configuration() throws -> DatabaseConfiguration? {
        do {
            if let databaseURL { return try DatabaseConfiguration(url: databaseURL) }
            return try DatabaseConfiguration.fromEnvironment()
        } catch {
            throw CommandError("--database-url / DATABASE_URL: \(error.description)")
        }
    }

    /// The configured database; a clear error naming the flag when there is none.
    func requiredConfiguration() throws -> DatabaseConfiguration {
        guard let configuration = try configuration() else {
            throw CommandError("no database configured: pass --database-url, or set DATABASE_URL (or PGHOST and the other PG* variables)")
        }
        return configuration
    }
}

/// Runs `body` with a running client for `configuration`, closing it afterwards. A database that cannot be
/// reached within 15 s (or its `connect_timeout`, if longer) fails the command with the reason, naming the database
/// (the client's pool would wait for a connection for ever, and the command would hang without a word).
func withDatabase<Result: Sendable>(
    _ configuration: DatabaseConfiguration,
    logger: Logger,
    _ body: (PostgresClient) async throws -> Result
) async throws -> Result {
    // The pool warns when a query waits for run() to start, which in a short command is only noise.
    var background = logger
    background.logLevel = .error
    do {
        try await configuration.checkReachable(logger: background)
    } catch let error as DatabaseUnreachable {
        throw CommandError("\(error.description); is it running, and are --database-url / DATABASE_URL right?")
    }
    let client = configuration.makeClient(logger: background)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(client)
    }
}
