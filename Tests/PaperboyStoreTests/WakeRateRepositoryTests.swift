import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// The wake-rate counts from a real ledger: which pushes count, which woke the app, and the window.
@Suite("Wake rates from the ledger")
struct WakeRateRepositoryTests {
    /// The pushes of today's morning broadcast go out at 20:00 UTC (05:00 in Tokyo, 21:00 in Berlin).
    static let push = Date(timeIntervalSince1970: 1_795_464_000)  // 2026-11-23T20:00:00Z
    static let now = push.addingTimeInterval(2 * 3600)

    struct Fleet {
        var appID: Int
        /// d1 iPhone15,2 iOS 17.4.1 Tokyo; d2 iPhone15,3 iOS 17.0 Berlin; d3 Pixel 8 Android 14 Tokyo; d4 no model,
        /// no OS, Tokyo.
        var devices: [Int64]
    }

    static func minutes(_ count: Double) -> Date { push.addingTimeInterval(count * 60) }

    /// Four devices, yesterday's and today's morning editions, today's evening one, an edition 20 days old, and
    /// the pushes and receipts the tests count (see the comments).
    static func seed(_ db: TestDatabase) async throws -> Fleet {
        let app = try await AppRepository(client: db.client).create(
            try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
            logger: db.logger
        ).app
        let publications = PublicationRepository(client: db.client)
        let morning = try await publications.add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
        let evening = try await publications.add(appID: app.id, slug: "evening", title: nil, logger: db.logger)
        let devices = DeviceRepository(client: db.client)
        let registrations: [(PushToken, DevicePlatform, String, String?, String?)] = [
            (.apns(DeviceToken(bytes: Array(repeating: 1, count: 32))), .ios, "Asia/Tokyo", "iPhone15,2", "17.4.1"),
            (.apns(DeviceToken(bytes: Array(repeating: 2, count: 32))), .ios, "Europe/Berlin", "iPhone15,3", "17.0"),
            (.fcm(RequestStatements.Samples.defaultFCMToken), .android, "Asia/Tokyo", "Pixel 8", "14"),
            (.apns(DeviceToken(bytes: Array(repeating: 4, count: 32))), .ios, "Asia/Tokyo", nil, nil),
        ]
        var ids: [Int64] = []
        for (token, platform, zone, model, os) in registrations {
            let isFCM: Bool = if case .fcm = token { true } else { false }
            _ = try await devices.register(
                appID: app.id,
                token: token,
                DeviceRegistration(
                    provider: isFCM ? .fcm : .apns,
                    platform: platform,
                    environment: .production,
                    subscriptions: ["morning", "evening"],
                    timeZone: zone,
                    tier: .large,
                    autoDownload: true,
                    alertsAuthorized: true,
                    osVersion: os,
                    model: model
                ),
                logger: db.logger
            )
            let rows = try await db.client.query("SELECT max(id) FROM devices", logger: db.logger)
            for try await id in rows.decode(Int64.self) { ids.append(id) }
        }
        let (d1, d2, d3, d4) = (ids[0], ids[1], ids[2], ids[3])
        let statements: [PostgresQuery] = [
            """
            INSERT INTO editions (id, publication_id, issue_date, deadline, manifest) VALUES
                (md5('yesterday')::uuid, \(morning.id), date '2026-11-23', \(now), '{}'),
                (md5('today')::uuid, \(morning.id), date '2026-11-24', \(now), '{}'),
                (md5('evening')::uuid, \(evening.id), date '2026-11-23', \(now), '{}'),
                (md5('old')::uuid, \(morning.id), date '2026-11-01', \(now), '{}')
            """,
            """
            INSERT INTO broadcasts (id, edition_id, environment, state, plan, created_at) VALUES
                (md5('b-today')::uuid, md5('today')::uuid, 0, 'running', '{}', \(minutes(-5))),
                (md5('b-evening')::uuid, md5('evening')::uuid, 0, 'completed', '{}', \(minutes(-60))),
                (md5('b-old')::uuid, md5('old')::uuid, 0, 'completed', '{}', \(minutes(-20 * 1440)))
            """,
            // Today's morning: d1 waves 1 and 2 (its receipt echoes wave 2); d2 wave 1 (a receipt without a wave,
            // after it); d3 waves 1 and 2 (a receipt without a wave after wave 2); d4 wave 1, a rejected wave 2
            // and an alert wave 3, and a receipt without a wave after the alert: it credits no background push.
            """
            INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome) VALUES
                (\(d1), md5('b-today')::uuid, 1, 0, true, \(minutes(0)), 'accepted'),
                (\(d1), md5('b-today')::uuid, 2, 0, true, \(minutes(30)), 'accepted'),
                (\(d2), md5('b-today')::uuid, 1, 0, true, \(minutes(0)), 'accepted'),
                (\(d3), md5('b-today')::uuid, 1, 0, true, \(minutes(0)), 'accepted'),
                (\(d3), md5('b-today')::uuid, 2, 0, true, \(minutes(30)), 'accepted'),
                (\(d4), md5('b-today')::uuid, 1, 0, true, \(minutes(0)), 'accepted'),
                (\(d4), md5('b-today')::uuid, 2, 0, true, \(minutes(30)), 'rejected'),
                (\(d4), md5('b-today')::uuid, 3, 0, false, \(minutes(60)), 'accepted'),
                (\(d1), md5('b-evening')::uuid, 1, 0, true, \(minutes(-50)), 'accepted'),
                (\(d2), md5('b-old')::uuid, 1, 0, true, \(minutes(-20 * 1440)), 'accepted')
            """,
            """
            INSERT INTO receipts (device_id, edition_id, result, received_at, wave, network, charging, low_power_mode, background_refresh)
            VALUES
                (\(d1), md5('today')::uuid, 'newData', \(minutes(45)), 2, NULL, NULL, NULL, NULL),
                (\(d2), md5('today')::uuid, 'failed', \(minutes(5)), NULL, NULL, NULL, NULL, NULL),
                (\(d3), md5('today')::uuid, 'newData', \(minutes(40)), NULL, NULL, NULL, NULL, NULL),
                (\(d4), md5('today')::uuid, 'newData', \(minutes(70)), NULL, NULL, NULL, NULL, NULL),
                (\(d2), md5('old')::uuid, 'newData', \(minutes(-20 * 1440 + 5)), NULL, NULL, NULL, NULL, NULL),
                (\(d1), md5('yesterday')::uuid, 'newData', \(minutes(-1440)), 1, 0, true, false, true),
                (\(d2), md5('yesterday')::uuid, 'noData', \(minutes(-1440)), 1, 1, false, true, true)
            """,
        ]
        for statement in statements { try await db.client.query(statement, logger: db.logger) }
        return Fleet(appID: app.id, devices: ids)
    }

