import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// A receipt's optional context, in real PostgreSQL: stored and read back, absent for old clients, refused
/// with the field named and nothing stored; and migration 0010, which must not rewrite `receipts`.
@Suite("Receipt context in the store")
struct ReceiptContextTests {
    static let token = DeviceToken(bytes: Array(repeating: 0xab, count: 32))
    /// A device of publication morning in production.
    static let registration = DeviceRegistration(
        environment: .production,
        subscriptions: ["morning"],
        timeZone: "Asia/Tokyo",
        tier: .large,
        autoDownload: true,
        alertsAuthorized: false
    )

    /// An app with a registered device and an edition; the app's id and the edition's.
    /// - Parameter seeded: the device is seeded (`DeviceSeeder`, the columns of migration 0001 only) rather than
    ///   registered, for a database not migrated to the end.
    static func prepare(_ db: TestDatabase, seeded: Bool = false) async throws -> (appID: Int, editionID: UUID) {
        let appID: Int
        let morningID: Int
        if seeded {
            // The schema before 0010, which today's repositories do not write (API keys moved in 0013, origins came in 0018).
            (appID, morningID) = try await Self.insertBefore0010(db)
        } else {
            appID = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app.id
            morningID = try await PublicationRepository(client: db.client).add(appID: appID, slug: "morning", title: nil, logger: db.logger).id
        }
        if seeded {
            // A device as the schema before 0010 stores it: today's seeder names later columns (edition_alerts, 0036).
            try await db.client.query(
                """
                INSERT INTO devices (app_id, environment, cohort_key, token, auto_download, alerts_authorized, tier, subscriptions, time_zone)
                VALUES (\(appID), 0, 1, decode(\(String(repeating: "ab", count: 32)), 'hex'), true, false, 2, ARRAY[\(morningID)]::integer[],
                    'Asia/Tokyo')
                """,
                logger: db.logger
            )
        } else {
            _ = try await DeviceRepository(client: db.client).register(appID: appID, token: token, registration, logger: db.logger)
        }
        let editionID = UUID()
        try await db.client.query(
            """
            INSERT INTO editions (id, publication_id, issue_date, deadline, manifest)
            VALUES (\(editionID), \(morningID), date '2026-11-23', now() + interval '1 day', '{}')
            """,
            logger: db.logger
        )
        return (appID, editionID)
    }

    /// An app and its publication "morning" as the schema before 0010 stores them.
    static func insertBefore0010(_ db: TestDatabase) async throws -> (appID: Int, publicationID: Int) {
        let rows = try await db.client.query(
            """
            WITH app AS (
                INSERT INTO apps (bundle_id, team_id, key_id, key_reference, api_key_hash)
                VALUES ('com.example.news', 'TEAM123456', 'KEY1234567', '/keys/news.p8', sha256('key'::bytea))
                RETURNING id
            )
            INSERT INTO publications (app_id, slug) SELECT id, 'morning' FROM app RETURNING app_id, id
            """,
            logger: db.logger
        )
        for try await ids in rows.decode((Int, Int).self) { return ids }
        throw StoreError(code: .notFound, message: "the app just inserted")
    }

    static func count(_ db: TestDatabase) async throws -> Int {
        for try await count in try await db.client.query("SELECT count(*) FROM receipts", logger: db.logger).decode(Int.self) { return count }
        return 0
    }

