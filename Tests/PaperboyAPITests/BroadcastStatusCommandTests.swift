import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// `paperboy broadcast status` as operators run it: the real binary against a fresh database, with no worker
/// running, so that the tallies move only when the command recounts them.
@Suite("paperboy broadcast status")
struct BroadcastStatusCommandTests {
    @Test(
        "the status shows the receipts tallied and through when; --exact recounts them from the receipts first",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func exact() async throws {
        try await TestDatabase.with { db in
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app
            let morning = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            _ = try await DeviceSeeder(client: db.client).seed(
                appID: app.id,
                publicationSlugs: ["morning"],
                count: 6,
                environment: .production,
                seed: 5,
                alertsShare: 0,
                autoDownloadShare: 1,
                logger: db.logger
            )
            let broadcast = UUID()
            // A completed broadcast of today's edition to every device; four answered a minute ago, one failed. The
            // tallies were last counted an hour ago (no worker has run since).
            let statements: [PostgresQuery] = [
                "UPDATE receipt_tally_state SET counted_through = now() - interval '1 hour'",
                """
                INSERT INTO editions (id, publication_id, issue_date, deadline, manifest)
                VALUES (md5('today')::uuid, \(morning.id), date '2026-11-24', now() + interval '1 hour', '{}')
                """,
                """
                INSERT INTO broadcasts (id, edition_id, environment, state, plan, finished_at)
                VALUES (\(broadcast), md5('today')::uuid, 0, 'completed', '{}', now())
                """,
                """
                INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
                SELECT id, \(broadcast), 1, 0, true, now() - interval '5 minutes', 'accepted' FROM devices
                """,
                """
                INSERT INTO receipts (device_id, edition_id, result, received_at)
                SELECT id, md5('today')::uuid, CASE WHEN id = (SELECT min(id) FROM devices) THEN 'failed' ELSE 'newData' END,
                    now() - interval '1 minute'
                FROM devices ORDER BY id LIMIT 5
                """,
            ]
            for statement in statements { try await db.client.query(statement, logger: db.logger) }
            let id = broadcast.uuidString.lowercased()

            let tallied = try await PaperboyBinary.run(["broadcast", "status", id, "--once", "--json"], database: db.configuration)
            #expect(tallied.status == 0, "\(tallied.output)")
            let before = try Self.json(tallied.output)
            #expect(before["receipts"] as? [String: Int] == [:], "nothing tallied since an hour ago")
            #expect(before["receiptsCountedThrough"] is String)

            let exact = try await PaperboyBinary.run(["broadcast", "status", id, "--once", "--json", "--exact"], database: db.configuration)
            #expect(exact.status == 0, "\(exact.output)")
            let after = try Self.json(exact.output)
            #expect(after["receipts"] as? [String: Int] == ["newData": 4, "failed": 1])

            // The recount stays: the plain status now shows it, and says through when.
            let text = try await PaperboyBinary.run(["broadcast", "status", id, "--once"], database: db.configuration)
            #expect(text.status == 0, "\(text.output)")
            #expect(text.output.contains("Receipts by result (edition): newData 4, failed 1,"), "\(text.output)")
            #expect(text.output.contains("counted through"), "\(text.output)")

            let unknown = try await PaperboyBinary.run(["broadcast", "status", UUID().uuidString, "--exact"], database: db.configuration)
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("there is no broadcast"), "\(unknown.output)")
        }
    }

    static func json(_ output: String) throws -> [String: Any] {
        let start = try #require(output.firstIndex(of: "{"))
        return try #require(try JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any])
    }
}
