import FCMSimulator
import Foundation
import NIOHTTP1
import Testing

/// The send endpoint over real HTTP/1.1 (as the Python Admin SDK speaks it): answers, error bodies, faults, the
/// quota and the ledger as a client sees them.
@Suite("FCM simulator: sends and faults")
struct SendTests {
    static let project = SimulatorFixture.projectID

    @Test("an accepted message answers its name and is in the ledger with its time and body")
    func accepted() async throws {
        try await SimulatorFixture.with { fixture in
            let token = try await fixture.accessToken()
            let body = Body.dataMessage()
            let answer = try await fixture.send(body, token: token)
            #expect(answer.status == 200)
            let name = try #require(answer.json["name"] as? String)
            #expect(name.hasPrefix("projects/\(Self.project)/messages/"))
            let ledger = fixture.simulator.ledger(for: Body.androidToken)
            #expect(ledger == [.init(at: fixture.clock.now(), outcome: "accepted", name: name, body: body)])
            #expect(fixture.simulator.stats().accepted == 1)

            let dryRun = try await fixture.send(#"{"validate_only":true,"message":{"token":"\#(Body.androidToken)"}}"#, token: token)
            #expect(dryRun.json["name"] as? String == "projects/\(Self.project)/messages/fake_message_id")
            #expect(fixture.simulator.acceptedCount(for: Body.androidToken) == 1)
            #expect(fixture.simulator.stats().validatedOnly == 1)
        }
    }

    @Test("a bad message answers FCM's error body: 400, INVALID_ARGUMENT status and FcmError detail")
    func invalidArgumentBody() async throws {
        try await SimulatorFixture.with { fixture in
            let token = try await fixture.accessToken()
            let answer = try await fixture.send(#"{"message":{"token":"not a token"}}"#, token: token)
            #expect(answer.status == 400)
            let error = try #require(answer.json["error"] as? [String: Any])
            #expect(error["code"] as? Int == 400)
            #expect(error["status"] as? String == "INVALID_ARGUMENT")
            #expect(error["message"] as? String == "The registration token is not a valid FCM registration token")
            let detail = try #require((error["details"] as? [[String: Any]])?.first)
            #expect(detail["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError")
            #expect(detail["errorCode"] as? String == "INVALID_ARGUMENT")
            #expect(answer.headers.first(name: "content-type")?.hasPrefix("application/json") == true)

            let wrongType = try await fixture.post(
                "/v1/projects/\(Self.project)/messages:send",
                contentType: "text/plain",
                body: Body.dataMessage(),
                authorization: "Bearer \(token)"
            )
            #expect(wrongType.status == 400 && wrongType.errorMessage?.contains("Content-Type") == true)
            #expect(try await fixture.get("/v1/projects/\(Self.project)/messages:send").status == 404)
        }
    }

    @Test("iOS tokens, by prefix or named at run time, need apns-priority 5 on data-only messages")
    func iosPriority() async throws {
        try await SimulatorFixture.with(iosTokenPrefixes: ["ios-"]) { fixture in
            let token = try await fixture.accessToken()
            let refused = try await fixture.send(Body.dataMessage(token: Body.iosToken), token: token)
            #expect(refused.status == 400 && refused.errorCode == "INVALID_ARGUMENT")
            #expect(refused.errorMessage?.contains("apns-priority 5") == true)
            let background = Body.dataMessage(
                token: Body.iosToken,
                extra: #","apns":{"headers":{"apns-priority":"5"},"payload":{"aps":{"content-available":1}}}"#
            )
            #expect(try await fixture.send(background, token: token).status == 200)
            // The same data-only message is fine for an Android token, until the token is named as iOS.
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            fixture.simulator.markIOS(tokens: [Body.androidToken])
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 400)
        }
    }

    @Test("token faults: UNREGISTERED 404, SENDER_ID_MISMATCH 403, invalid token 400, THIRD_PARTY_AUTH_ERROR 401; in the ledger")
    func tokenOutcomes() async throws {
        var faults = FCMSimulator.Faults()
        faults.outcomesByTokenPrefix = [
            ("dead-", .unregistered), ("other-", .senderIDMismatch), ("bad-", .invalidToken), ("apnsbroken-", .thirdPartyAuthError),
        ]
        try await SimulatorFixture.with(faults: faults) { fixture in
            let token = try await fixture.accessToken()
            let cases: [(String, Int, String, String)] = [
                ("dead-1", 404, "UNREGISTERED", "NOT_FOUND"),
                ("other-1", 403, "SENDER_ID_MISMATCH", "PERMISSION_DENIED"),
                ("bad-1", 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
                ("apnsbroken-1", 401, "THIRD_PARTY_AUTH_ERROR", "UNAUTHENTICATED"),
            ]
            for (target, status, code, googleStatus) in cases {
                let answer = try await fixture.send(Body.dataMessage(token: target), token: token)
                #expect(answer.status == status, "\(target)")
                #expect(answer.errorCode == code, "\(target)")
                #expect(answer.errorStatus == googleStatus, "\(target)")
                #expect(fixture.simulator.ledger(for: target).map(\.outcome) == [code])
            }
            let badToken = try await fixture.send(Body.dataMessage(token: "bad-2"), token: token)
            #expect(badToken.errorMessage == FCMMessageValidator.invalidTokenMessage)
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            #expect(
                fixture.simulator.stats().rejected == [
                    "UNREGISTERED": 1, "SENDER_ID_MISMATCH": 1, "INVALID_ARGUMENT": 2, "THIRD_PARTY_AUTH_ERROR": 1,
                ]
            )
        }
    }

    @Test("server faults for the next N requests: 429 with and without Retry-After, 503, 500, then accepted")
    func failNext() async throws {
        try await SimulatorFixture.with { fixture in
            let token = try await fixture.accessToken()
            fixture.simulator.updateFaults { $0.failNext = (.quotaExceeded(retryAfter: 30), 1) }
            let limited = try await fixture.send(Body.dataMessage(), token: token)
            #expect(limited.status == 429 && limited.errorCode == "QUOTA_EXCEEDED")
            #expect(limited.headers.first(name: "retry-after") == "30")
            fixture.simulator.updateFaults { $0.failNext = (.quotaExceeded(retryAfter: nil), 1) }
            let bare = try await fixture.send(Body.dataMessage(), token: token)
            #expect(bare.status == 429 && bare.headers.first(name: "retry-after") == nil)
            fixture.simulator.updateFaults { $0.failNext = (.unavailable, 2) }
            #expect(try await fixture.send(Body.dataMessage(), token: token).errorCode == "UNAVAILABLE")
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 503)
            fixture.simulator.updateFaults { $0.failNext = (.internal, 1) }
            let internalError = try await fixture.send(Body.dataMessage(), token: token)
            #expect(internalError.status == 500 && internalError.errorCode == "INTERNAL")
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            #expect(fixture.simulator.stats().rejected == ["QUOTA_EXCEEDED": 2, "UNAVAILABLE": 2, "INTERNAL": 1])
        }
    }

