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

    @Test("an entry's time is the database's, whatever the writer's clock says")
    func databaseTime() async throws {
        try await TestDatabase.with { db in
            let audit = AuditRepository(client: db.client)
            try await audit.record(
                AuditEntry(at: Date(timeIntervalSince1970: 0), surface: .cli, role: "cli", name: "ana", address: "ops-1", action: "add origin"),
                logger: db.logger
            )
            let entry = try #require(try await audit.recent(logger: db.logger).first)
            #expect(abs(entry.at.timeIntervalSinceNow) < 60, "\(entry.at)")
            #expect(entry.who == "cli (ana) on ops-1")
        }
    }

    @Test("the retention deletes entries older than it and keeps the rest; none given keeps all; a dry run counts")
    func retention() async throws {
        try await TestDatabase.with { db in
            let audit = AuditRepository(client: db.client)
            for action in ["old one", "old two", "recent"] { try await audit.record(Self.entry(action), logger: db.logger) }
            try await db.client.query("UPDATE audit_log SET at = now() - interval '400 days' WHERE action LIKE 'old%'", logger: db.logger)
            let keepAll = try LedgerPruner(client: db.client, configuration: .init(auditRetention: nil))
            #expect(try await keepAll.prune(now: Date(), logger: db.logger).auditKept)
            #expect(try await audit.recent(logger: db.logger).count == 3)
            let pruner = try LedgerPruner(client: db.client)
            #expect(try await pruner.prune(now: Date(), dryRun: true, logger: db.logger).auditEntries == 2)
            #expect(try await audit.recent(logger: db.logger).count == 3)
            let pruned = try await pruner.prune(now: Date(), logger: db.logger)
            #expect(pruned.auditEntries == 2 && !pruned.auditKept)
            #expect(try await audit.recent(logger: db.logger).map(\.action) == ["recent"])
            #expect(throws: StoreError.self) { try LedgerPruner(client: db.client, configuration: .init(auditRetention: .seconds(3600))) }
        }
    }

    @Test("append-only for the server's role: it adds entries and counts sign-ins, but changes and deletes none; the owner is refused")
    func appendOnly() async throws {
        try await TestDatabase.with { db in
            let audit = AuditRepository(client: db.client)
            // Roles are the cluster's, shared by the tests running beside this one: a name of its own.
            let role = "paperboy_app_" + UUID().uuidString.prefix(8).lowercased()
            try await db.client.query(PostgresQuery(unsafeSQL: "CREATE ROLE \(role)"), logger: db.logger)
            await #expect(throws: StoreError.self) { try await audit.makeAppendOnly(for: "Robert'); DROP TABLE audit_log; --", logger: db.logger) }
            await #expect(throws: StoreError.self) { try await audit.makeAppendOnly(for: "no_such_role_000", logger: db.logger) }
            let owner = try await db.client.query("SELECT current_user::text", logger: db.logger).collect().first?.decode(String.self)
            await #expect(throws: StoreError.self) { try await audit.makeAppendOnly(for: try #require(owner), logger: db.logger) }
            try await audit.makeAppendOnly(for: role, logger: db.logger)
            try await audit.record(Self.entry("before"), logger: db.logger)

            /// Runs `sql` as `role`, and whether PostgreSQL refused it for want of the privilege.
            func refused(_ sql: String) async throws -> Bool {
                do {
                    try await db.client.withConnection { connection in
                        try await connection.query("BEGIN", logger: db.logger)
                        do {
                            try await connection.query(PostgresQuery(unsafeSQL: "SET LOCAL ROLE \(role)"), logger: db.logger)
                            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: db.logger)
                            try await connection.query("COMMIT", logger: db.logger)
                        } catch {
                            _ = try? await connection.query("ROLLBACK", logger: db.logger)
                            throw error
                        }
                    }
                    return false
                } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42501" {
                    return true
                }
            }
            #expect(try await !refused("INSERT INTO audit_log (surface, role, action) VALUES ('cli', 'cli', 'added')"))
            #expect(try await !refused("UPDATE audit_log SET times = times + 1, last_at = now() WHERE action = 'before'"))
            #expect(try await !refused("SELECT count(*) FROM audit_log"))
            #expect(try await refused("UPDATE audit_log SET action = 'rewritten'"))
            #expect(try await refused("UPDATE audit_log SET at = now() - interval '1 day'"))
            #expect(try await refused("DELETE FROM audit_log"))
            #expect(try await refused("TRUNCATE audit_log"))
            let entries = try await audit.recent(logger: db.logger)
            #expect(Set(entries.map(\.action)) == ["before", "added"])
            #expect(entries.first { $0.action == "before" }?.times == 2)
        }
    }
}
