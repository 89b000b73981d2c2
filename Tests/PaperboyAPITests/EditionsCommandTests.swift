import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

/// `paperboy editions` as operators run it: the real binary against a fresh database.
@Suite("paperboy editions")
struct EditionsCommandTests {
    @Test(
        "publish prints the id (or JSON), show and list read it back; the same day again fails with one line naming issueDate",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
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

            let published = try await PaperboyBinary.run(
                ["editions", "publish", file.path, "--app", "\(app.id)", "--json"],
                database: db.configuration
            )
            #expect(published.status == 0, "\(published.output)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(published.output.utf8)) as? [String: Any])
            let id = try #require(json["id"] as? String)
            #expect(json["issueDate"] as? String == "2026-11-23")

            let shown = try await PaperboyBinary.run(["editions", "show", id], database: db.configuration)
            #expect(shown.status == 0)
            #expect(shown.output.contains("issue date   2026-11-23"))
            #expect(shown.output.contains("https://cdn.example.com/2026-11-23/large-1.zip"))

            let listed = try await PaperboyBinary.run(["editions", "list", "--publication", "morning", "--json"], database: db.configuration)
            let list = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]])
            #expect(list.map { $0["id"] as? String } == [id])

            let again = try await PaperboyBinary.run(["editions", "publish", file.path], database: db.configuration)
            #expect(again.status != 0)
            #expect(again.output.contains("issueDate"))
            #expect(!again.output.contains("Usage"))

            let unknown = try await PaperboyBinary.run(["editions", "show", UUID().uuidString], database: db.configuration)
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("there is no edition"))

            let badID = try await PaperboyBinary.run(["editions", "show", "not-a-uuid"], database: db.configuration)
            #expect(badID.status != 0)
            #expect(badID.output.contains("<id>"))
        }
    }
}
