import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// The audit log is written in the change's own transaction: a change never stands without its entry, an entry never
/// without its change (issue 35, item 5).
@Suite("Audit log: one transaction with the change")
struct AuditRepositoryTests {
    static func entry(_ action: String, role: String = "admin") -> AuditEntry {
        AuditEntry(at: Date(), surface: .admin, role: role, name: "ana", address: "192.0.2.10", action: action)
    }

    @Test("a change and its entry are stored together; an entry that cannot be written undoes the change")
    func atomic() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let (app, _) = try await apps.create(
                try NewApp(bundleID: "com.example.audit", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/a.p8"),
                logger: db.logger
            )
            let (key, _) = try await apps.addAPIKey(appID: app.id, audit: Self.entry("add key"), logger: db.logger)
            let audit = AuditRepository(client: db.client)
            let recorded = try await audit.recent(logger: db.logger)
            #expect(recorded.map(\.action) == ["add key"])
            #expect(recorded.first?.appID == nil, "what the caller named, and the detail the change adds")
            #expect(recorded.first?.detail == "key \(key.id) added")
            #expect(recorded.first?.who == "admin (ana) from 192.0.2.10")

            // The database refuses the entry (a role it does not know): the key is not added either.
            await #expect(throws: PSQLError.self) {
                _ = try await apps.addAPIKey(appID: app.id, audit: Self.entry("add key", role: "intruder"), logger: db.logger)
            }
            #expect(try await apps.apiKeys(appID: app.id, logger: db.logger).count == 2, "the first key and the audited one; not a third")
            // Without an entry, as the CLI and the dispatcher call it, nothing is recorded.
            _ = try await apps.addAPIKey(appID: app.id, logger: db.logger)
            #expect(try await audit.recent(logger: db.logger).count == 1)
        }
    }

    @Test("a cancel that changes nothing (the broadcast had ended) records nothing; one that cancels records who, once")
    func cancelOnce() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let (app, _) = try await apps.create(
                try NewApp(bundleID: "com.example.audit", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/a.p8"),
                logger: db.logger
            )
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            let manifest = EditionManifest(
                publication: "morning",
                issueDate: "2027-01-15",
                deadline: Date().addingTimeInterval(7200).formatted(.iso8601),
                tiers: [
                    "large": .init(bundles: [.init(url: "https://cdn.example.com/a.zip", bytes: 1000, sha256: String(repeating: "0f", count: 32))])
                ],
                pages: [.init(number: 1, title: "Front page")]
            )
            let edition = try await EditionRepository(client: db.client).publish(
                manifest,
                appID: app.id,
                audit: Self.entry("publish edition"),
                logger: db.logger
            )
            let broadcasts = BroadcastRepository(client: db.client)
            let started = try await broadcasts.start(
                editionID: edition.id,
                environment: .production,
                options: BroadcastOptions(pace: .window(600)),
                origin: "test",
                now: Date(),
                audit: Self.entry("start broadcast"),
                logger: db.logger
            )
            let id = started.broadcast.id
            _ = try await broadcasts.cancel(id: id, now: Date(), audit: Self.entry("cancel broadcast"), logger: db.logger)
            await #expect(throws: StoreError.self) {
                _ = try await broadcasts.cancel(id: id, now: Date(), audit: Self.entry("cancel broadcast"), logger: db.logger)
            }
            let audit = AuditRepository(client: db.client)
            let entries = try await audit.entries(broadcastID: id, logger: db.logger)
            #expect(entries.map(\.action) == ["start broadcast", "cancel broadcast"])
            #expect(entries.first?.editionID == edition.id)
            let all = try await audit.recent(logger: db.logger)
            #expect(all.first { $0.action == "publish edition" }?.editionID == edition.id)
            #expect(all.count == 3)
        }
    }
}
