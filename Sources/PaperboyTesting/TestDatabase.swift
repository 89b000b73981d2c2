import EmbeddedPostgres
import Foundation
import Logging
import PaperboyStore
import PostgresNIO

/// A private, migrated database for one test.
///
/// One PostgreSQL cluster serves the whole test process: the one in `DATABASE_URL` when set (its user
/// must be allowed to create databases), else a throwaway ``EmbeddedPostgres`` cluster started on first
/// use. Migrations run once into a template database; each test gets a copy of it, so tests run in
/// parallel without seeing each other's rows.
public struct TestDatabase: Sendable {
    /// The test's own database.
    public let configuration: DatabaseConfiguration
    /// A running client for it.
    public let client: PostgresClient
    public let logger: Logger

    /// Runs `body` with a fresh migrated database, dropped afterwards.
    public static func with<Result: Sendable>(
        migrated: Bool = true,
        _ body: (TestDatabase) async throws -> Result
    ) async throws -> Result {
        let cluster = try await TestCluster.shared.value
        let name = "test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20))"
        try await cluster.createDatabase(name, template: migrated ? TestCluster.templateName : nil)
        var configuration = cluster.configuration
        configuration.database = name
        configuration.maximumConnections = 8
        configuration.connectTimeout = TestCluster.connectTimeout
        let logger = Logger(label: "paperboy.test")
        let client = configuration.makeClient(logger: logger)
        let database = TestDatabase(configuration: configuration, client: client, logger: logger)
        let running = await client.started()
        let result: Result
        do {
            result = try await body(database)
        } catch {
            running.cancel()
            _ = await running.ended(within: Self.stopLimit)
            try? await cluster.dropDatabase(name)
            throw error
        }
        // The client's run() returns once its pool has closed. A run that never did once held a test run for 25
        // minutes with nothing said (its connections closed, the database still there): it is waited for a bounded
        // time, and the test fails naming it; the database is dropped either way (FORCE ends what is left).
        running.cancel()
        let stopped = await running.ended(within: Self.stopLimit)
        try await cluster.dropDatabase(name)
        guard stopped else { throw ClientDidNotStop(database: name, limit: Self.stopLimit) }
        return result
    }

    /// How long a test's client gets to stop once the test is over.
    static let stopLimit: Duration = .seconds(30)
}

/// A test database's `PostgresClient.run()` had not returned ``TestDatabase/stopLimit`` after it was cancelled.
public struct ClientDidNotStop: Error, CustomStringConvertible {
    public var database: String
    public var limit: Duration

    public var description: String {
        "the PostgresClient of test database \(database) did not stop within \(limit) of the test's end (run() cancelled, not returned); the database was dropped"
    }
}

/// The cluster the test process uses, started once.
///
/// An embedded cluster is never stopped here: no code runs when the test process exits, so its watchdog
/// (see ``EmbeddedPostgres``) stops it and removes its directory then, whether the runner exits, is
/// interrupted or is killed.
private struct TestCluster: Sendable {
    static let templateName = "paperboy_template"
    /// The whole suite runs in parallel on as few as two cores: a backend can take many seconds to start
    /// while others migrate and seed, and a connection that gives up after PostgresNIO's default 10 s
    /// fails a test that would have passed.
    static let connectTimeout: Duration = .seconds(60)
    static let shared = Task { try await TestCluster.start() }
    private static let startExecutor = ThreadExecutor()

    let configuration: DatabaseConfiguration
    let embedded: EmbeddedPostgres?

    static func start() async throws -> TestCluster {
        let logger = Logger(label: "paperboy.test")
        let cluster: TestCluster
        if let configured = try DatabaseConfiguration.fromEnvironment() {
            cluster = TestCluster(configuration: configured, embedded: nil)
        } else {
            // `initdb` and `pg_ctl start` are waited for with a blocking `waitpid`, for many seconds on two busy
            // cores: on a thread of their own, not on one of the cooperative threads that the tests share.
            // The parallel suite holds many pools and `serve` processes (up to 20 connections each) at once: 200
            // connections were once not enough, and a `serve` failed to start with "too many clients already".
            let embedded = try await withTaskExecutorPreference(Self.startExecutor) {
                try await EmbeddedPostgres.start(maxConnections: 500, logger: logger)
            }
            cluster = TestCluster(configuration: try DatabaseConfiguration(url: embedded.url(database: "postgres")), embedded: embedded)
        }
        try await cluster.dropDatabase(templateName)
        try await cluster.createDatabase(templateName, template: nil)
        var template = cluster.configuration
        template.database = templateName
        template.connectTimeout = connectTimeout
        let client = template.makeClient(logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            await client.start(in: &group)
            defer { group.cancelAll() }
            try await Migrator().migrate(client: client, logger: logger)
        }
        return cluster
    }

    func createDatabase(_ name: String, template: String?) async throws {
        let sql = "CREATE DATABASE \"\(name)\"" + (template.map { " TEMPLATE \"\($0)\"" } ?? "")
        // Copying a template fails while a session is still leaving it (the migrating client closes
        // asynchronously); that passes within moments.
        for attempt in 1... {
            do {
                return try await administer(sql)
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55006" && attempt < 50 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    func dropDatabase(_ name: String) async throws {
        try await administer("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
    }

    /// Runs a statement that cannot run in a transaction, on a short-lived connection to the cluster.
    private func administer(_ sql: String) async throws {
        let logger = Logger(label: "paperboy.test")
        var connectionConfiguration = PostgresConnection.Configuration(
            host: configuration.host,
            port: configuration.port,
            username: configuration.username,
            password: configuration.password,
            database: configuration.database == Self.templateName ? "postgres" : configuration.database,
            tls: .disable
        )
        connectionConfiguration.options.connectTimeout = .seconds(Int64(Self.connectTimeout.components.seconds))
        let connection = try await PostgresConnection.connect(configuration: connectionConfiguration, id: 1, logger: logger)
        do {
            _ = try await connection.simpleQuery(sql).get()
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}
