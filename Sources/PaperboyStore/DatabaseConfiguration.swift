import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// Where the PostgreSQL database is, from a `DATABASE_URL` or the usual `PG*` variables.
///
/// The password is kept out of ``description`` so that a configuration can be logged.
public struct DatabaseConfiguration: Sendable, CustomStringConvertible {
    public enum TLSMode: String, Sendable {
        case disable
        case prefer
        case require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// The most connections one Paperboy process opens.
    public var maximumConnections: Int = 20
    /// How long opening one connection may take: `connect_timeout` in the URL, or `PGCONNECT_TIMEOUT`, as libpq reads
    /// them (whole seconds).
    public var connectTimeout: Duration = .seconds(10)

    public init(host: String, port: Int = 5432, username: String, password: String? = nil, database: String, tls: TLSMode = .prefer) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=disable|prefer|require`.
    public init(url text: String) throws(DatabaseConfigurationError) {
        guard let url = URLComponents(string: text), let scheme = url.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw DatabaseConfigurationError(message: "a database URL looks like postgres://user:password@host:5432/database")
        }
        guard let host = url.host, !host.isEmpty else {
            throw DatabaseConfigurationError(message: "the database URL has no host")
        }
        let database = String(url.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else {
            throw DatabaseConfigurationError(message: "the database URL has no database name (postgres://host/NAME)")
        }
        self.init(
            host: host,
            port: url.port ?? 5432,
            username: url.user ?? "postgres",
            password: url.password,
            database: database
        )
        if let mode = url.queryItems?.first(where: { $0.name == "sslmode" })?.value {
            switch mode {
            case "disable": tls = .disable
            case "allow", "prefer": tls = .prefer
            case "require", "verify-ca", "verify-full": tls = .require
            default: throw DatabaseConfigurationError(message: "unknown sslmode '\(mode)' in the database URL")
            }
        }
        if let seconds = url.queryItems?.first(where: { $0.name == "connect_timeout" })?.value {
            connectTimeout = try Self.connectTimeout(seconds, named: "connect_timeout in the database URL")
        }
    }

    /// The longest `connect_timeout` (URL) or `PGCONNECT_TIMEOUT` accepted, in seconds.
    public static let maximumConnectTimeout = 600

    /// libpq's `connect_timeout`: whole seconds, here 1 to ``maximumConnectTimeout`` (libpq reads 0 as "wait for
    /// ever", which a command should not).
    static func connectTimeout(_ text: String, named name: String) throws(DatabaseConfigurationError) -> Duration {
        guard let seconds = Int(text), (1...maximumConnectTimeout).contains(seconds) else {
            throw DatabaseConfigurationError(message: "\(name) is whole seconds from 1 to \(maximumConnectTimeout), not '\(text)'")
        }
        return .seconds(seconds)
    }

    /// The configuration from `DATABASE_URL`, else from `PGHOST` (with `PGPORT`, `PGUSER`, `PGPASSWORD`,
    /// `PGDATABASE`, `PGSSLMODE`); `nil` when neither is set.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(DatabaseConfigurationError) -> DatabaseConfiguration? {
        if let url = environment["DATABASE_URL"], !url.isEmpty {
            return try DatabaseConfiguration(url: url)
        }
        guard let host = environment["PGHOST"], !host.isEmpty else { return nil }
        guard let port = Int(environment["PGPORT"] ?? "5432") else {
            throw DatabaseConfigurationError(message: "PGPORT is not a number")
        }
        let username = environment["PGUSER"] ?? "postgres"
        var configuration = DatabaseConfiguration(
            host: host,
            port: port,
            username: username,
            password: environment["PGPASSWORD"],
            database: environment["PGDATABASE"] ?? username
        )
        if let mode = environment["PGSSLMODE"] {
            configuration.tls = mode == "disable" ? .disable : (mode == "require" ? .require : .prefer)
        }
        if let seconds = environment["PGCONNECT_TIMEOUT"], !seconds.isEmpty {
            configuration.connectTimeout = try connectTimeout(seconds, named: "PGCONNECT_TIMEOUT")
        }
        return configuration
    }

    /// Settings of every session Paperboy opens, sent with the connection's startup message.
    ///
    /// - `jit=off`: PostgreSQL compiles a statement whose estimated cost passes `jit_above_cost` (100,000). Paperboy's
    ///   statements run in milliseconds, but a batch's read estimates its hourly-budget probes from the ledger's
    ///   statistics, which lag a wave that is filling the ledger; estimated at 805,000, an 8 ms read of 1,000 devices was
    ///   compiled for 300 ms of CPU, every batch (issue 36, `auto_explain` during a 1,000,000-device wave 1). Nothing
    ///   Paperboy runs is long enough for compiled expressions to pay back.
    public static let sessionSettings: [(String, String)] = [("jit", "off")]

    /// Settings of the sessions that record receipts (``makeReceiptClient(logger:)``), with ``sessionSettings``:
    ///
    /// - `plan_cache_mode=force_generic_plan`: a prepared statement is planned once per connection, as
    ///   ``ReceiptRepository``'s statements are meant to be. Left to itself PostgreSQL compares the generic plan's
    ///   estimate with the custom plans' and, for the batch statement, whose arrays it counts as 10 rows in the
    ///   generic plan and as they are in a custom one, kept planning every batch of fewer than about ten receipts
    ///   again: 2,388 plans for 2,383 calls, 1.49 ms of planning beside 1.40 ms of execution per call (issue 49,
    ///   `pg_stat_statements` at 1,000,000 devices). The setting would also make every unnamed statement's plan a
    ///   generic one, which is why only these sessions have it: they run nothing but the receipts' statements, whose
    ///   generic plans `RequestPlanTests` checks.
    /// - `application_name=paperboy receipts`: the sessions are told apart in `pg_stat_activity`.
    public static let receiptSessionSettings: [(String, String)] =
        sessionSettings + [("plan_cache_mode", "force_generic_plan"), ("application_name", "paperboy receipts")]

    /// The connections of ``makeReceiptClient(logger:)``: one for each receipt statement the batcher runs at once
    /// (two), and one for reading back a receipt that was kept, so that the read does not wait for a batch.
    public static let receiptConnections = 3

    /// A client for this database. Run it (`client.run()`) in a task or a `ServiceGroup`.
    public func makeClient(logger: Logger) -> PostgresClient {
        makeClient(logger: logger, maximumConnections: maximumConnections, settings: Self.sessionSettings)
    }

    /// A client for ``ReceiptRepository``'s statements alone (``receiptSessionSettings``, ``receiptConnections``),
    /// beside the process's own (``makeClient(logger:)``). Run it as that one is run.
    public func makeReceiptClient(logger: Logger) -> PostgresClient {
        makeClient(logger: logger, maximumConnections: Self.receiptConnections, settings: Self.receiptSessionSettings)
    }

    private func makeClient(logger: Logger, maximumConnections: Int, settings: [(String, String)]) -> PostgresClient {
        let tlsConfiguration: PostgresClient.Configuration.TLS
        switch tls {
        case .disable: tlsConfiguration = .disable
        case .prefer: tlsConfiguration = .prefer(.makeClientConfiguration())
        case .require: tlsConfiguration = .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: host,
            port: port,
            username: username,
            password: password,
            database: database,
            tls: tlsConfiguration
        )
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = connectTimeout
        configuration.options.additionalStartupParameters = settings
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// Opens one connection and closes it again, trying for up to `patience` (at least ``connectTimeout``): a command
    /// fails with the reason (refused, no such database, authentication) instead of waiting, as `PostgresClient`'s
    /// pool does, for a connection for ever.
    /// - Throws: ``DatabaseUnreachable``.
    public func checkReachable(patience: Duration = .seconds(15), logger: Logger) async throws {
        let patience = max(patience, connectTimeout)
        var connection = PostgresConnection.Configuration(
            host: host,
            port: port,
            username: username,
            password: password,
            database: database,
            tls: .disable
        )
        switch tls {
        case .disable: break
        case .prefer: connection.tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: connection.tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        connection.options.connectTimeout = TimeAmount(connectTimeout)
        let clock = ContinuousClock()
        let giveUp = clock.now + patience
        while true {
            do {
                let opened = try await PostgresConnection.connect(configuration: connection, id: 0, logger: logger)
                try? await opened.close()
                return
            } catch {
                // The server answered (no such database, authentication failed): waiting will not change that.
                let answered = (error as? PSQLError)?.serverInfo != nil
                guard !answered, clock.now + .seconds(1) < giveUp else {
                    throw DatabaseUnreachable(database: description, reason: Self.reason(error), patience: answered ? nil : patience)
                }
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// What went wrong, in words: the server's message (no such database, authentication failed) or the network's.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] { return message }
        if let underlying = error.underlying { return "\(underlying)" }
        return "\(error.code)"
    }

    public var description: String {
        "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)"
    }
}

/// A database URL or `PG*` variable that cannot be used.
public struct DatabaseConfigurationError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The database could not be reached within the patience given.
public struct DatabaseUnreachable: Error, CustomStringConvertible {
    public var database: String
    public var reason: String
    /// How long it was tried; nil when the server refused at once.
    public var patience: Duration?

    public var description: String {
        "cannot connect to PostgreSQL at \(database)\(patience.map { " (tried for \($0.components.seconds) s)" } ?? ""): \(reason)"
    }
}
