import Foundation
import PaperboyStore

/// The `paperboy` executable as operators run it, for the tests of the CLI, `paperboy serve` and the Docker
/// files: where `swift build` put it, and running it to completion.
public enum PaperboyBinary {
    /// `paperboy` beside the test bundle, where `swift test` builds it; else `.build/debug/paperboy` of the
    /// repository (a test bundle run from elsewhere).
    public static let url: URL = {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("paperboy")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return repositoryRoot.appendingPathComponent(".build/debug/paperboy")
    }()

    /// Whether the binary is there: the tests that run it are skipped without it.
    public static var isBuilt: Bool { FileManager.default.isExecutableFile(atPath: url.path) }

    /// The repository's root directory (for `docker/`, `scripts/` and `openapi.yaml`).
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `paperboy` with `arguments` to completion, with this process's environment plus `environment`,
    /// and `DATABASE_URL` for `database` when given; suspended, not blocked, until it exits (see ``CommandRun``).
    public static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        database: DatabaseConfiguration? = nil
    ) async throws -> CommandRun {
        var merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let database { merged["DATABASE_URL"] = database.testURL }
        return try await CommandRun.run(url, arguments, environment: merged)
    }

    /// Starts `paperboy` with `arguments` and returns it running, its standard output and error written to a
    /// new file at `log`, with this process's environment changed by `changes` (nil removes a variable).
    public static func start(_ arguments: [String], environment changes: [String: String?] = [:], log: URL) throws -> Process {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        // The child has descriptors of its own once it runs.
        defer { try? output.close() }
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in changes { environment[name] = value }
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return process
    }

    /// Polls a `paperboy serve` or `worker` log for its `address=http://127.0.0.1:PORT` line (or `https`), every 50 ms
    /// for `seconds` at most; nil when the process exits first or the time runs out.
    public static func waitForPort(in log: URL, process: Process, seconds: Double = 20) async throws -> Int? {
        for _ in 0..<Int(seconds * 20) {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"address=https?://127\.0\.0\.1:(\d+)"#, options: .regularExpression),
                let port = Int(text[range].split(separator: ":").last ?? "")
            {
                return port
            }
            if !process.isRunning { return nil }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }
}

extension DatabaseConfiguration {
    /// The `DATABASE_URL` of a test database (trust authentication, no TLS).
    public var testURL: String {
        "postgres://\(username)@\(host):\(port)/\(database)?sslmode=disable&connect_timeout=\(connectTimeout.components.seconds)"
    }
}
