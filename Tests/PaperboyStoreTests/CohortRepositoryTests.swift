import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Cohort target counts")
struct CohortRepositoryTests {
    /// Deterministic tokens of real lengths (32 bytes, some longer), spread like real ones.
    static func tokens(_ count: Int, salt: UInt64) -> [DeviceToken] {
        var state = salt
        func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
        return (0..<count).map { index in
            let length = index % 10 == 0 ? 100 : 32
            return DeviceToken(bytes: (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) })
        }
    }

    static func registration(
        _ environment: APNsEnvironment = .production,
        subscriptions: [String] = ["morning"],
        autoDownload: Bool = true
    ) -> DeviceRegistration {
        DeviceRegistration(
            environment: environment,
            subscriptions: subscriptions,
            timeZone: "Asia/Tokyo",
            tier: .large,
            autoDownload: autoDownload,
            alertsAuthorized: false
        )
    }

    @Test("per-cohort counts agree with DeviceToken.cohort(count:), and only targets are counted")
    func countsAgreeWithTokens() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let publications = PublicationRepository(client: db.client)
            let devices = DeviceRepository(client: db.client)
            let app = try await apps.create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app
            let other = try await apps.create(
                try NewApp(bundleID: "com.example.other", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/other.p8"),
                logger: db.logger
            ).app
            let morning = try await publications.add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            _ = try await publications.add(appID: app.id, slug: "evening", title: nil, logger: db.logger)
            _ = try await publications.add(appID: other.id, slug: "morning", title: nil, logger: db.logger)

            let targets = Self.tokens(300, salt: 1)
            for (index, token) in targets.enumerated() {
                let subscriptions = index.isMultiple(of: 3) ? ["evening", "morning"] : ["morning"]
                _ = try await devices.register(appID: app.id, token: token, Self.registration(subscriptions: subscriptions), logger: db.logger)
            }
            // Not targets of production morning: each excluded for one reason.
            let excluded = Self.tokens(100, salt: 2)
            for token in excluded[0..<20] {
                _ = try await devices.register(appID: app.id, token: token, Self.registration(), logger: db.logger)
                _ = try await devices.delete(appID: app.id, token: token, logger: db.logger)
            }
            for token in excluded[20..<40] {
                _ = try await devices.register(appID: app.id, token: token, Self.registration(autoDownload: false), logger: db.logger)
            }
            for token in excluded[40..<60] {
                _ = try await devices.register(appID: app.id, token: token, Self.registration(subscriptions: ["evening"]), logger: db.logger)
            }
            for token in excluded[60..<80] {
                _ = try await devices.register(appID: app.id, token: token, Self.registration(.sandbox), logger: db.logger)
            }
            for token in excluded[80..<100] {
                _ = try await devices.register(appID: other.id, token: token, Self.registration(), logger: db.logger)
            }

            let cohorts = CohortRepository(client: db.client)
            for count in [1, 2, 3, 7, 8, 13, 64, 1024] {
                var expected = Array(repeating: 0, count: count)
                for token in targets { expected[token.cohort(count: count)] += 1 }
                let counted = try await cohorts.targetCounts(publication: morning, environment: .production, cohorts: count, logger: db.logger)
                #expect(counted == expected, "cohorts: \(count)")
            }
            let sandbox = try await cohorts.targetCounts(publication: morning, environment: .sandbox, cohorts: 4, logger: db.logger)
            var expectedSandbox = Array(repeating: 0, count: 4)
            for token in excluded[60..<80] { expectedSandbox[token.cohort(count: 4)] += 1 }
            #expect(sandbox == expectedSandbox)
            #expect(sandbox.reduce(0, +) == 20)
        }
    }

    @Test("keys at the edges of cohort ranges fall in the cohort DeviceToken says")
    func rangeEdges() async throws {
        try await TestDatabase.with { db in
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app
            let morning = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            let count = 7
            var keys: Set<UInt32> = [0, 1, UInt32.max - 1, UInt32.max, 1 << 31, (1 << 31) - 1]
            for index in 1..<count {
                let lower = DeviceToken.cohortKeyRange(index: index, count: count).lowerBound
                keys.formUnion([UInt32(lower - 1), UInt32(lower)])
            }
            // Rows written as the registration path stores a key: sign bit flipped.
            for (ordinal, key) in keys.sorted().enumerated() {
                let stored = Int32(bitPattern: key ^ 0x8000_0000)
                var bytes = Array(repeating: UInt8(0), count: 32)
                bytes[31] = UInt8(ordinal)
                try await db.client.query(
                    """
                    INSERT INTO devices (app_id, environment, cohort_key, auto_download, alerts_authorized, tier, token, subscriptions, time_zone)
                    VALUES (\(app.id), 0, \(stored), true, false, 2, \(ByteBuffer(bytes: bytes)), ARRAY[\(morning.id)]::integer[], 'UTC')
                    """,
                    logger: db.logger
                )
            }
            var expected = Array(repeating: 0, count: count)
            for key in keys { expected[DeviceToken.cohort(ofKey: key, count: count)] += 1 }
            let counted = try await CohortRepository(client: db.client).targetCounts(
                publication: morning,
                environment: .production,
                cohorts: count,
                logger: db.logger
            )
            #expect(counted == expected)
            #expect(
                counted.first == 3 && counted.last == 3,
                "keys 0 and 1 plus the first range's top; the last range's bottom plus the two highest keys"
            )
        }
    }
}
