import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `paperboy serve` as operators run it: a real process, stopped with SIGTERM.
@Suite("paperboy serve")
struct ServeProcessTests {
    /// The `paperboy` binary that `swift test` built beside the test bundle.
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("paperboy")

    @Test(
        "serves on a migrated database, then stops accepting on SIGTERM and exits 0",
        .enabled(if: FileManager.default.isExecutableFile(atPath: binary.path), "the paperboy binary is built beside the tests")
    )
    func sigtermExitsZero() async throws {
        try await TestDatabase.with { db in
            let (process, log) = try Self.start(db.configuration)
            defer { if process.isRunning { process.terminate() } }
            let port = try await Self.waitForPort(in: log, process: process)

            let (body, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health/ready")!)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(String(decoding: body, as: UTF8.self).contains("ready"))

            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            #expect(process.terminationReason == .exit)
            #expect(process.terminationStatus == 0)
            await #expect(throws: (any Error).self, "nothing listens after the server stopped") {
                _ = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health/live")!)
            }
        }
    }

    @Test(
        "refuses to start on a database with pending migrations, saying to run paperboy migrate",
        .enabled(if: FileManager.default.isExecutableFile(atPath: binary.path), "the paperboy binary is built beside the tests")
    )
    func refusesPendingMigrations() async throws {
        try await TestDatabase.with(migrated: false) { db in
            let (process, log) = try Self.start(db.configuration)
            process.waitUntilExit()
            #expect(process.terminationStatus != 0)
            let output = try String(contentsOf: log, encoding: .utf8)
            #expect(output.contains("run `paperboy migrate`"))
        }
    }

    private static func start(_ database: DatabaseConfiguration) throws -> (Process, URL) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve", "--port", "0"]
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = "postgres://\(database.username)@\(database.host):\(database.port)/\(database.database)?sslmode=disable"
        environment["PAPERBOY_ADMIN_TOKEN"] = nil
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return (process, log)
    }

    /// Polls the server's log for its "listening" line: bounded, 10 seconds at most.
    private static func waitForPort(in log: URL, process: Process) async throws -> Int {
        for _ in 0..<200 {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"address=http://127\.0\.0\.1:(\d+)"#, options: .regularExpression),
                let port = Int(text[range].split(separator: ":").last ?? "")
            {
                return port
            }
            #expect(process.isRunning, "serve exited early: \(text)")
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CancellationError()
    }
}
