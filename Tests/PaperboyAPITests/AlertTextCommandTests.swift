import Foundation
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

/// `paperboy apps set-alert-text`, as an operator runs it: the real binary against a fresh database, and the
/// words as the dispatcher then reads them with the edition.
@Suite("paperboy apps set-alert-text")
struct AlertTextCommandTests {
    static func manifest(issueDate: String, smallBundles: Int) -> EditionManifest {
        let sha = String(repeating: "0f", count: 32)
        let small = (0..<smallBundles).map {
            EditionManifest.Bundle(url: "https://cdn.example.com/\(issueDate)/morning/small-part-\($0)-of-the-edition.zip", bytes: 10, sha256: sha)
        }
        return EditionManifest(
            publication: "morning",
            issueDate: issueDate,
            deadline: "2099-01-01T09:00:00+09:00",
            tiers: ["small": .init(bundles: small), "large": .init(bundles: [.init(url: "https://cdn.example.com/l.zip", bytes: 10, sha256: sha)])],
            pages: [.init(number: 1)]
        )
    }

    @Test(
        "sets the words in the app's language; the edition read for a batch carries them; a bad placeholder or words an ahead edition cannot carry are refused naming the flag; --standard goes back",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func setAlertText() async throws {
        try await TestDatabase.with { db in
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "none (test)"),
                logger: db.logger
            ).app
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: "朝刊", logger: db.logger)
            let editions = EditionRepository(client: db.client)
            let edition = try await editions.publish(
                Self.manifest(issueDate: "2098-01-05", smallBundles: 1),
                appID: app.id,
                check: BroadcastPreflight.checkPushes,
                logger: db.logger
            )
            let standard = try #require(try await editions.find(id: edition.id, logger: db.logger))
            #expect(standard.alert.title == "朝刊")
            #expect(standard.alert.body == "The edition of 2098-01-05 is out. Open the app to read it.")

            let set = try await PaperboyBinary.run(
                ["apps", "set-alert-text", "--app", "\(app.id)", "--body", "{year}年{month}月{day}日号を公開しました", "--json"],
                database: db.configuration
            )
            #expect(set.status == 0, "\(set.output)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(set.output.utf8)) as? [String: Any])
            #expect(json["alertText"] as? [String: String] == ["title": "{publication}", "body": "{year}年{month}月{day}日号を公開しました"])
            let worded = try #require(try await editions.find(id: edition.id, logger: db.logger))
            #expect(worded.alert.title == "朝刊")
            #expect(worded.alert.body == "2098年1月5日号を公開しました")

            let typo = try await PaperboyBinary.run(
                ["apps", "set-alert-text", "--app", "\(app.id)", "--title", "{titel}"],
                database: db.configuration
            )
            #expect(typo.status != 0)
            #expect(typo.output.contains("--title"), "\(typo.output)")
            #expect(typo.output.contains("{titel}"), "\(typo.output)")

            // An edition ahead whose ready alert is just within APNs' 4096 bytes in the current words: longer words
            // are refused, naming the flag and the edition, and the stored words stay.
            var bundles = 1
            while (try? BroadcastPreflight.checkPushes(
                Edition(
                    id: UUID(),
                    appID: app.id,
                    manifest: Self.manifest(issueDate: "2098-01-06", smallBundles: bundles + 1),
                    deadline: Date().addingTimeInterval(86_400),
                    publishedAt: Date(),
                    publicationTitle: "朝刊",
                    alertText: worded.alertText
                )
            )) != nil {
                bundles += 1
            }
            let full = try await editions.publish(
                Self.manifest(issueDate: "2098-01-06", smallBundles: bundles),
                appID: app.id,
                check: BroadcastPreflight.checkPushes,
                logger: db.logger
            )
            let long = try await PaperboyBinary.run(
                ["apps", "set-alert-text", "--app", "\(app.id)", "--body", String(repeating: "長", count: 120)],
                database: db.configuration
            )
            #expect(long.status != 0)
            #expect(long.output.contains("--body"), "\(long.output)")
            #expect(long.output.contains(full.id.uuidString.lowercased()), "\(long.output)")
            #expect(try await editions.find(id: edition.id, logger: db.logger)?.alert.body == "2098年1月5日号を公開しました")

            let back = try await PaperboyBinary.run(["apps", "set-alert-text", "--app", "\(app.id)", "--standard"], database: db.configuration)
            #expect(back.status == 0, "\(back.output)")
            #expect(try await editions.find(id: edition.id, logger: db.logger)?.alertText == .standard)
        }
    }
}