    @Test("a receipt with context stores and answers every field; one without stores none; a repeat keeps the first's")
    func storedAndRead() async throws {
        try await TestDatabase.with { db in
            let (appID, editionID) = try await Self.prepare(db)
            let receipts = ReceiptRepository(client: db.client)
            let context = WakeContext(network: .cellular, charging: false, lowPowerMode: true, backgroundRefresh: true, wave: 2, secondsFromPush: 95)
            let first = try await receipts.record(
                appID: appID,
                token: Self.token,
                ReceiptReport(editionID: editionID, result: .failed, context: context),
                logger: db.logger
            )
            #expect(first.created && first.receipt.context == context)

            // A repeated failure changes nothing, context included; a success replaces the receipt and its context.
            let repeated = try await receipts.record(
                appID: appID,
                token: Self.token,
                ReceiptReport(editionID: editionID, result: .failed, context: WakeContext(network: .wifi)),
                logger: db.logger
            )
            #expect(!repeated.created && repeated.receipt.context == context)
            let retried = try await receipts.record(
                appID: appID,
                token: Self.token,
                ReceiptReport(editionID: editionID, result: .newData, context: WakeContext(network: .wifi, wave: 3)),
                logger: db.logger
            )
            #expect(retried.receipt.result == .newData && retried.receipt.context == WakeContext(network: .wifi, wave: 3))

            let columns = try await db.client.query(
                "SELECT network, charging, low_power_mode, background_refresh, wave, seconds_from_push FROM receipts",
                logger: db.logger
            )
            for try await row in columns.decode((Int16?, Bool?, Bool?, Bool?, Int16?, Int32?).self) {
                #expect(row.0 == 0 && row.1 == nil && row.2 == nil && row.3 == nil && row.4 == 3 && row.5 == nil)
            }

            // An old client's receipt: no context, all NULL.
            let second = UUID()
            try await db.client.query(
                """
                INSERT INTO editions (id, publication_id, issue_date, deadline, manifest)
                SELECT \(second), publication_id, date '2026-11-24', deadline, '{}' FROM editions WHERE id = \(editionID)
                """,
                logger: db.logger
            )
            let plain = try await receipts.record(
                appID: appID,
                token: Self.token,
                ReceiptReport(editionID: second, result: .noData),
                logger: db.logger
            )
            #expect(plain.created && plain.receipt.context.isEmpty)
            let nulls = try await db.client.query(
                "SELECT count(*) FROM receipts WHERE edition_id = \(second) AND network IS NULL AND wave IS NULL AND charging IS NULL",
                logger: db.logger
            )
            for try await count in nulls.decode(Int.self) { #expect(count == 1) }
        }
    }

    @Test("a wave or secondsFromPush out of range is refused naming the field, and nothing is stored")
    func refused() async throws {
        try await TestDatabase.with { db in
            let (appID, editionID) = try await Self.prepare(db)
            let receipts = ReceiptRepository(client: db.client)
            let cases: [(WakeContext, String)] = [
                (WakeContext(wave: 0), "wave"),
                (WakeContext(wave: 40_000), "wave"),
                (WakeContext(secondsFromPush: -1), "secondsFromPush"),
                (WakeContext(secondsFromPush: 86_401), "secondsFromPush"),
            ]
            for (context, field) in cases {
                let error = await #expect(throws: StoreError.self) {
                    try await receipts.record(
                        appID: appID,
                        token: Self.token,
                        ReceiptReport(editionID: editionID, result: .newData, context: context),
                        logger: db.logger
                    )
                }
                #expect(error?.code == .invalid && error?.field == field, "\(context)")
            }
            #expect(try await Self.count(db) == 0)

            // The table's own check holds for rows written any other way.
            await #expect(throws: PSQLError.self) {
                try await db.client.query(
                    """
                    INSERT INTO receipts (device_id, edition_id, result, wave)
                    SELECT id, \(editionID), 'newData', 0 FROM devices
                    """,
                    logger: db.logger
                )
            }
            #expect(try await Self.count(db) == 0)
        }
    }

    @Test("migration 0010 adds the columns without rewriting receipts (a rewrite would give it a new file)")
    func noRewrite() async throws {
        try await TestDatabase.with(migrated: false) { db in
            let before0010 = Migration.bundled.filter { $0.name < "0010" }
            #expect(before0010.count < Migration.bundled.count)
            _ = try await Migrator(migrations: before0010).migrate(client: db.client, logger: db.logger)
            let (appID, editionID) = try await Self.prepare(db, seeded: true)
            _ = try await db.client.query(
                "INSERT INTO receipts (device_id, edition_id, result) SELECT id, \(editionID), 'newData' FROM devices WHERE app_id = \(appID)",
                logger: db.logger
            )
            let filenode = try await Self.filenode(db)
            _ = try await Migrator().migrate(client: db.client, logger: db.logger)
            #expect(try await Self.filenode(db) == filenode)
            #expect(try await Self.count(db) == 1)

            // The check can fail: a column whose default must be computed per row rewrites the table.
            try await db.client.query("ALTER TABLE receipts ADD COLUMN probe integer DEFAULT (random() * 10)::integer", logger: db.logger)
            #expect(try await Self.filenode(db) != filenode)
        }
    }

    static func filenode(_ db: TestDatabase) async throws -> Int64 {
        for try await node in try await db.client.query("SELECT pg_relation_filenode('receipts')::bigint", logger: db.logger).decode(Int64.self) {
            return node
        }
        return 0
    }
}
