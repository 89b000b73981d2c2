import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Migrations")
struct MigratorTests {
    @Test("a fresh database gets every migration, in order, recorded with its checksum")
    func freshDatabase() async throws {
        try await TestDatabase.with(migrated: false) { db in
            let migrator = Migrator()
            #expect(try await migrator.status(client: db.client, logger: db.logger).pending == Migration.bundled.map(\.name))

            let applied = try await migrator.migrate(client: db.client, logger: db.logger)

            #expect(applied == Migration.bundled.map(\.name))
            let status = try await migrator.status(client: db.client, logger: db.logger)
            #expect(status.isCurrent)
            #expect(status.applied == Migration.bundled.map(\.name))
            let rows = try await db.client.query("SELECT checksum FROM paperboy_migrations ORDER BY name")
            var checksums: [String] = []
            for try await checksum in rows.decode(String.self) { checksums.append(checksum) }
            #expect(checksums == Migration.bundled.map(\.checksum))
        }
    }

    @Test(
        "0032 keeps a hold standing at the migration for both environments, and each held deactivation under its device's environment"
    )
    func holdsPerEnvironmentMigration() async throws {
        try await TestDatabase.with(migrated: false) { db in
            let before = Migration.bundled.filter { $0.name < "0032" }
            _ = try await Migrator(migrations: before).migrate(client: db.client, logger: db.logger)
            let key = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-migration-0032.p8").path
            try "not read by this test".write(toFile: key, atomically: true, encoding: .utf8)
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.migrated", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: key),
                logger: db.logger
            ).app
            // Devices as the schema before 0032 stores them: today's registration statement names later columns.
            for (index, environment) in [Int16(1), 0].enumerated() {
                try await db.client.query(
                    """
                    INSERT INTO devices (app_id, environment, cohort_key, token, auto_download, alerts_authorized, tier, subscriptions, time_zone)
                    VALUES (\(app.id), \(environment), \(Int32(index)), decode(\(String(format: "%064x", index + 1)), 'hex'), true, false, 2, '{}',
                        'Asia/Tokyo')
                    """,
                    logger: db.logger
                )
            }
            try await db.client.query(
                """
                INSERT INTO provider_holds (app_id, provider, answer, likely_cause, reason, raised_by)
                VALUES (\(app.id), 0, 'BadDeviceToken', 'c', 'r', 'w')
                """,
                logger: db.logger
            )
            try await db.client.query(
                """
                INSERT INTO held_deactivations (device_id, app_id, provider, reason, sent_at)
                SELECT id, app_id, 0, 'BadDeviceToken', now() FROM devices WHERE app_id = \(app.id)
                """,
                logger: db.logger
            )
            try await db.client.query("INSERT INTO provider_confirmations (app_id, provider, version) VALUES (\(app.id), 1, 3)", logger: db.logger)
            #expect(try await Migrator().migrate(client: db.client, logger: db.logger).contains("0032_holds_per_environment.sql"))
            let holds = try await db.client.query("SELECT environment FROM provider_holds ORDER BY environment", logger: db.logger)
            #expect(try await holds.collect().map { try $0.decode(Int16.self) } == [0, 1])
            let held = try await db.client.query(
                "SELECT h.environment = d.environment FROM held_deactivations h JOIN devices d ON d.id = h.device_id",
                logger: db.logger
            )
            #expect(try await held.collect().map { try $0.decode(Bool.self) } == [true, true], "each under its device's environment")
            let confirmed = try await db.client.query("SELECT count(*)::integer FROM provider_confirmations", logger: db.logger)
            for try await count in confirmed.decode(Int.self) { #expect(count == 2) }
        }
    }

