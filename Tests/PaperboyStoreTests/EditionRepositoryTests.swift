import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Edition repository")
struct EditionRepositoryTests {
    static let now = ISO8601DateFormatter().date(from: "2026-11-22T20:00:00Z")!
    static let sha = String(repeating: "0f", count: 32)

    static func manifest(_ publication: String = "morning", issueDate: String) -> EditionManifest {
        EditionManifest(
            publication: publication,
            issueDate: issueDate,
            deadline: "2099-01-01T09:00:00+09:00",
            tiers: ["large": .init(bundles: [.init(url: "https://cdn.example.com/\(issueDate)/large-1.zip", bytes: 10, sha256: sha)])],
            pages: [.init(number: 1, title: "Front page")]
        )
    }

    static func app(_ db: TestDatabase, bundle: String = "com.example.news", publications: [String] = ["morning", "evening"]) async throws -> App {
        let app = try await AppRepository(client: db.client).create(
            try NewApp(bundleID: bundle, teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
            logger: db.logger
        ).app
        for slug in publications {
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: slug, title: nil, logger: db.logger)
        }
        return app
    }

    @Test("publish stores the manifest; find, latest and list read it back")
    func publishAndRead() async throws {
        try await TestDatabase.with { db in
            let app = try await Self.app(db)
            let editions = EditionRepository(client: db.client)
            let first = try await editions.publish(Self.manifest(issueDate: "2026-11-23"), appID: app.id, now: Self.now, logger: db.logger)
            let second = try await editions.publish(Self.manifest(issueDate: "2026-11-24"), appID: nil, now: Self.now, logger: db.logger)
            _ = try await editions.publish(Self.manifest("evening", issueDate: "2026-11-24"), appID: app.id, now: Self.now, logger: db.logger)

            let found = try #require(try await editions.find(id: first.id, logger: db.logger))
            #expect(found.manifest == Self.manifest(issueDate: "2026-11-23"))
            #expect(found.appID == app.id)
            #expect(try await editions.find(id: UUID(), logger: db.logger) == nil)

            #expect(try await editions.latest(appID: app.id, publication: "morning", logger: db.logger)?.id == second.id)
            #expect(try await editions.latest(appID: app.id, publication: "nope", logger: db.logger) == nil)

            let morning = try await editions.list(publication: "morning", logger: db.logger)
            #expect(morning.map(\.id) == [second.id, first.id])
            #expect(try await editions.list(limit: 2, logger: db.logger).count == 2)
        }
    }

    @Test("the same publication and issue date again is a conflict naming issueDate, and changes nothing")
    func duplicateIssueDate() async throws {
        try await TestDatabase.with { db in
            let app = try await Self.app(db)
            let editions = EditionRepository(client: db.client)
            let first = try await editions.publish(Self.manifest(issueDate: "2026-11-23"), appID: app.id, now: Self.now, logger: db.logger)
            var again = Self.manifest(issueDate: "2026-11-23")
            again.pages.append(.init(number: 2))
            await #expect(throws: StoreError(code: .conflict, field: "issueDate", message: "morning has an edition for 2026-11-23 already")) {
                try await editions.publish(again, appID: app.id, now: Self.now, logger: db.logger)
            }
            let all = try await editions.list(logger: db.logger)
            #expect(all.map(\.id) == [first.id])
            #expect(all.first?.manifest.pages.count == 1)
        }
    }

    @Test("an unknown publication, an ambiguous one, and an invalid manifest are refused by field")
    func refusals() async throws {
        try await TestDatabase.with { db in
            let app = try await Self.app(db)
            _ = try await Self.app(db, bundle: "com.example.other", publications: ["morning"])
            let editions = EditionRepository(client: db.client)
            await #expect(throws: StoreError(code: .notFound, field: "publication", message: "there is no publication weekly of app \(app.id)")) {
                try await editions.publish(Self.manifest("weekly", issueDate: "2026-11-23"), appID: app.id, now: Self.now, logger: db.logger)
            }
            do {
                _ = try await editions.publish(Self.manifest(issueDate: "2026-11-23"), appID: nil, now: Self.now, logger: db.logger)
                Issue.record("an ambiguous publication was accepted")
            } catch let error as StoreError {
                #expect(error.field == "app")
            }
            var invalid = Self.manifest(issueDate: "2026-11-23")
            invalid.tiers["large"]!.bundles[0].bytes = -1
            do {
                _ = try await editions.publish(invalid, appID: app.id, now: Self.now, logger: db.logger)
                Issue.record("an invalid manifest was accepted")
            } catch let error as StoreError {
                #expect(error.field == "tiers.large.bundles[0].bytes")
            }
            #expect(try await editions.list(logger: db.logger).isEmpty)
        }
    }
}
