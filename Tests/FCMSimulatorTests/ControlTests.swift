import Foundation
import NIOHTTP1
import Testing

@testable import FCMSimulator

/// What a process (the benchmark, the demo, a shell) reaches over HTTP: `/control/…`.
@Suite("FCM simulator: control endpoints")
struct ControlTests {
    @Test("faults set over HTTP apply to the next sends; stats and the ledger read back as JSON")
    func faultsStatsLedger() async throws {
        try await SimulatorFixture.with { fixture in
            let token = try await fixture.accessToken()
            let set = try await fixture.post(
                "/control/faults",
                contentType: "application/json",
                body: #"{"tokenOutcomes":[{"prefix":"dead-","outcome":"UNREGISTERED"}],"failNext":{"outcome":"QUOTA_EXCEEDED:9","count":1}}"#
            )
            #expect(set.status == 200)
            let limited = try await fixture.send(Body.dataMessage(), token: token)
            #expect(limited.status == 429 && limited.headers.first(name: "retry-after") == "9")
            #expect(try await fixture.send(Body.dataMessage(token: "dead-7"), token: token).status == 404)
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)

            let stats = try await fixture.get("/control/stats")
            #expect(stats.status == 200)
            #expect(stats.json["accepted"] as? Int == 1)
            #expect(stats.json["requests"] as? Int == 3)
            #expect(stats.json["rejected"] as? [String: Int] == ["QUOTA_EXCEEDED": 1, "UNREGISTERED": 1])
            #expect(stats.json["tokenFetches"] as? [String: Int] == [fixture.account.clientEmail: 1])

            let ledger = try await fixture.get("/control/ledger?target=dead-7")
            let entries = try JSONSerialization.jsonObject(with: Data(ledger.body.utf8)) as? [[String: Any]]
            #expect(entries?.map { $0["outcome"] as? String } == ["UNREGISTERED"])

            let bad = try await fixture.post("/control/faults", contentType: "application/json", body: #"{"failNext":{"outcome":"GONE","count":1}}"#)
            #expect(bad.status == 400 && bad.errorMessage?.contains("failNext.outcome") == true)

            #expect(try await fixture.post("/control/reset", contentType: "application/json", body: "{}").status == 200)
            #expect(fixture.simulator.stats().requests == 0)
        }
    }

    @Test("a service account made over HTTP works for the token flow and is Google's format")
    func serviceAccountOverHTTP() async throws {
        try await SimulatorFixture.with { fixture in
            let made = try await fixture.post("/control/service-accounts", contentType: "application/json", body: #"{"project_id":"bench"}"#)
            #expect(made.status == 200)
            let account = try FCMSimulator.ServiceAccount.decode(Data(made.body.utf8), source: "answer")
            #expect(account.projectID == "bench" && account.tokenURI == fixture.simulator.tokenURL)
            let token = try await fixture.tokenRequest(assertion: try Assertion(account: account, now: fixture.clock.now()).signed())
            let accessToken = try #require(token.json["access_token"] as? String)
            #expect(try await fixture.send(Body.dataMessage(), token: accessToken, projectID: "bench").status == 200)
            #expect(try await fixture.send(Body.dataMessage(), token: accessToken).status == 403)
        }
    }

    @Test("iOS tokens named over HTTP need apns-priority 5")
    func iosTokensOverHTTP() async throws {
        try await SimulatorFixture.with { fixture in
            let token = try await fixture.accessToken()
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            let named = try await fixture.post("/control/ios-tokens", contentType: "application/json", body: #"{"tokens":["\#(Body.androidToken)"]}"#)
            #expect(named.status == 200)
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 400)
        }
    }

    @Test("the quota's window slides by the second: a send leaves it 60 s after it was counted")
    func quotaWindow() {
        var quota = FCMProjectQuota(messagesPerMinute: 2)
        let start = Date(timeIntervalSince1970: 1_000_000_000.5)
        #expect(quota.admit(at: start) == .admitted)
        #expect(quota.admit(at: start + 59) == .admitted)
        #expect(quota.admit(at: start + 59) == .exceeded(retryAfter: 1))
        #expect(quota.admit(at: start + 60) == .admitted)
        #expect(quota.admit(at: start + 60) == .exceeded(retryAfter: 59))
        // Long after, the old buckets hold nothing.
        #expect(quota.admit(at: start + 3600) == .admitted)
        #expect(quota.admit(at: start + 3600) == .admitted)
    }
}
