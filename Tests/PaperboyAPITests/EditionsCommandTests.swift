import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

/// `paperboy editions` as operators run it: the real binary against a fresh database.
@Suite("paperboy editions")
struct EditionsCommandTests {
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("paperboy")

    struct Run {
        var status: Int32
        var output: String
    }

    static func run(_ arguments: [String], database: DatabaseConfiguration) throws -> Run {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-editions-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = "postgres://\(database.username)@\(database.host):\(database.port)/\(database.database)?sslmode=disable"
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()
        try output.close()
        return Run(status: process.terminationStatus, output: try String(contentsOf: log, encoding: .utf8))
    }

    @Test(
        "publish prints the id (or JSON), show and list read it back; the same day again fails with one line naming issueDate",
        .enabled(if: FileManager.default.isExecutableFile(atPath: binary.path), "the paperboy binary is built beside the tests")
    )
    func publishListShow() async throws {
        try await TestDatabase.with { db in
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("edition-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try EditionRoutesTests.file().write(to: file, atomically: true, encoding: .utf8)

            let published = try Self.run(["editions", "publish", file.path, "--app", "\(app.id)", "--json"], database: db.configuration)
            #expect(published.status == 0, "\(published.output)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(published.output.utf8)) as? [String: Any])
            let id = try #require(json["id"] as? String)
            #expect(json["issueDate"] as? String == "2026-11-23")

            let shown = try Self.run(["editions", "show", id], database: db.configuration)
            #expect(shown.status == 0)
            #expect(shown.output.contains("issue date   2026-11-23"))
            #expect(shown.output.contains("https://cdn.example.com/2026-11-23/large-1.zip"))

            let listed = try Self.run(["editions", "list", "--publication", "morning", "--json"], database: db.configuration)
            let list = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]])
            #expect(list.map { $0["id"] as? String } == [id])

            let again = try Self.run(["editions", "publish", file.path], database: db.configuration)
            #expect(again.status != 0)
            #expect(again.output.contains("issueDate"))
            #expect(!again.output.contains("Usage"))

            let unknown = try Self.run(["editions", "show", UUID().uuidString], database: db.configuration)
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("there is no edition"))

            let badID = try Self.run(["editions", "show", "not-a-uuid"], database: db.configuration)
            #expect(badID.status != 0)
            #expect(badID.output.contains("<id>"))
        }
    }
}
