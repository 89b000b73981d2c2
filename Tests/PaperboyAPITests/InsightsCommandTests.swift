import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

/// `paperboy insights wake-rates` as operators run it: the real binary against a fresh database.
@Suite("paperboy insights")
struct InsightsCommandTests {
    @Test(
        "wake-rates --json prints the report's shape; bad flags fail with one line naming the flag",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func wakeRates() async throws {
        try await TestDatabase.with { db in
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)

            let json = try await PaperboyBinary.run(
                ["insights", "wake-rates", "--publication", "morning", "--days", "3", "--json"],
                database: db.configuration
            )
            #expect(json.status == 0, "\(json.output)")
            let line = try #require(json.output.split(separator: "\n").last)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(Set(report.keys) == ["publication", "days", "from", "to", "minimumPushes", "total", "dimensions"])
            #expect(report["publication"] as? String == "morning" && report["days"] as? Int == 3 && report["minimumPushes"] as? Int == 200)
            let total = try #require(report["total"] as? [String: Any])
            #expect(total["pushes"] as? Int == 0 && total["wakes"] as? Int == 0)
            #expect((report["dimensions"] as? [[String: Any]])?.count == 9)

            let text = try await PaperboyBinary.run(["insights", "wake-rates"], database: db.configuration)
            #expect(text.status == 0, "\(text.output)")
            #expect(text.output.contains("every publication") && text.output.contains("(14 days)"))
            #expect(text.output.contains("nothing to measure yet"))

            for days in ["0", "91", "two"] {
                let bad = try await PaperboyBinary.run(["insights", "wake-rates", "--days", days], database: db.configuration)
                #expect(bad.status != 0, "--days \(days)")
                #expect(bad.output.contains("--days"), "\(bad.output)")
            }
            for sample in ["999", "0", "many"] {
                let bad = try await PaperboyBinary.run(["insights", "wake-rates", "--sample", sample], database: db.configuration)
                #expect(bad.status != 0, "--sample \(sample)")
                #expect(bad.output.contains("--sample"), "\(bad.output)")
            }
            let all = try await PaperboyBinary.run(["insights", "wake-rates", "--sample", "all"], database: db.configuration)
            #expect(all.status == 0 && !all.output.contains("sampled"), "\(all.output)")
            let unknown = try await PaperboyBinary.run(["insights", "wake-rates", "--publication", "weekly"], database: db.configuration)
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("--publication: there is no publication weekly"), "\(unknown.output)")
            #expect(!unknown.output.contains("USAGE"), "a refusal by the database is one line, not the usage")
        }
    }
}
