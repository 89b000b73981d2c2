import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// Apps with any combination of providers, their credentials version, and several device API keys.
@Suite("Apps: providers and device API keys")
struct AppRepositoryTests {
    static let apns = try! APNsCredentials(teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8")
    static let fcm = try! FCMCredentials(serviceAccount: "/keys/firebase-news.json", projectID: "paperboy-news")

    @Test("migration 0013 keeps an app registered before it: its APNs key, its FCM account and its device API key, made when the app was")
    func migrationKeepsExistingApps() async throws {
        try await TestDatabase.with(migrated: false) { db in
            let before = Migration.bundled.filter { $0.name < "0013" }
            #expect(try await Migrator(migrations: before).migrate(client: db.client, logger: db.logger).count == before.count)
            let news = DeviceAPIKey.generate()
            let both = DeviceAPIKey.generate()
            try await db.client.query(
                """
                INSERT INTO apps (bundle_id, team_id, key_id, key_reference, api_key_hash, created_at)
                VALUES ('com.example.news', 'TEAM123456', 'KEY1234567', '/keys/news.p8', \(ByteBuffer(bytes: news.hash)),
                    '2026-01-02 03:04:05+00')
                """,
                logger: db.logger
            )
            try await db.client.query(
                """
                INSERT INTO apps (bundle_id, team_id, key_id, key_reference, api_key_hash, fcm_service_account, fcm_project_id)
                VALUES ('com.example.both', 'TEAM123456', 'KEY7654321', 'env:BOTH_P8', \(ByteBuffer(bytes: both.hash)),
                    '/keys/firebase-news.json', 'paperboy-news')
                """,
                logger: db.logger
            )

            #expect(try await Migrator().migrate(client: db.client, logger: db.logger).contains { $0.hasPrefix("0013") })

            let apps = AppRepository(client: db.client)
            let found = try #require(try await apps.find(apiKey: news, logger: db.logger))
            #expect(found.bundleID == "com.example.news")
            #expect(found.apns == Self.apns)
            #expect(found.fcm == nil)
            #expect(found.credentialsVersion == 1)
            #expect(found.createdAt == Date(timeIntervalSince1970: 1_767_323_045))
            let keys = try await apps.apiKeys(appID: found.id, logger: db.logger)
            #expect(keys.count == 1)
            #expect(keys.first?.createdAt == found.createdAt)
            #expect(keys.first?.revokedAt == nil)

            let other = try #require(try await apps.find(apiKey: both, logger: db.logger))
            #expect(other.apns?.keyReference == "env:BOTH_P8")
            #expect(other.fcm == Self.fcm)
            #expect(other.credentialsVersion == 1)

            // The old column is gone: no second copy of a hash that a revocation would not update.
            let column = try await db.client.query(
                "SELECT count(*) FROM information_schema.columns WHERE table_name = 'apps' AND column_name = 'api_key_hash'",
                logger: db.logger
            )
            for try await count in column.decode(Int.self) { #expect(count == 0) }
        }
    }

    @Test("an app may have APNs, FCM or both, never neither: refused naming `apns` before the database, and by its check")
    func providerCombinations() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let android = try await apps.create(try NewApp(bundleID: "com.example.android", apns: nil, fcm: Self.fcm), logger: db.logger)
            let both = try await apps.create(try NewApp(bundleID: "com.example.both", apns: Self.apns, fcm: Self.fcm), logger: db.logger)
            let ios = try await apps.create(try NewApp(bundleID: "com.example.ios", apns: Self.apns, fcm: nil), logger: db.logger)

            let stored = try #require(try await apps.find(apiKey: android.apiKey, logger: db.logger))
            #expect(stored.apns == nil)
            #expect(stored.fcm == Self.fcm)
            #expect(stored == android.app)
            #expect(try await apps.find(id: both.app.id, logger: db.logger)?.apns == Self.apns)
            #expect(try await apps.find(id: both.app.id, logger: db.logger)?.fcm == Self.fcm)
            #expect(try await apps.find(id: ios.app.id, logger: db.logger)?.fcm == nil)
            #expect(try await apps.list(logger: db.logger).map(\.bundleID) == ["com.example.android", "com.example.both", "com.example.ios"])

            let neither = #expect(throws: StoreError.self) { try NewApp(bundleID: "com.example.none", apns: nil, fcm: nil) }
            #expect(neither?.field == "apns")
            #expect(neither?.message.contains("FCM") == true)

            // The database holds the same rule for anything that bypasses NewApp.
            await #expect(throws: PSQLError.self) {
                try await db.client.query("INSERT INTO apps (bundle_id) VALUES ('com.example.raw')", logger: db.logger)
            }
            // … and APNs credentials are all three or none.
            await #expect(throws: PSQLError.self) {
                try await db.client.query(
                    "INSERT INTO apps (bundle_id, team_id, fcm_service_account, fcm_project_id) VALUES ('com.example.half', 'TEAM123456', '/f.json', 'paperboy-news')",
                    logger: db.logger
                )
            }
        }
    }

    @Test("removing an app's only provider is refused and changes nothing; removing one of two leaves the other")
    func removingProviders() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let ios = try await apps.create(try NewApp(bundleID: "com.example.ios", apns: Self.apns, fcm: nil), logger: db.logger).app
            let android = try await apps.create(try NewApp(bundleID: "com.example.android", apns: nil, fcm: Self.fcm), logger: db.logger).app

            let lastAPNs = await #expect(throws: StoreError.self) { try await apps.removeAPNs(appID: ios.id, logger: db.logger) }
            #expect(lastAPNs?.code == .conflict)
            #expect(lastAPNs?.field == "apns")
            #expect(try await apps.find(id: ios.id, logger: db.logger) == ios)
            let lastFCM = await #expect(throws: StoreError.self) { try await apps.removeFCM(appID: android.id, logger: db.logger) }
            #expect(lastFCM?.code == .conflict)
            #expect(lastFCM?.field == "fcm")
            #expect(try await apps.find(id: android.id, logger: db.logger) == android)

            // Nothing to remove: not found, naming the provider; an unknown app names `app`.
            let absent = await #expect(throws: StoreError.self) { try await apps.removeFCM(appID: ios.id, logger: db.logger) }
            #expect(absent?.code == .notFound)
            #expect(absent?.field == "fcm")
            let unknown = await #expect(throws: StoreError.self) { try await apps.removeAPNs(appID: 999, logger: db.logger) }
            #expect(unknown?.field == "app")

            // With both, either may go; then the other is the last.
            _ = try await apps.setFCM(appID: ios.id, Self.fcm, logger: db.logger)
            let fcmOnly = try await apps.removeAPNs(appID: ios.id, logger: db.logger)
            #expect(fcmOnly.apns == nil)
            #expect(fcmOnly.fcm == Self.fcm)
            #expect(try await apps.find(id: ios.id, logger: db.logger) == fcmOnly)
            await #expect(throws: StoreError.self) { try await apps.removeFCM(appID: ios.id, logger: db.logger) }
        }
    }

    @Test("every change of an app's credentials raises its credentials version; a refused change does not")
    func credentialsVersion() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let app = try await apps.create(try NewApp(bundleID: "com.example.news", apns: Self.apns, fcm: nil), logger: db.logger).app
            #expect(app.credentialsVersion == 1)

            let rotated = try APNsCredentials(teamID: "TEAM123456", keyID: "NEWKEY0001", keyReference: "/keys/AuthKey_NEWKEY0001.p8")
            let afterRotation = try await apps.setAPNs(appID: app.id, rotated, logger: db.logger)
            #expect(afterRotation.apns == rotated)
            #expect(afterRotation.credentialsVersion == 2)
            // The same values again still count: the file behind the path may have been replaced.
            #expect(try await apps.setAPNs(appID: app.id, rotated, logger: db.logger).credentialsVersion == 3)
            #expect(try await apps.setFCM(appID: app.id, Self.fcm, logger: db.logger).credentialsVersion == 4)
            #expect(try await apps.removeFCM(appID: app.id, logger: db.logger).credentialsVersion == 5)
            await #expect(throws: StoreError.self) { try await apps.removeAPNs(appID: app.id, logger: db.logger) }
            let stored = try #require(try await apps.find(id: app.id, logger: db.logger))
            #expect(stored.credentialsVersion == 5)
            #expect(stored.apns == rotated)

            let missing = await #expect(throws: StoreError.self) { try await apps.setAPNs(appID: 999, rotated, logger: db.logger) }
            #expect(missing?.code == .notFound)
            #expect(missing?.field == "app")
        }
    }

    @Test("several keys find the app; a revoked one finds nothing; the last active key is not revoked")
    func severalKeys() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let (app, first) = try await apps.create(try NewApp(bundleID: "com.example.news", apns: Self.apns, fcm: nil), logger: db.logger)
            let other = try await apps.create(try NewApp(bundleID: "com.example.other", apns: nil, fcm: Self.fcm), logger: db.logger).app
            let (added, second) = try await apps.addAPIKey(appID: app.id, logger: db.logger)
            #expect(added.appID == app.id)
            #expect(second.secret != first.secret)
            #expect(try await apps.find(apiKey: first, logger: db.logger)?.id == app.id)
            #expect(try await apps.find(apiKey: second, logger: db.logger)?.id == app.id)

            let keys = try await apps.apiKeys(appID: app.id, logger: db.logger)
            #expect(keys.map(\.id).count == 2)
            #expect(keys.last?.id == added.id)
            let firstID = try #require(keys.first?.id)

            let revokedAt = Date(timeIntervalSince1970: 1_790_000_000)
            let revoked = try await apps.revokeAPIKey(appID: app.id, keyID: firstID, now: revokedAt, logger: db.logger)
            #expect(revoked.revokedAt == revokedAt)
            #expect(try await apps.find(apiKey: first, logger: db.logger) == nil)
            #expect(try await apps.find(apiKey: second, logger: db.logger)?.id == app.id)
            // Again: nothing changes, the first time stays.
            #expect(try await apps.revokeAPIKey(appID: app.id, keyID: firstID, logger: db.logger).revokedAt == revokedAt)

            let last = await #expect(throws: StoreError.self) { try await apps.revokeAPIKey(appID: app.id, keyID: added.id, logger: db.logger) }
            #expect(last?.code == .conflict)
            #expect(last?.field == "key")
            #expect(try await apps.find(apiKey: second, logger: db.logger)?.id == app.id)

            // Another app's key, or none, is not this app's: not found, naming `key`; no app names `app`.
            let othersKey = try #require(try await apps.apiKeys(appID: other.id, logger: db.logger).first)
            let notMine = await #expect(throws: StoreError.self) {
                try await apps.revokeAPIKey(appID: app.id, keyID: othersKey.id, logger: db.logger)
            }
            #expect(notMine?.field == "key")
            #expect(try await apps.apiKeys(appID: other.id, logger: db.logger).first?.revokedAt == nil)
            let noApp = await #expect(throws: StoreError.self) { try await apps.addAPIKey(appID: 999, logger: db.logger) }
            #expect(noApp?.field == "app")
            await #expect(throws: StoreError.self) { try await apps.apiKeys(appID: 999, logger: db.logger) }
            await #expect(throws: StoreError.self) { try await apps.addAPIKey(appID: 3_000_000_000, logger: db.logger) }

            // A listed key never holds its secret or hash.
            let listed = String(decoding: try JSONEncoder().encode(try await apps.apiKeys(appID: app.id, logger: db.logger)), as: UTF8.self)
            #expect(!listed.contains(second.secret))
            #expect(!listed.lowercased().contains("hash"))
        }
    }

    @Test("a key's last use is recorded when it is looked up, then not written again until it is 10 minutes old")
    func lastUse() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let (app, key) = try await apps.create(try NewApp(bundleID: "com.example.news", apns: Self.apns, fcm: nil), logger: db.logger)
            #expect(try await apps.apiKeys(appID: app.id, logger: db.logger).first?.lastUsedAt == nil)

            let t0 = Date(timeIntervalSince1970: 1_790_000_000)
            #expect(try await apps.find(apiKey: key, usedAt: t0, logger: db.logger)?.id == app.id)
            #expect(try await apps.apiKeys(appID: app.id, logger: db.logger).first?.lastUsedAt == t0)
            // A new row version is what a write leaves; lookups within the resolution leave none.
            let version = try await Self.rowVersion(app.id, db)
            for minute in 1...9 {
                _ = try await apps.find(apiKey: key, usedAt: t0.addingTimeInterval(Double(minute) * 60), logger: db.logger)
            }
            #expect(try await Self.rowVersion(app.id, db) == version)
            #expect(try await apps.apiKeys(appID: app.id, logger: db.logger).first?.lastUsedAt == t0)

            let later = t0.addingTimeInterval(AppRepository.lastUseResolution)
            _ = try await apps.find(apiKey: key, usedAt: later, logger: db.logger)
            #expect(try await apps.apiKeys(appID: app.id, logger: db.logger).first?.lastUsedAt == later)
        }
    }

    /// The transaction that wrote the app's first key row last (`xmin`): changes with every write of the row.
    static func rowVersion(_ appID: Int, _ db: TestDatabase) async throws -> String {
        let rows = try await db.client.query("SELECT xmin::text FROM app_api_keys WHERE app_id = \(appID) ORDER BY id LIMIT 1", logger: db.logger)
        for try await version in rows.decode(String.self) { return version }
        throw StoreError(code: .notFound, message: "no key row")
    }
}
