import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

/// `paperboy prune` as operators run it: the real binary against a fresh database.
@Suite("paperboy prune")
struct PruneCommandTests {
    @Test(
        "a dry run counts in JSON; bad flags fail with one line naming the flag, not the usage",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func flagsAndDryRun() async throws {
        try await TestDatabase.with { db in
            let dry = try await PaperboyBinary.run(["prune", "--dry-run", "--json"], database: db.configuration)
            #expect(dry.status == 0, "\(dry.output)")
            let line = try #require(dry.output.split(separator: "\n").last)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(json["deliveries"] as? Int == 0 && json["receipts"] as? Int == 0 && json["dryRun"] as? Bool == true)

            let short = try await PaperboyBinary.run(["prune", "--retention", "30m"], database: db.configuration)
            #expect(short.status != 0)
            #expect(short.output.contains("--retention: 30m is shorter than 2h"))

            let garbled = try await PaperboyBinary.run(["prune", "--retention", "a week"], database: db.configuration)
            #expect(garbled.status != 0)
            #expect(garbled.output.contains("--retention: a week is not a duration like 7d"))

            let batch = try await PaperboyBinary.run(["prune", "--batch-size", "0"], database: db.configuration)
            #expect(batch.status != 0)
            #expect(batch.output.contains("--batch-size: 0 is not a positive number of rows"))

            let serve = try await PaperboyBinary.run(["serve", "--retention", "1h"], database: db.configuration)
            #expect(serve.status != 0)
            #expect(serve.output.contains("--retention: 1h is shorter than 2h"))
        }
    }
}
