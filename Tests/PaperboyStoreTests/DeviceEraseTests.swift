import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// A reader's erasure request (`DELETE /v1/devices/{token}?erase=true`): nothing of the device is left.
@Suite("Erasing a device")
struct DeviceEraseTests {
    static let token = try! DeviceToken(hex: String(repeating: "5e", count: 32))

    @Test("erase deletes the device, its receipts, its deliveries and its push count; another device keeps its own; a second erase finds nothing")
    func eraseLeavesNothing() async throws {
        try await TestDatabase.with { db in
            let app = try await EditionRepositoryTests.app(db)
            let edition = try await EditionRepository(client: db.client).publish(
                EditionRepositoryTests.manifest(issueDate: "2026-11-23"),
                appID: app.id,
                now: EditionRepositoryTests.now,
                logger: db.logger
            )
            let devices = DeviceRepository(client: db.client)
            let registration = DeviceRegistration(
                environment: .production,
                subscriptions: ["morning"],
                timeZone: "Asia/Tokyo",
                tier: .large,
                autoDownload: true,
                alertsAuthorized: false
            )
            let other = try DeviceToken(hex: String(repeating: "7a", count: 32))
            for token in [Self.token, other] {
                _ = try await devices.register(appID: app.id, token: .apns(token), registration, logger: db.logger)
                _ = try await ReceiptRepository(client: db.client).record(
                    appID: app.id,
                    token: token,
                    ReceiptReport(editionID: edition.id, result: .newData, bytes: 1, seconds: 1),
                    logger: db.logger
                )
            }
            // A delivery and a push count, as a broadcast batch writes them (the ledger has no foreign keys).
            try await db.client.query(
                """
                INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
                SELECT id, gen_random_uuid(), 1, 0, true, now(), 'accepted' FROM devices
                """,
                logger: db.logger
            )
            try await db.client.query(
                "INSERT INTO device_pushes (device_id, pushed_edition, editions_unanswered) SELECT id, \(edition.id), 1 FROM devices",
                logger: db.logger
            )
            #expect(try await devices.erase(appID: app.id, candidates: [.apns(Self.token)], logger: db.logger))
            #expect(try await devices.find(appID: app.id, candidates: [.apns(Self.token)], logger: db.logger) == nil)
            for table in ["devices", "receipts", "deliveries", "device_pushes"] {
                let rows = try await db.client.query(PostgresQuery(unsafeSQL: "SELECT count(*)::bigint FROM \(table)"), logger: db.logger)
                var count: Int64 = -1
                for try await value in rows.decode(Int64.self) { count = value }
                #expect(count == 1, "\(table): only the other device's row is left")
            }
            #expect(try await !devices.erase(appID: app.id, candidates: [.apns(Self.token)], logger: db.logger))
            // Registering the token again makes a new device.
            let again = try await devices.register(appID: app.id, token: .apns(Self.token), registration, logger: db.logger)
            #expect(again.created)
        }
    }
}
