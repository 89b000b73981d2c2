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
    @Test(
        "serves on a migrated database, then stops accepting on SIGTERM and exits 0",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func sigtermExitsZero() async throws {
        try await TestDatabase.with { db in
            let (process, log) = try Self.start(db.configuration)
            defer { if process.isRunning { process.terminate() } }
            let port = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: process),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )

            let (body, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health/ready")!)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(String(decoding: body, as: UTF8.self).contains("ready"))

            kill(process.processIdentifier, SIGTERM)
            try await process.exited()
            #expect(process.terminationReason == .exit)
            #expect(process.terminationStatus == 0)
            await #expect(throws: (any Error).self, "nothing listens after the server stopped") {
                _ = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health/live")!)
            }
        }
    }

    @Test(
        "refuses to start on a database with pending migrations, saying to run paperboy migrate",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func refusesPendingMigrations() async throws {
        try await TestDatabase.with(migrated: false) { db in
            let (process, log) = try Self.start(db.configuration)
            try await process.exited()
            #expect(process.terminationStatus != 0)
            let output = try String(contentsOf: log, encoding: .utf8)
            #expect(output.contains("run `paperboy migrate`"))
        }
    }

    private static func start(_ database: DatabaseConfiguration) throws -> (Process, URL) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
        let process = try PaperboyBinary.start(
            ["serve", "--port", "0"],
            environment: ["DATABASE_URL": database.testURL, "PAPERBOY_ADMIN_TOKEN": nil],
            log: log
        )
        return (process, log)
    }
}