    /// `key pushes/wakes` per group of a dimension, in the report's order.
    static func groups(_ rates: WakeRates, _ dimension: WakeRates.Dimension) -> [String] {
        (rates.dimensions.first { $0.dimension == dimension }?.groups ?? []).map { "\($0.key) \($0.pushes)/\($0.wakes)" }
    }

    @Test("counts accepted background pushes of the window's broadcasts; a receipt wakes the wave it names, else the last push before it")
    func counts() async throws {
        try await TestDatabase.with { db in
            _ = try await Self.seed(db)
            let repository = WakeRateRepository(client: db.client)
            let rates = try await repository.wakeRates(
                publication: "morning",
                appID: nil,
                days: 14,
                now: Self.now,
                minimumPushes: 1,
                logger: db.logger
            )
            #expect(rates.total.pushes == 6 && rates.total.wakes == 3)
            #expect(Self.groups(rates, .wave) == ["1 4/1", "2 2/2"])
            #expect(Self.groups(rates, .platform) == ["ios 4/2", "android 2/1"])
            #expect(Self.groups(rates, .modelFamily) == ["iPhone15 3/2", "Pixel 8 2/1", "unknown 1/0"])
            #expect(Self.groups(rates, .osMajor) == ["iOS 17 3/2", "Android 14 2/1", "iOS unknown 1/0"])
            // As reported with yesterday's edition: d1 on Wi-Fi and charging, d2 on cellular; d3 and d4 unknown.
            #expect(Self.groups(rates, .network) == ["unknown 3/1", "wifi 2/1", "cellular 1/1"])
            #expect(Self.groups(rates, .charging) == ["unknown 3/1", "true 2/1", "false 1/1"])
            #expect(Self.groups(rates, .lowPowerMode) == ["unknown 3/1", "false 2/1", "true 1/1"])
            #expect(Self.groups(rates, .backgroundRefresh) == ["true 3/2", "unknown 3/1"])
            #expect(Self.groups(rates, .localHour) == ["05 5/2", "21 1/1"])

            // Every publication: the evening push too (no receipt). A longer window: the old broadcast too.
            let all = try await repository.wakeRates(publication: nil, appID: nil, days: 14, now: Self.now, minimumPushes: 1, logger: db.logger)
            #expect(all.total.pushes == 7 && all.total.wakes == 3 && all.publication == nil)
            let longer = try await repository.wakeRates(publication: nil, appID: nil, days: 30, now: Self.now, minimumPushes: 1, logger: db.logger)
            #expect(longer.total.pushes == 8 && longer.total.wakes == 4)
            #expect(longer.from == Self.now.addingTimeInterval(-30 * 86_400) && longer.to == Self.now)

            // One broadcast by wave, for its report: the same counting.
            var today = UUID()
            for try await id in try await db.client.query("SELECT md5('b-today')::uuid", logger: db.logger).decode(UUID.self) { today = id }
            let waves = try await repository.waveRates(broadcastID: today, minimumPushes: 1, logger: db.logger)
            #expect(waves.waves.dimension == .wave && waves.waves.groups.map { "\($0.key) \($0.pushes)/\($0.wakes)" } == ["1 4/1", "2 2/2"])
            #expect(waves.sample == nil)
            #expect(try await repository.waveRates(broadcastID: today, logger: db.logger).waves.groups.map(\.key) == ["other"])

            // The default minimum: six pushes are too few for any rate.
            let merged = try await repository.wakeRates(publication: "morning", appID: nil, days: 14, now: Self.now, logger: db.logger)
            #expect(merged.total.rate == nil)
            #expect(Self.groups(merged, .wave) == ["other 6/3"])
        }
    }

