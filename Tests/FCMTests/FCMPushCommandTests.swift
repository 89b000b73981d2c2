import FCMSimulator
import Foundation
import PaperboyTesting
import Testing

/// `paperboy push --provider fcm` as an operator runs it: the real binary against the FCM simulator on loopback.
@Suite("paperboy push --provider fcm")
struct FCMPushCommandTests {
    static let good = "goodinst:APA91b" + String(repeating: "Zm9vYmFy", count: 16)
    static let dead = "deadinst:APA91b" + String(repeating: "Zm9vYmFy", count: 16)

    @Test(
        "one data message per token: the outcome per token with FCM's code and action, exit 1 unless all were accepted",
        .enabled(if: PaperboyBinary.isBuilt)
    )
    func pushes() async throws {
        var faults = FCMSimulator.Faults()
        faults.outcomesByTokenPrefix = [("dead", .unregistered)]
        var configuration = FCMSimulator.Configuration(faults: faults)
        configuration.eventLoopThreads = 1
        let simulator = try FCMSimulator(configuration: configuration)
        _ = try await simulator.start()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-push-fcm-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let account = try simulator.makeServiceAccount(projectID: "paperboy-push")
        try account.write(to: file.path)
        defer { Task { try? await simulator.shutdown() } }

        let run = try await PaperboyBinary.run([
            "push", "--provider", "fcm", "--service-account", file.path, "--fcm-endpoint", simulator.url,
            "--data", #"{"edition": "e1", "pages": 3}"#, "--json", Self.good, Self.dead,
        ])
        #expect(run.status == 1)
        // Standard output and error together: the JSON lines are the ones that start with '{'.
        let lines = run.output.split(separator: "\n").filter { $0.hasPrefix("{") }.map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(lines.count == 2)
        #expect(lines.first??["outcome"] as? String == "accepted")
        #expect((lines.first??["name"] as? String)?.hasPrefix("projects/paperboy-push/messages/") == true)
        #expect(lines.last??["outcome"] as? String == "rejected")
        #expect(lines.last??["status"] as? Int == 404)
        #expect(lines.last??["code"] as? String == "UNREGISTERED")
        #expect(lines.last??["action"] as? String == "deactivateToken")
        // The data reached FCM as strings: the number as its JSON text.
        let body = try #require(simulator.ledger(for: Self.good).first?.body)
        #expect(body.contains(#""pages":"3""#))
        #expect(simulator.stats().tokenFetches[account.clientEmail] == 1)
        let key = account.privateKey.split(separator: "\n").dropFirst().first.map(String.init) ?? "unlikely"
        #expect(!run.output.contains(key), "no key material in the output")
    }

    @Test("push --provider fcm names the flag at fault", .enabled(if: PaperboyBinary.isBuilt))
    func badFlags() async throws {
        let noAccount = try await PaperboyBinary.run(["push", "--provider", "fcm", Self.good])
        #expect(noAccount.status != 0)
        #expect(noAccount.output.contains("--service-account"))
        let badToken = try await PaperboyBinary.run(["push", "--provider", "fcm", "--service-account", "/nonexistent.json", "not a token"])
        #expect(badToken.status != 0)
        #expect(badToken.output.contains("not a token"))
        let unreadable = try await PaperboyBinary.run(["push", "--provider", "fcm", "--service-account", "/nonexistent.json", Self.good])
        #expect(unreadable.status != 0)
        #expect(unreadable.output.contains("--service-account") && unreadable.output.contains("/nonexistent.json"))
        let badEndpoint = try await PaperboyBinary.run([
            "push", "--provider", "fcm", "--service-account", "/nonexistent.json", "--fcm-endpoint", "ftp://x", Self.good,
        ])
        #expect(badEndpoint.status != 0)
        #expect(badEndpoint.output.contains("--service-account") || badEndpoint.output.contains("--fcm-endpoint"))
    }
}
