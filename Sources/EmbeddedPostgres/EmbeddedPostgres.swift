import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A private, throwaway PostgreSQL cluster on a loopback port: the embedded default behind the
/// zero-setup commands and the test suite.
///
/// It is tuned for speed, not durability (`fsync=off`): never put data you want to keep in it. The cluster
/// lives in a temporary directory that ``stop()`` removes. A watchdog process (``ClusterWatchdog``) stops the
/// cluster and removes the directory if the process that started it exits without calling ``stop()`` (a
/// crash, `SIGKILL`, `timeout`, Ctrl-C, a test runner that exits), so nothing is left running.
///
/// PostgreSQL refuses to run as root: when the current user is root, the cluster runs as the `postgres`
/// system user through `runuser`.
public final class EmbeddedPostgres: Sendable {
    /// Where the cluster listens.
    public let host: String
    /// The TCP port on `host`.
    public let port: Int
    /// The superuser to connect as (trust authentication, loopback only).
    public let username: String
    /// The cluster's temporary directory (data, socket and log).
    public let directory: String
    /// Where `initdb`, `pg_ctl` and `postgres` were found.
    public let binDirectory: String

    private let runAs: String?
    private let watchdog: ClusterWatchdog
    private let logger: Logger

    private init(
        host: String,
        port: Int,
        username: String,
        directory: String,
        binDirectory: String,
        runAs: String?,
        watchdog: ClusterWatchdog,
        logger: Logger
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.directory = directory
        self.binDirectory = binDirectory
        self.runAs = runAs
        self.watchdog = watchdog
        self.logger = logger
    }

    /// The libpq-style URL of a database in this cluster.
    public func url(database: String) -> String {
        "postgres://\(username)@\(host):\(port)/\(database)?sslmode=disable"
    }

    /// Initializes and starts a new cluster.
    ///
    /// - Parameters:
    ///   - search: where to look for `initdb`, `pg_ctl` and `postgres`; by default `PAPERBOY_PG_BIN`, else the
    ///     newest `/usr/lib/postgresql/*/bin`, else `PATH` (see ``PostgresBinaries/Search/standard(environment:)``).
    ///   - maxConnections: the server's `max_connections`: 200 serves a demo and its processes; a test process
    ///     that runs many tests at once, each with its pool and its `serve` or `worker` processes, wants more.
    ///   - logger: receives start and stop messages.
    /// - Throws: ``EmbeddedPostgresError`` naming the step that failed; without PostgreSQL, saying what to
    ///   install or set. A failed start leaves no server running and no directory behind.
    public static func start(
        search: PostgresBinaries.Search = .standard(),
        maxConnections: Int = 200,
        logger: Logger = Logger(label: "paperboy.embedded-postgres")
    ) async throws
        -> EmbeddedPostgres
    {
        let bin = try PostgresBinaries.locate(search).directory
        let runAs: String? = geteuid() == 0 ? "postgres" : nil
        if let runAs, getpwnam(runAs) == nil {
            throw EmbeddedPostgresError(
                step: "find PostgreSQL",
                message: "PostgreSQL refuses to run as root and there is no \(runAs) user to run it as: install the PostgreSQL "
                    + "server (apt-get install postgresql-15 creates the user) or run as an ordinary user"
            )
        }
        let username = "postgres"
        let directory = try Self.makeTemporaryDirectory(owner: runAs)
        let data = directory + "/data"
        let stopAtOnce = ["-D", data, "-m", "immediate", "-t", "10", "stop"]
        // Watched from before initdb: the owner may die at any step.
        let watchdog: ClusterWatchdog
        do {
            let asUser = runAs.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []
            watchdog = try ClusterWatchdog.start(directory: directory, stopCommand: asUser + [bin + "/pg_ctl"] + stopAtOnce)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        do {
            try Self.runTool(
                bin + "/initdb",
                ["-D", data, "-U", username, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"],
                as: runAs,
                step: "initdb"
            )
            let port = try await Self.startServer(bin: bin, directory: directory, runAs: runAs, maxConnections: maxConnections)
            logger.info("started a throwaway PostgreSQL cluster", metadata: ["port": "\(port)", "directory": "\(directory)"])
            return EmbeddedPostgres(
                host: "127.0.0.1",
                port: port,
                username: username,
                directory: directory,
                binDirectory: bin,
                runAs: runAs,
                watchdog: watchdog,
                logger: logger
            )
        } catch {
            // Whatever step failed, no server may outlive the start (`startServer` stops each failed try).
            try? Self.runTool(bin + "/pg_ctl", stopAtOnce, as: runAs, step: "pg_ctl stop")
            try? FileManager.default.removeItem(atPath: directory)
            watchdog.release()
            throw error
        }
    }

    /// Creates a database, optionally as a copy of a template database.
    public func createDatabase(_ name: String, template: String? = nil) async throws {
        var sql = "CREATE DATABASE \(Self.quoteIdentifier(name))"
        if let template { sql += " TEMPLATE \(Self.quoteIdentifier(template))" }
        try psql(sql, step: "create database \(name)")
    }

    /// Drops a database if it exists, disconnecting its sessions.
    public func dropDatabase(_ name: String) async throws {
        try psql("DROP DATABASE IF EXISTS \(Self.quoteIdentifier(name)) WITH (FORCE)", step: "drop database \(name)")
    }

    /// Stops the cluster and removes its directory.
    public func stop() async throws {
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            watchdog.release()
        }
        try Self.runTool(binDirectory + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "stop"], as: runAs, step: "pg_ctl stop")
        logger.info("stopped the throwaway PostgreSQL cluster", metadata: ["port": "\(port)"])
    }

