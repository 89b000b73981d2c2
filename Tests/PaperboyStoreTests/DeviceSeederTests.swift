import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Device seeder")
struct DeviceSeederTests {
    struct Fixture {
        var app: App
        var morning: Publication
        var evening: Publication
    }

    static func fixture(_ db: TestDatabase) async throws -> Fixture {
        let app = try await AppRepository(client: db.client).create(
            try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
            logger: db.logger
        ).app
        let publications = PublicationRepository(client: db.client)
        // Evening first, so that its id is the smaller: subscriptions are stored in id order.
        let evening = try await publications.add(appID: app.id, slug: "evening", title: nil, logger: db.logger)
        let morning = try await publications.add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
        return Fixture(app: app, morning: morning, evening: evening)
    }

    @Test("a share of FCM devices: Android, production, 152-character tokens the API would accept; without it the fleet is unchanged")
    func fcmShare() async throws {
        try await TestDatabase.with { db in
            let fixture = try await Self.fixture(db)
            let seeder = DeviceSeeder(client: db.client)
            let inserted = try await seeder.seed(
                appID: fixture.app.id,
                publicationSlugs: ["morning"],
                count: 10_000,
                environment: .production,
                seed: 3,
                alertsShare: 0.3,
                autoDownloadShare: 0.8,
                fcmShare: 0.25,
                logger: db.logger
            )
            #expect(inserted == 10_000)
            let rows = try await db.client.query(
                """
                SELECT provider, platform, environment, count(*), min(length(token)), max(length(token))
                FROM devices GROUP BY 1, 2, 3 ORDER BY 1
                """,
                logger: db.logger
            )
            var groups: [[Int]] = []
            for try await row in rows.decode((Int16, Int16, Int16, Int, Int, Int).self) {
                groups.append([Int(row.0), Int(row.1), Int(row.2), row.3, row.4, row.5])
            }
            #expect(groups.count == 2)
            #expect(groups.first.map { [$0[0], $0[1], $0[2], $0[4], $0[5]] } == [0, 0, 0, 32, 32])
            #expect(groups.last.map { [$0[0], $0[1], $0[2], $0[4], $0[5]] } == [1, 1, 0, 152, 152])
            let fcmCount = groups.last?[3] ?? 0
            #expect((2_250...2_750).contains(fcmCount), "about a quarter: \(fcmCount)")
            let counts = try await DeviceRepository(client: db.client).counts(appID: fixture.app.id, logger: db.logger)
            #expect(counts.production.total == 10_000)
            #expect(counts.fcm.total == fcmCount)
            #expect(counts.fcm.active == fcmCount)
            #expect(counts.total == 10_000)

            // Each seeded FCM token parses as an FCM token, and its stored cohort key is its hash.
            let sample = try await db.client.query(
                "SELECT token, cohort_key FROM devices WHERE provider = 1 ORDER BY id LIMIT 50",
                logger: db.logger
            )
            for try await (token, cohortKey) in sample.decode((ByteBuffer, Int32).self) {
                let parsed = try FCMToken(String(buffer: token))
                #expect(parsed.text.contains(":APA91b"))
                #expect(parsed.storedCohortKey == cohortKey)
            }
            // A fleet without FCM is the one this seed gave before: the same APNs tokens.
            #expect(try DeviceSeeder.pushToken(index: 5, seed: 3, fcmShare: 0) == .apns(try DeviceSeeder.token(index: 5, seed: 3)))
            // FCM has no sandbox.
            await #expect(throws: StoreError.self) {
                _ = try await seeder.seed(
                    appID: fixture.app.id,
                    publicationSlugs: ["morning"],
                    count: 10,
                    environment: .sandbox,
                    seed: 3,
                    alertsShare: 0.3,
                    autoDownloadShare: 0.8,
                    fcmShare: 0.5,
                    logger: db.logger
                )
            }
        }
    }

    @Test("seeds the count, deterministically: the same seed inserts nothing the second time")
    func seedsAndRepeats() async throws {
        try await TestDatabase.with { db in
            let fixture = try await Self.fixture(db)
            let seeder = DeviceSeeder(client: db.client)
            var reported: [Int] = []
            let inserted = try await seeder.seed(
                appID: fixture.app.id,
                publicationSlugs: ["morning", "evening"],
                count: 25_000,
                environment: .production,
                seed: 7,
                alertsShare: 0.3,
                autoDownloadShare: 0.8,
                progress: { reported.append($0) },
                logger: db.logger
            )
            #expect(inserted == 25_000)
            // One report per chunk of 10,000, growing to the count (chunks may finish out of order).
            #expect(reported.count == 3)
            #expect(reported == reported.sorted() && reported.last == 25_000)

            let again = try await seeder.seed(
                appID: fixture.app.id,
                publicationSlugs: ["morning", "evening"],
                count: 25_000,
                environment: .production,
                seed: 7,
                alertsShare: 0.3,
                autoDownloadShare: 0.8,
                logger: db.logger
            )
            #expect(again == 0)
            // Another seed is another fleet; the same seed in the other environment is other rows.
            let other = try await seeder.seed(
                appID: fixture.app.id,
                publicationSlugs: ["morning"],
                count: 1_000,
                environment: .production,
                seed: 8,
                alertsShare: 0.3,
                autoDownloadShare: 0.8,
                logger: db.logger
            )
            #expect(other == 1_000)
            let sandbox = try await seeder.seed(
                appID: fixture.app.id,
                publicationSlugs: ["morning"],
                count: 500,
                environment: .sandbox,
                seed: 7,
                alertsShare: 0.3,
                autoDownloadShare: 0.8,
                logger: db.logger
            )
            #expect(sandbox == 500)

            let counts = try await DeviceRepository(client: db.client).counts(appID: fixture.app.id, logger: db.logger)
            #expect(counts.total == 26_500)
            #expect(counts.active == 26_500)
            #expect(counts.production.total == 26_000)
            #expect(counts.sandbox.total == 500)
        }
    }

    @Test("tokens are 32 bytes, the same for the same seed and index, and follow the prefixes")
    func tokens() throws {
        let first = try DeviceSeeder.token(index: 0, seed: 1)
        #expect(first.bytes.count == 32)
        #expect(try DeviceSeeder.token(index: 0, seed: 1) == first)
        #expect(try DeviceSeeder.token(index: 1, seed: 1) != first)
        #expect(try DeviceSeeder.token(index: 0, seed: 2) != first)
        let tokens = try (0..<10_000).map { try DeviceSeeder.token(index: $0, seed: 3) }
        #expect(Set(tokens).count == 10_000)

        #expect(try DeviceSeeder.token(index: 5, seed: 1, tokenPrefix: "abc").hex.hasPrefix("abc"))
        #expect(try DeviceSeeder.token(index: 5, seed: 1, tokenPrefix: "ABCD").hex.hasPrefix("abcd"))
        let prefixes = [DeviceSeeder.TokenPrefix(hex: "dead", share: 0.1), .init(hex: "bee", share: 0.2)]
        var dead = 0
        var bee = 0
        var plain = 0
        for index in 0..<20_000 {
            let hex = try DeviceSeeder.token(index: index, seed: 1, tokenPrefix: "00", prefixes: prefixes).hex
            if hex.hasPrefix("dead") {
                dead += 1
            } else if hex.hasPrefix("bee") {
                bee += 1
            } else {
                #expect(hex.hasPrefix("00"))
                plain += 1
            }
        }
        #expect(abs(Double(dead) / 20_000 - 0.1) < 0.01)
        #expect(abs(Double(bee) / 20_000 - 0.2) < 0.015)
        #expect(dead + bee + plain == 20_000)

        #expect(throws: StoreError.self) { try DeviceSeeder.token(index: 0, seed: 1, tokenPrefix: "xyz") }
        #expect(throws: StoreError.self) { try DeviceSeeder.token(index: 0, seed: 1, tokenPrefix: String(repeating: "a", count: 33)) }
        #expect(throws: StoreError.self) {
            try DeviceSeeder.token(index: 0, seed: 1, prefixes: [.init(hex: "a", share: 0.6), .init(hex: "b", share: 0.6)])
        }
    }

    @Test("rows are stored as registration stores them: cohort keys, subscriptions, shares, found by DeviceRepository.find")
    func rowsAsRegistered() async throws {
        try await TestDatabase.with { db in
            let fixture = try await Self.fixture(db)
            let count = 5_000
            let prefixes = [DeviceSeeder.TokenPrefix(hex: "dead", share: 0.05)]
            let inserted = try await DeviceSeeder(client: db.client).seed(
                appID: fixture.app.id,
                publicationSlugs: ["morning", "evening", "morning"],
                count: count,
                environment: .sandbox,
                seed: 42,
                prefixes: prefixes,
                alertsShare: 0.3,
                autoDownloadShare: 0.6,
                tiers: .init(small: 1, medium: 1, large: 2),
                timeZone: "Europe/Berlin",
                logger: db.logger
            )
            #expect(inserted == count)
            let tokens = try (0..<count).map { try DeviceSeeder.token(index: $0, seed: 42, prefixes: prefixes) }

            // Every generated token is stored, with the cohort key registration computes.
            let rows = try await db.client.query(
                "SELECT token, cohort_key, subscriptions, environment, time_zone, active FROM devices WHERE app_id = \(fixture.app.id)",
                logger: db.logger
            )
            var stored: [DeviceToken: Int32] = [:]
            for try await (token, key, subscriptions, environment, zone, active) in rows.decode(
                (ByteBuffer, Int32, [Int32], Int16, String, Bool).self
            ) {
                let device = DeviceToken(bytes: Array(token.readableBytesView))
                stored[device] = key
                #expect(key == device.storedCohortKey)
                #expect(subscriptions == [Int32(fixture.evening.id), Int32(fixture.morning.id)])
                #expect(environment == 1)
                #expect(zone == "Europe/Berlin")
                #expect(active)
            }
            #expect(stored.count == count)
            #expect(tokens.allSatisfy { stored[$0] != nil })
            let dead = tokens.filter { $0.hex.hasPrefix("dead") }.count
            #expect(abs(Double(dead) / Double(count) - 0.05) < 0.015)

            // The broadcast's counts per cohort agree with the cohorts computed from the tokens in Swift.
            var devices: [Device] = []
            let repository = DeviceRepository(client: db.client)
            for token in tokens {
                if let device = try await repository.find(appID: fixture.app.id, token: token, logger: db.logger) { devices.append(device) }
            }
            #expect(devices.count == count)
            let targets = zip(tokens, devices).filter { $0.1.registration.autoDownload }.map(\.0)
            for cohorts in [1, 8, 13, 1024] {
                var expected = Array(repeating: 0, count: cohorts)
                for token in targets { expected[token.cohort(count: cohorts)] += 1 }
                for publication in [fixture.morning, fixture.evening] {
                    let counted = try await CohortRepository(client: db.client).targetCounts(
                        publication: publication,
                        environment: .sandbox,
                        cohorts: cohorts,
                        logger: db.logger
                    )
                    #expect(counted == expected, "cohorts: \(cohorts), \(publication.slug)")
                }
            }
            let production = try await CohortRepository(client: db.client).targetCounts(
                publication: fixture.morning,
                environment: .production,
                cohorts: 4,
                logger: db.logger
            )
            #expect(production == [0, 0, 0, 0])

            // The shares are roughly honored.
            let share = { (predicate: (Device) -> Bool) in Double(devices.filter(predicate).count) / Double(count) }
            #expect(abs(share { $0.registration.autoDownload } - 0.6) < 0.03)
            #expect(abs(share { $0.registration.alertsAuthorized } - 0.3) < 0.03)
            #expect(abs(share { $0.registration.tier == .small } - 0.25) < 0.03)
            #expect(abs(share { $0.registration.tier == .medium } - 0.25) < 0.03)
            #expect(abs(share { $0.registration.tier == .large } - 0.5) < 0.03)

            // A seeded device reads back as a registered one.
            let device = try #require(devices.first)
            #expect(device.token == tokens[0].hex)
            #expect(device.active)
            #expect(device.registration.environment == .sandbox)
            #expect(device.registration.subscriptions == ["evening", "morning"])
            #expect(device.registration.timeZone == "Europe/Berlin")
            #expect(device.deletedAt == nil && device.unregisteredAt == nil)
        }
    }

    @Test("an unknown publication is notFound with field publication, and nothing is inserted")
    func unknownPublication() async throws {
        try await TestDatabase.with { db in
            let fixture = try await Self.fixture(db)
            let error = await #expect(throws: StoreError.self) {
                try await DeviceSeeder(client: db.client).seed(
                    appID: fixture.app.id,
                    publicationSlugs: ["morning", "weekend"],
                    count: 100,
                    environment: .production,
                    seed: 1,
                    alertsShare: 0.3,
                    autoDownloadShare: 1,
                    logger: db.logger
                )
            }
            #expect(error?.code == .notFound)
            #expect(error?.field == "publication")
            #expect(error?.message.contains("weekend") == true)
            let counts = try await DeviceRepository(client: db.client).counts(appID: fixture.app.id, logger: db.logger)
            #expect(counts.total == 0)

            await #expect(throws: StoreError.self) {
                try await DeviceSeeder(client: db.client).seed(
                    appID: fixture.app.id,
                    publicationSlugs: ["morning"],
                    count: 10,
                    environment: .production,
                    seed: 1,
                    alertsShare: 1.5,
                    autoDownloadShare: 1,
                    logger: db.logger
                )
            }
        }
    }
}
