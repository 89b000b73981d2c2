import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Pruning the delivery ledger")
struct LedgerPrunerTests {
    static let day: TimeInterval = 86_400

    /// 40 devices; an old edition (deliveries and receipts 9 days old), a recent one (3 days old), and a
    /// running broadcast whose rows are dated 8 days back (its edition is live until tomorrow).
    static func seed(_ db: TestDatabase, now: Date) async throws {
        let app = try await AppRepository(client: db.client).create(
            try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
            logger: db.logger
        ).app
        let morning = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
        _ = try await DeviceSeeder(client: db.client).seed(
            appID: app.id,
            publicationSlugs: ["morning"],
            count: 40,
            environment: .production,
            seed: 3,
            alertsShare: 0,
            autoDownloadShare: 1,
            logger: db.logger
        )
        // (name, deadline, broadcast state, finished, rows' age)
        let editions: [(String, TimeInterval, String, TimeInterval?, TimeInterval)] = [
            ("old", -9 * day, "completed", -9 * day, -9.5 * day),
            ("recent", -2 * day, "completed", -2.5 * day, -3 * day),
            ("live", day, "running", nil, -8 * day),
        ]
        for (index, (name, deadline, state, finished, age)) in editions.enumerated() {
            let finishedAt = finished.map { now.addingTimeInterval($0) }
            let statements: [PostgresQuery] = [
                """
                INSERT INTO editions (id, publication_id, issue_date, deadline, manifest)
                VALUES (md5(\(name))::uuid, \(morning.id), date '2026-11-01' + \(Int32(index)), \(now.addingTimeInterval(deadline)), '{}')
                """,
                """
                INSERT INTO broadcasts (id, edition_id, environment, state, plan, finished_at)
                VALUES (md5('b' || \(name))::uuid, md5(\(name))::uuid, 0, \(state), '{}', \(finishedAt))
                """,
                """
                INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
                SELECT id, md5('b' || \(name))::uuid, 1, 0, true, \(now.addingTimeInterval(age)), 'accepted' FROM devices
                """,
                """
                INSERT INTO receipts (device_id, edition_id, result, received_at)
                SELECT id, md5(\(name))::uuid, 'newData', \(now.addingTimeInterval(age + 60)) FROM devices WHERE id % 2 = 0
                """,
                """
                INSERT INTO broadcast_waves (broadcast_id, wave, kind, starts_at, window_seconds, rate, planned)
                VALUES (md5('b' || \(name))::uuid, 1, 'background', \(now.addingTimeInterval(age)), 60, 1, 40)
                """,
                """
                INSERT INTO broadcast_cohorts (broadcast_id, wave, cohort, starts_at, ends_at, first_key, end_key, next_key, planned)
                VALUES (md5('b' || \(name))::uuid, 1, 0, \(now.addingTimeInterval(age)), \(now.addingTimeInterval(age + 60)), 0, 10, 10, 40)
                """,
                """
                INSERT INTO broadcast_batches (broadcast_id, wave, cohort, first_key, last_key, first_ordinal, devices, lease_owner,
                    lease_expires_at, done_at)
                SELECT md5('b' || \(name))::uuid, 1, 0, k, k, k, 1, 'w', \(now.addingTimeInterval(age)), \(now.addingTimeInterval(age))
                FROM generate_series(1, 4) k
                """,
            ]
            for statement in statements { try await db.client.query(statement, logger: db.logger) }
        }
    }

    /// Rows left per edition name.
    static func remaining(_ db: TestDatabase) async throws -> [String: (deliveries: Int, receipts: Int, batches: Int)] {
        var left: [String: (deliveries: Int, receipts: Int, batches: Int)] = [:]
        let rows = try await db.client.query(
            """
            SELECT name, (SELECT count(*) FROM deliveries WHERE broadcast_id = md5('b' || name)::uuid),
                (SELECT count(*) FROM receipts WHERE edition_id = md5(name)::uuid),
                (SELECT count(*) FROM broadcast_batches WHERE broadcast_id = md5('b' || name)::uuid)
            FROM unnest(ARRAY['old', 'recent', 'live']) AS name
            """,
            logger: db.logger
        )
        for try await (name, deliveries, receipts, batches) in rows.decode((String, Int, Int, Int).self) {
            left[name] = (deliveries, receipts, batches)
        }
        return left
    }

    @Test("rows older than the retention go in batches; newer ones and a running broadcast's stay; a dry run only counts")
    func prunesOldRowsOnly() async throws {
        try await TestDatabase.with { db in
            let now = Date()
            try await Self.seed(db, now: now)
            let pruner = try LedgerPruner(client: db.client, configuration: .init(retention: .seconds(7 * 86_400), batchSize: 15))

            let counted = try await pruner.prune(now: now, dryRun: true, logger: db.logger)
            #expect(counted.deliveries == 40 && counted.receipts == 20 && counted.batches == 4 && counted.dryRun)
            var left = try await Self.remaining(db)
            #expect(left["old"]?.deliveries == 40 && left["old"]?.receipts == 20 && left["old"]?.batches == 4)

            var batches: [Int] = []
            let pruned = try await pruner.prune(now: now, progress: { batches.append($0.deliveries + $0.receipts + $0.batches) }, logger: db.logger)
            #expect(pruned.deliveries == 40 && pruned.receipts == 20 && pruned.batches == 4 && !pruned.dryRun)
            // 40 deliveries, the broadcast's 4 batch rows, 20 receipts, at most 15 a statement.
            #expect(batches == [15, 30, 40, 44, 59, 64])
            left = try await Self.remaining(db)
            #expect(left["old"]?.deliveries == 0 && left["old"]?.receipts == 0 && left["old"]?.batches == 0)
            #expect(left["recent"]?.deliveries == 40 && left["recent"]?.receipts == 20 && left["recent"]?.batches == 4)
            #expect(left["live"]?.deliveries == 40 && left["live"]?.receipts == 20 && left["live"]?.batches == 4)

            // A shorter retention takes the recent edition's rows too, never the running broadcast's.
            let shorter = try LedgerPruner(client: db.client, configuration: .init(retention: .seconds(86_400)))
            let second = try await shorter.prune(now: now, logger: db.logger)
            #expect(second.deliveries == 40 && second.receipts == 20)
            left = try await Self.remaining(db)
            #expect(left["recent"]?.deliveries == 0 && left["recent"]?.batches == 0)
            #expect(
                left["live"]?.deliveries == 40 && left["live"]?.receipts == 20 && left["live"]?.batches == 4,
                "a running broadcast keeps its batches"
            )
        }
    }

    @Test("a retention within the hourly budget's hour is refused, naming retention")
    func retentionTooShort() async throws {
        _ = try await TestDatabase.with { db in
            #expect {
                try LedgerPruner(client: db.client, configuration: .init(retention: .seconds(3600)))
            } throws: { error in
                (error as? StoreError)?.field == "retention"
            }
        }
    }
}
