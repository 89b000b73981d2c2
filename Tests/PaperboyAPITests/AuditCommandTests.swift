import Crypto
import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

/// Changes made with the `paperboy` CLI are in the audit log like the console's and the admin API's (issue 48, item
/// 5): the real binary against a fresh database, each change with its OS user and host, in the change's transaction.
@Suite("paperboy: the CLI's changes audited")
struct AuditCommandTests {
    static func json(_ output: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(output.utf8))
    }

    @Test(
        "every change made with the CLI is an audit line with surface and role cli, the OS user and the host; a refused one writes none",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func cliChangesAudited() async throws {
        try await TestDatabase.with { db in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-audit-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let p8 = directory.appendingPathComponent("AuthKey_KEY1234567.p8").path
            try P256.Signing.PrivateKey().pemRepresentation.write(toFile: p8, atomically: true, encoding: .utf8)
            func run(_ arguments: [String]) async throws -> String {
                let result = try await PaperboyBinary.run(arguments, database: db.configuration)
                #expect(result.status == 0, "\(arguments.joined(separator: " ")): \(result.output)")
                return result.output
            }
            let added = try await run(
                ["apps", "add", "--bundle-id", "com.example.audit", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--key-file", p8, "--json"]
            )
            let app = try #require((try Self.json(added) as? [String: Any])?["id"] as? Int)
            _ = try await run(["origins", "add", "content-api", "--capacity", "2000/s"])
            _ = try await run(["publications", "add", "morning", "--app", "\(app)", "--origin", "content-api"])
            _ = try await run(["apps", "set-alert-text", "--app", "\(app)", "--title", "{publication}"])
            _ = try await run(["schedules", "add", "--publication", "morning", "--cron", "0 5 * * *", "--time-zone", "Asia/Tokyo"])
            _ = try await run(["schedules", "remove", "1"])
            _ = try await run(["devices", "seed", "--publication", "morning", "--count", "5"])
            let manifest = directory.appendingPathComponent("edition.json")
            let deadline = Date().addingTimeInterval(7200).formatted(.iso8601)
            try """
            {"publication": "morning", "issueDate": "2027-01-15", "deadline": "\(deadline)",
             "tiers": {"large": {"bundles": [{"url": "https://cdn.example.com/a.zip", "bytes": 1000, "sha256": "\(String(repeating: "0f", count: 32))"}]}},
             "pages": [{"number": 1}]}
            """.write(to: manifest, atomically: true, encoding: .utf8)
            let edition = try await run(["editions", "publish", manifest.path]).trimmingCharacters(in: .whitespacesAndNewlines)
            let started = try await run(["broadcast", "start", "--edition", edition, "--window", "10m", "--json"])
            let broadcast = try #require((try Self.json(started) as? [String: Any])?["id"] as? String)
            _ = try await run(["broadcast", "cancel", broadcast])
            _ = try await run(["apps", "add-key", "--app", "\(app)"])
            _ = try await run(["apps", "revoke-key", "--app", "\(app)", "--key", "1"])
            _ = try await run(["prune"])
            // Refused: nothing changes, nothing is recorded.
            let refused = try await PaperboyBinary.run(["schedules", "remove", "99"], database: db.configuration)
            #expect(refused.status != 0)

            let entries = try await AuditRepository(client: db.client).recent(logger: db.logger).reversed()
            #expect(
                entries.map(\.action) == [
                    "add app", "add origin", "add publication", "set alert text", "add schedule", "remove schedule", "seed devices",
                    "publish edition", "start broadcast", "cancel broadcast", "add key", "revoke key", "prune",
                ]
            )
            #expect(entries.allSatisfy { $0.surface == .cli && $0.role == "cli" })
            let user = try #require(entries.first?.name)
            #expect(!user.isEmpty && entries.allSatisfy { $0.name == user }, "the OS user")
            let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init)
            #expect(entries.allSatisfy { $0.address != nil && $0.address?.hasPrefix(host ?? "") == true }, "the host: \(entries.map(\.address))")
            #expect(entries.first { $0.action == "start broadcast" }?.broadcastID?.uuidString.lowercased() == broadcast)
            #expect(entries.first { $0.action == "publish edition" }?.editionID?.uuidString.lowercased() == edition)
            #expect(entries.first { $0.action == "add app" }?.appID == app)
            #expect(entries.first { $0.action == "revoke key" }?.detail.contains("key 1") == true)

            let printed = try await run(["audit", "--limit", "3"])
            #expect(printed.contains("  cli  cli (\(user)) on "), "\(printed)")
        }
    }

    @Test(
        "--audit-retention is a duration of at least a day, or forever; anything else is refused naming the flag, before the database is asked",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func auditRetention() async throws {
        try await TestDatabase.with { db in
            for bad in ["12h", "0d", "-1d", "1e300d", "nan", "soon"] {
                let refused = try await PaperboyBinary.run(["prune", "--audit-retention", bad], database: db.configuration)
                #expect(refused.status != 0 && refused.output.contains("--audit-retention"), "\(bad): \(refused.output)")
            }
            // The other day-or-duration flags read the same way (DurationFlag): 1e300d trapped `prune --retention`.
            for (arguments, flag) in [(["prune", "--retention", "1e300d"], "--retention"), (["audit", "--since", "1e300d"], "--since")] {
                let refused = try await PaperboyBinary.run(arguments, database: db.configuration)
                #expect(refused.status != 0 && refused.output.contains(flag) && !refused.output.contains("Fatal error"), "\(refused.output)")
            }
            let dry = try await PaperboyBinary.run(["prune", "--dry-run", "--audit-retention", "forever"], database: db.configuration)
            #expect(dry.status == 0 && dry.output.contains("kept forever"), "\(dry.output)")
        }
    }
}
