import FCMSimulator
import Foundation
import Testing
import _CryptoExtras

/// The OAuth2 token endpoint over real HTTP/1.1: what a client signing service-account assertions sees.
@Suite("FCM simulator: token endpoint")
struct TokenEndpointTests {
    @Test("a good assertion gets an expiring Bearer access token, counted per account")
    func goodAssertion() async throws {
        try await SimulatorFixture.with { fixture in
            let answer = try await fixture.tokenRequest()
            #expect(answer.status == 200)
            #expect(answer.json["token_type"] as? String == "Bearer")
            #expect(answer.json["expires_in"] as? Int == 3600)
            let token = try #require(answer.json["access_token"] as? String)
            #expect(token.count > 20)
            _ = try await fixture.tokenRequest()
            #expect(fixture.simulator.stats().tokenFetches == [fixture.account.clientEmail: 2])
            let sent = try await fixture.send(Body.dataMessage(), token: token)
            #expect(sent.status == 200)
        }
    }

    @Test("bad assertions are refused with Google's OAuth2 errors, and counted")
    func badAssertions() async throws {
        try await SimulatorFixture.with { fixture in
            let now = fixture.clock.now()
            let good = try Assertion(account: fixture.account, now: now)
            var cases: [(String, Assertion, String)] = []
            var otherKey = good
            otherKey.key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            cases.append(("signed by another key", otherKey, "invalid_grant"))
            var wrongAudience = good
            wrongAudience.audience = "https://oauth2.googleapis.com/token"
            cases.append(("aud is Google's, not the simulator's", wrongAudience, "invalid_grant"))
            var tooLong = good
            tooLong.expires = now + 3601
            cases.append(("exp - iat is 3601 s", tooLong, "invalid_grant"))
            var expired = good
            expired.issuedAt = now - 3700
            expired.expires = now - 100
            cases.append(("expired", expired, "invalid_grant"))
            var future = good
            future.issuedAt = now + 600
            future.expires = now + 1200
            cases.append(("issued 10 minutes in the future", future, "invalid_grant"))
            var noScope = good
            noScope.scope = "https://www.googleapis.com/auth/userinfo.email"
            cases.append(("without the firebase.messaging scope", noScope, "invalid_scope"))
            var stranger = good
            stranger.issuer = "someone@else.iam.gserviceaccount.com"
            cases.append(("iss is not a trusted account", stranger, "invalid_grant"))
            var wrongKeyID = good
            wrongKeyID.keyID = "0123"
            cases.append(("kid is not the account's key", wrongKeyID, "invalid_grant"))

            for (name, assertion, error) in cases {
                let answer = try await fixture.tokenRequest(assertion: try assertion.signed())
                #expect(answer.status == 400, "\(name)")
                #expect(answer.json["error"] as? String == error, "\(name): \(answer.body)")
                #expect((answer.json["error_description"] as? String)?.isEmpty == false, "\(name)")
            }
            #expect(fixture.simulator.stats().tokenFetches.isEmpty)
            #expect(fixture.simulator.stats().tokenRejections == ["invalid_grant": 7, "invalid_scope": 1])

            let wrongGrant = try await fixture.post("/token", contentType: "application/x-www-form-urlencoded", body: "grant_type=client_credentials")
            #expect(wrongGrant.status == 400 && wrongGrant.json["error"] as? String == "unsupported_grant_type")
        }
    }

    @Test("an access token that expired answers 401 UNAUTHENTICATED; a new one works")
    func expiredAccessToken() async throws {
        try await SimulatorFixture.with(tokenLifetime: .seconds(60)) { fixture in
            let token = try await fixture.accessToken()
            #expect(try await fixture.send(Body.dataMessage(), token: token).status == 200)
            fixture.clock.advance(seconds: 61)
            let expired = try await fixture.send(Body.dataMessage(), token: token)
            #expect(expired.status == 401)
            #expect(expired.errorStatus == "UNAUTHENTICATED")
            #expect(expired.errorCode == nil)
            #expect(try await fixture.send(Body.dataMessage(), token: try await fixture.accessToken()).status == 200)
            #expect(fixture.simulator.stats().rejected == ["UNAUTHENTICATED": 1])
        }
    }

    @Test("no bearer, an unknown one, or another project's token: 401, 401, 403 PERMISSION_DENIED")
    func bearerAndProject() async throws {
        try await SimulatorFixture.with { fixture in
            let missing = try await fixture.post(
                "/v1/projects/\(SimulatorFixture.projectID)/messages:send",
                contentType: "application/json",
                body: Body.dataMessage()
            )
            #expect(missing.status == 401 && missing.errorStatus == "UNAUTHENTICATED")
            #expect(try await fixture.send(Body.dataMessage(), token: "ya29.made-up").status == 401)
            let otherProject = try await fixture.send(Body.dataMessage(), token: try await fixture.accessToken(), projectID: "someone-else")
            #expect(otherProject.status == 403 && otherProject.errorStatus == "PERMISSION_DENIED")
            #expect(fixture.simulator.stats().accepted == 0)
        }
    }

    @Test("a written service account is Google's format with a PKCS#8 key, reads back, and a broken one names the field")
    func serviceAccountFile() throws {
        let account = try FCMSimulator.ServiceAccount.generate(projectID: "demo", tokenURI: "http://127.0.0.1:8089/token")
        #expect(account.privateKey.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-sim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("throwaway-service-account.json").path
        try account.write(to: file)
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any]
        #expect(json?["type"] as? String == "service_account")
        #expect(json?["token_uri"] as? String == "http://127.0.0.1:8089/token")
        #expect(try FCMSimulator.ServiceAccount.load(file: file) == account)

        var broken = try #require(json)
        broken.removeValue(forKey: "client_email")
        try JSONSerialization.data(withJSONObject: broken).write(to: URL(fileURLWithPath: file))
        #expect {
            try FCMSimulator.ServiceAccount.load(file: file)
        } throws: { error in
            "\(error)".contains("'client_email'")
        }
        #expect("\(account)".contains("-----") == false)
    }
}