    @Test("no table but devices checks which providers there are: a provider's code is stored as Paperboy's enum gives it (0037)")
    func providerCodesUnchecked() async throws {
        try await TestDatabase.with { db in
            let rows = try await db.client.query(
                """
                SELECT conrelid::regclass::text FROM pg_constraint
                WHERE contype = 'c' AND connamespace = 'public'::regnamespace AND conrelid <> 'devices'::regclass
                    AND pg_get_constraintdef(oid) ~ '\\mprovider\\M'
                ORDER BY 1
                """,
                logger: db.logger
            )
            var tables: [String] = []
            for try await table in rows.decode(String.self) { tables.append(table) }
            #expect(tables == [], "tables with a CHECK on their provider column")
            // A provider Paperboy does not know today is stored by the worker's tables as any other code.
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app.id
            try await db.client.query(
                "INSERT INTO sender_status (app_id, provider, worker, updated_at) VALUES (\(app), 2, 'w1', now())",
                logger: db.logger
            )
        }
    }

    @Test("running the migrations again changes nothing")
    func rerunIsNoOp() async throws {
        try await TestDatabase.with { db in
            let again = try await Migrator().migrate(client: db.client, logger: db.logger)
            #expect(again.isEmpty)
            #expect(try await Migrator().status(client: db.client, logger: db.logger).isCurrent)
        }
    }

    @Test("a new migration file is applied on top, and serve's check sees it pending first")
    func newMigrationApplies() async throws {
        try await TestDatabase.with { db in
            let next = Migration(name: "9999_test.sql", sql: "CREATE TABLE later (id int);\nINSERT INTO later VALUES (1), (2);\n")
            let migrator = Migrator(migrations: Migration.bundled + [next])
            #expect(try await migrator.status(client: db.client, logger: db.logger).pending == ["9999_test.sql"])
            #expect(try await migrator.migrate(client: db.client, logger: db.logger) == ["9999_test.sql"])
            let rows = try await db.client.query("SELECT count(*) FROM later")
            for try await count in rows.decode(Int.self) { #expect(count == 2) }
        }
    }

    @Test("an applied file whose content changed is refused, naming the file")
    func tamperedFileRefused() async throws {
        try await TestDatabase.with { db in
            var tampered = Migration.bundled
            tampered[0].sql += "\n-- edited after it was applied\n"
            let migrator = Migrator(migrations: tampered)

            let error = await #expect(throws: MigrationError.self) {
                try await migrator.migrate(client: db.client, logger: db.logger)
            }
            #expect(error?.code == .changedAfterApplied)
            #expect(error?.file == Migration.bundled[0].name)
            #expect(error?.description.contains(Migration.bundled[0].name) == true)
            await #expect(throws: MigrationError.self) { try await migrator.status(client: db.client, logger: db.logger) }
        }
    }

    @Test("a failing migration leaves nothing half-applied")
    func failingMigrationRollsBack() async throws {
        try await TestDatabase.with { db in
            let broken = Migration(name: "9999_broken.sql", sql: "CREATE TABLE half (id int);\nSELECT no_such_function();\n")
            await #expect(throws: (any Error).self) {
                try await Migrator(migrations: Migration.bundled + [broken]).migrate(client: db.client, logger: db.logger)
            }
            let rows = try await db.client.query("SELECT to_regclass('half') IS NULL")
            for try await absent in rows.decode(Bool.self) { #expect(absent) }
            #expect(try await Migrator().status(client: db.client, logger: db.logger).isCurrent)
        }
    }

    @Test("two migrators at once are serialized: each migration is applied exactly once")
    func concurrentMigrators() async throws {
        try await TestDatabase.with(migrated: false) { db in
            let results = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 {
                    group.addTask { try await Migrator().migrate(client: db.client, logger: db.logger) }
                }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            #expect(results.flatMap { $0 }.sorted() == Migration.bundled.map(\.name).sorted())
            #expect(try await Migrator().status(client: db.client, logger: db.logger).isCurrent)
        }
    }

    @Test("the migrations embedded in the binary are exactly the files in migrations/")
    func embeddedCopyMatchesFiles() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("migrations")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }.sorted()
        let onDisk = try files.map { Migration(name: $0, sql: try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8)) }
        #expect(onDisk == Migration.bundled, "run scripts/embed-migrations.sh after changing migrations/")
    }
}