    private func psql(_ sql: String, step: String) throws {
        let psql = ["/usr/bin/psql", binDirectory + "/psql"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "psql"
        try Self.runTool(
            psql,
            ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", String(port), "-U", username, "-d", "postgres", "-c", sql],
            as: nil,
            step: step
        )
    }

    private static func startServer(bin: String, directory: String, runAs: String?, maxConnections: Int) async throws -> Int {
        var lastError: (any Error)?
        // A port found free can be taken before the server binds it; try a few.
        for _ in 0..<5 {
            let port = try freeLoopbackPort()
            let options = [
                "-p \(port)", "-k \(directory)", "-c listen_addresses=127.0.0.1", "-c fsync=off",
                "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=\(maxConnections)",
            ].joined(separator: " ")
            do {
                try runTool(
                    bin + "/pg_ctl",
                    ["-D", directory + "/data", "-l", directory + "/server.log", "-o", options, "-w", "-t", "60", "start"],
                    as: runAs,
                    step: "pg_ctl start"
                )
                return port
            } catch {
                lastError = error
                // A server that started but did not answer in time would hold the data directory.
                try? runTool(
                    bin + "/pg_ctl",
                    ["-D", directory + "/data", "-m", "immediate", "-t", "10", "stop"],
                    as: runAs,
                    step: "pg_ctl stop"
                )
            }
        }
        throw lastError ?? EmbeddedPostgresError(step: "pg_ctl start", message: "no free port")
    }

    private static func makeTemporaryDirectory(owner: String?) throws -> String {
        var template = Array((NSTemporaryDirectory() + "/paperboy-pg-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw EmbeddedPostgresError(step: "create directory", message: String(cString: strerror(errno)))
        }
        let path = String(cString: made)
        if let owner {
            try runTool("/bin/chown", [owner + ":" + owner, path], as: nil, step: "chown \(path) to \(owner)")
        }
        return path
    }

    private static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw EmbeddedPostgresError(step: "find a free port", message: String(cString: strerror(errno))) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw EmbeddedPostgresError(step: "find a free port", message: String(cString: strerror(errno))) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs a PostgreSQL tool (`pg_ctl`, `initdb`, `psql`) to completion, as `user` when given, and throws
    /// with its output when it fails. Through ``ChildProcess``: `pg_ctl start` leaves a server behind that
    /// `Process` would wait for.
    ///
    /// - Parameter step: what the tool does, for the error, e.g. `pg_ctl stop`.
    public static func runTool(_ executable: String, _ arguments: [String], as user: String?, step: String) throws(EmbeddedPostgresError) {
        // `env -C /`: a server started as `postgres` cannot read root's working directory.
        let command = (user.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + ["/usr/bin/env", "-C", "/", executable] + arguments
        let outputPath = NSTemporaryDirectory() + "/paperboy-pg-output-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid: pid_t
        do {
            pid = try ChildProcess.spawn(command, output: outputPath)
        } catch {
            throw EmbeddedPostgresError(step: step, message: error.description)
        }
        let status = ChildProcess.waitForExit(pid)
        guard ChildProcess.exitedCleanly(status) else {
            let text = (FileManager.default.contents(atPath: outputPath).map { String(decoding: $0, as: UTF8.self) } ?? "")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw EmbeddedPostgresError(step: step, message: "exit status \(status): \(text.suffix(800))")
        }
    }

    private static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// A step of starting, using or stopping the embedded cluster failed.
public struct EmbeddedPostgresError: Error, CustomStringConvertible {
    /// What was being done, e.g. `initdb` or `pg_ctl start`.
    public var step: String
    /// What went wrong, including the tool's own output.
    public var message: String

    public var description: String { "embedded PostgreSQL: \(step) failed: \(message)" }
}