    @Test("a failure share answers about that share of sends, the same for the same seed")
    func failureRate() async throws {
        var faults = FCMSimulator.Faults()
        faults.failureRates = [(.unavailable, 0.5)]
        faults.seed = 7
        var outcomes: [[Int]] = []
        for _ in 0..<2 {
            try await SimulatorFixture.with(faults: faults) { fixture in
                let token = try await fixture.accessToken()
                var statuses: [Int] = []
                for _ in 0..<40 { statuses.append(try await fixture.send(Body.dataMessage(), token: token).status) }
                outcomes.append(statuses)
            }
        }
        #expect(outcomes[0] == outcomes[1])
        let failed = outcomes[0].count { $0 == 503 }
        #expect((10...30).contains(failed))
        #expect(outcomes[0].allSatisfy { $0 == 200 || $0 == 503 })
    }

    @Test("latency delays every answer by at least the fault's duration")
    func latency() async throws {
        var faults = FCMSimulator.Faults()
        faults.latency = .milliseconds(150)
        try await SimulatorFixture.with(faults: faults) { fixture in
            let token = try await fixture.accessToken()
            let start = ContinuousClock.now
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(150))
        }
    }

    @Test("the project quota: over N per sliding minute answers 429 QUOTA_EXCEEDED with Retry-After until the window moves")
    func quota() async throws {
        var faults = FCMSimulator.Faults()
        faults.quotaPerMinute = 3
        try await SimulatorFixture.with(faults: faults) { fixture in
            let token = try await fixture.accessToken()
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            fixture.clock.advance(seconds: 20)
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            // A refused message counts against the quota too.
            #expect(try await fixture.send(Body.dataMessage(token: "a b"), token: token).status == 400)
            let over = try await fixture.send(Body.dataMessage(), token: token)
            #expect(over.status == 429 && over.errorCode == "QUOTA_EXCEEDED")
            #expect(over.headers.first(name: "retry-after") == "40")
            fixture.clock.advance(seconds: 40)
            // The first send left the window; the two of second 20 are still in it.
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 429)
        }
    }
}
