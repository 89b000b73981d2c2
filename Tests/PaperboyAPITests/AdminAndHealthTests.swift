import Foundation
import HTTPTypes
import HummingbirdTesting
import PaperboyAPI
import PaperboyTesting
import Synchronization
import Testing

@Suite("Admin token and health")
struct AdminAndHealthTests {
    @Test("admin endpoints need the bearer token; the apps list never shows key hashes")
    func adminToken() async throws {
        try await APIFixture.with { fixture, client in
            let missing = try await client.send(.get, "/v1/apps")
            #expect(missing.status == .unauthorized)
            #expect(try missing.apiError().field == "Authorization")

            let wrong = try await client.send(.get, "/v1/apps", headers: [.authorization: "Bearer wrong"])
            #expect(wrong.status == .unauthorized)
            let deviceKey = try await client.send(.get, "/v1/apps", headers: [.authorization: "Bearer \(fixture.apiKey)"])
            #expect(deviceKey.status == .unauthorized)

            let listed = try await client.send(.get, "/v1/apps", headers: [.authorization: "Bearer \(APIFixture.adminToken)"])
            #expect(listed.status == .ok)
            let apps = try #require(try listed.json()["apps"] as? [[String: Any]])
            #expect(apps.map { $0["bundleId"] as? String } == ["com.example.news"])
            #expect(!listed.text.contains(fixture.apiKey))
            #expect(!listed.text.lowercased().contains("hash"))
        }
    }

    @Test("live always answers; ready answers when the database is migrated")
    func health() async throws {
        try await APIFixture.with { _, client in
            #expect(try await client.send(.get, "/health/live").status == .ok)
            let ready = try await client.send(.get, "/health/ready")
            #expect(ready.status == .ok)
            #expect(try ready.json()["status"] as? String == "ready")
        }
    }

    @Test("ready answers 503 when migrations are pending: `not_ready` to strangers, naming `paperboy migrate` on the admin listener")
    func notReadyWhenMigrationsPending() async throws {
        try await APIFixture.with(migrated: false) { _, client in
            #expect(try await client.send(.get, "/health/live").status == .ok)
            let ready = try await client.send(.get, "/health/ready")
            #expect(ready.status == .serviceUnavailable)
            #expect(try ready.apiError().code == .notReady)
        }
        let reasons: @Sendable (inout APIConfiguration) -> Void = { $0.readinessReasons = true }
        try await APIFixture.with(migrated: false, configure: reasons) { _, client in
            let ready = try await client.send(.get, "/health/ready")
            #expect(ready.status == .serviceUnavailable)
            let error = try ready.apiError()
            #expect(error.code == .migrationsPending)
            #expect(error.message.contains("paperboy migrate"))
        }
    }

    @Test("a serve's API stays ready while its dispatcher cannot send for an app; the admin listener lists why")
    func sendersDoNotGateAServe() async throws {
        let problem = "app 1 (APNs): APNs key file /run/secrets/apns_key.p8 does not exist"
        let admin: @Sendable (inout APIConfiguration) -> Void = {
            $0.senderProblems = { [problem] }
            $0.sendersGateReadiness = false
            $0.readinessReasons = true
        }
        try await APIFixture.with(configure: admin) { _, client in
            let ready = try await client.send(.get, "/health/ready")
            #expect(ready.status == .ok)
            #expect(try ready.json()["cannotSend"] as? [String] == [problem])
        }
        let strangers: @Sendable (inout APIConfiguration) -> Void = {
            $0.senderProblems = { [problem] }
            $0.sendersGateReadiness = false
        }
        try await APIFixture.with(configure: strangers) { _, client in
            let ready = try await client.send(.get, "/health/ready")
            #expect(ready.status == .ok)
            #expect(try ready.json().count == 1, "strangers read the status only: \(ready.text)")
        }
    }

    @Test("a flood of readiness probes costs one check at a time and at most one a second: 200 at once, a handful of checks")
    func readinessSharedAcrossProbes() async throws {
        let checks = Counter()
        let counted: @Sendable (inout APIConfiguration) -> Void = { configuration in
            configuration.senderProblems = {
                checks.add()
                return []
            }
        }
        try await APIFixture.with(configure: counted) { _, client in
            let started = ContinuousClock.now
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<200 { group.addTask { try await client.send(.get, "/health/ready").status } }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            let seconds = (ContinuousClock.now - started).components.seconds
            #expect(statuses.allSatisfy { $0 == .ok })
            #expect(checks.value >= 1)
            #expect(checks.value <= Int(seconds) + 2, "\(checks.value) checks for 200 probes over \(seconds) s")
        }
    }

    /// How many times something happened, from any task.
    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

}