    @Test("bad days, an unknown publication or app are refused naming the field; an empty window counts nothing")
    func refusals() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            let repository = WakeRateRepository(client: db.client)
            for days in [0, -1, 91] {
                let error = await #expect(throws: StoreError.self) {
                    try await repository.wakeRates(publication: nil, appID: nil, days: days, now: Self.now, logger: db.logger)
                }
                #expect(error?.field == "days" && error?.code == .invalid)
            }
            let unknown = await #expect(throws: StoreError.self) {
                try await repository.wakeRates(publication: "weekly", appID: nil, days: 14, now: Self.now, logger: db.logger)
            }
            #expect(unknown?.field == "publication" && unknown?.code == .notFound)
            let noApp = await #expect(throws: StoreError.self) {
                try await repository.wakeRates(publication: nil, appID: fleet.appID + 1, days: 14, now: Self.now, logger: db.logger)
            }
            #expect(noApp?.field == "app" && noApp?.code == .notFound)

            let earlier = try await repository.wakeRates(
                publication: nil,
                appID: fleet.appID,
                days: 1,
                now: Self.now.addingTimeInterval(-3 * 86_400),
                logger: db.logger
            )
            #expect(earlier.total.pushes == 0 && earlier.dimensions.allSatisfy { $0.groups.isEmpty })
        }
    }

    /// A morning broadcast to `devices` seeded devices, with its waves' counters as the dispatcher keeps them:
    /// wave 1 to every target, wave 2 to the third that did not answer wave 1; a device answers wave 1 when its
    /// hash says so (about two in three), wave 2 one time in two, echoing the wave in half the receipts.
    static func seedMorning(_ db: TestDatabase, devices: Int) async throws -> UUID {
        let app = try await EditionRepositoryTests.app(db, publications: ["morning"])
        _ = try await DeviceSeeder(client: db.client).seed(
            appID: app.id,
            publicationSlugs: ["morning"],
            count: devices,
            environment: .production,
            seed: 5,
            alertsShare: 0,
            autoDownloadShare: 1,
            logger: db.logger
        )
        let statements: [PostgresQuery] = [
            """
            INSERT INTO editions (id, publication_id, issue_date, deadline, manifest)
            SELECT md5('e')::uuid, id, date '2026-11-24', \(now), '{}' FROM publications WHERE slug = 'morning'
            """,
            "INSERT INTO broadcasts (id, edition_id, environment, state, plan, created_at) VALUES (md5('b')::uuid, md5('e')::uuid, 0, 'completed', '{}', \(minutes(-5)))",
            """
            CREATE TEMP TABLE draws AS SELECT id, (hashint8extended(id, 7) & 1023)::integer AS r FROM devices
            """,
            """
            INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
            SELECT id, md5('b')::uuid, w, 0, true, \(push) + make_interval(mins => 30 * (w - 1)), 'accepted'
            FROM draws, generate_series(1, 2) w WHERE w = 1 OR r >= 683
            """,
            """
            INSERT INTO receipts (device_id, edition_id, result, received_at, wave)
            SELECT id, md5('e')::uuid, 'newData', \(push) + make_interval(mins => CASE WHEN r < 683 THEN 5 ELSE 35 END),
                CASE WHEN r % 2 = 0 THEN (CASE WHEN r < 683 THEN 1 ELSE 2 END)::smallint END
            FROM draws WHERE r < 683 OR r % 4 < 2
            """,
            """
            INSERT INTO broadcast_waves (broadcast_id, wave, kind, starts_at, window_seconds, rate, planned)
            VALUES (md5('b')::uuid, 1, 'background', \(push), 1800, 1, 0), (md5('b')::uuid, 2, 'background', \(minutes(30)), 1800, 1, 0),
                (md5('b')::uuid, 3, 'alert', \(minutes(60)), 1800, 1, 0)
            """,
            """
            INSERT INTO broadcast_cohorts (broadcast_id, wave, cohort, starts_at, ends_at, first_key, end_key, next_key, planned, accepted)
            SELECT md5('b')::uuid, wave, 0, \(push), \(push), 0, 0, 0, count(*), count(*)
            FROM deliveries GROUP BY wave
            UNION ALL SELECT md5('b')::uuid, 3, 0, \(push), \(push), 0, 0, 0, 500, 500
            """,
        ]
        for statement in statements { try await db.client.query(statement, logger: db.logger) }
        var id = UUID()
        for try await value in try await db.client.query("SELECT md5('b')::uuid", logger: db.logger).decode(UUID.self) { id = value }
        return id
    }

    @Test("a window with more pushes than the sample target is counted from a sample of the devices, and says so; the rates stay close")
    func samples() async throws {
        try await TestDatabase.with { db in
            let broadcast = try await Self.seedMorning(db, devices: 6_000)
            let repository = WakeRateRepository(client: db.client)
            // Today's morning broadcast, sampled above `samplePushes`.
            func morning(sampleAbove samplePushes: Int?) async throws -> WakeRates {
                try await repository.wakeRates(
                    publication: "morning",
                    appID: nil,
                    days: 1,
                    now: Self.now,
                    samplePushes: samplePushes,
                    logger: db.logger
                )
            }
            let all = try await morning(sampleAbove: nil)
            #expect(all.sample == nil && all.total.pushes > 7_500)
            // The alert wave's 500 do not count: the counters say as many background pushes as the ledger holds.
            let sampled = try await morning(sampleAbove: 2_000)
            let sample = try #require(sampled.sample)
            #expect(sample.windowPushes == all.total.pushes)
            #expect(sample.ranges == 6_000 / 16 && abs(sample.fraction - 2_000.0 / Double(all.total.pushes)) < 0.03)
            #expect((1_500...2_600).contains(sampled.total.pushes), "read \(sampled.total.pushes) pushes")
            let exactRate = try #require(all.total.rate)
            let sampledRate = try #require(sampled.total.rate)
            #expect(abs(sampledRate - exactRate) < 0.05, "sampled \(sampledRate), all \(exactRate)")
            // A sample is a subset: no wave has more pushes or wakes than in the whole.
            let (parts, wholes) = (sampled.dimensions[0].groups, all.dimensions[0].groups)
            #expect(sampled.dimensions[0].dimension == .wave && parts.map(\.key) == ["1", "2"] && wholes.map(\.key) == ["1", "2"])
            for (part, whole) in zip(parts, wholes) {
                #expect(part.pushes < whole.pushes && part.wakes < whole.wakes, "wave \(part.key)")
            }
            // A target at or above the window's pushes reads them all: the same report as without one.
            let enough = try await morning(sampleAbove: all.total.pushes)
            #expect(enough == all)

            // The broadcast's report by wave samples the same way.
            let waves = try await repository.waveRates(broadcastID: broadcast, samplePushes: 2_000, logger: db.logger)
            #expect(waves.sample?.windowPushes == all.total.pushes)
            #expect(waves.waves.groups.map(\.key) == ["1", "2"])
            #expect(waves.waves.groups.reduce(0) { $0 + $1.pushes } == sampled.total.pushes)
            let exactWaves = try await repository.waveRates(broadcastID: broadcast, samplePushes: nil, logger: db.logger)
            #expect(exactWaves.sample == nil && exactWaves.waves.groups.reduce(0) { $0 + $1.pushes } == all.total.pushes)

            // Past the retention the pruner deletes the deliveries and keeps the waves' counters: nothing is left to
            // read, so nothing is sampled either.
            try await db.client.query("DELETE FROM deliveries", logger: db.logger)
            let pruned = try await morning(sampleAbove: 2_000)
            #expect(pruned.sample == nil && pruned.total.pushes == 0)
            #expect(try await repository.waveRates(broadcastID: broadcast, samplePushes: 2_000, logger: db.logger).sample == nil)
        }
    }
}
