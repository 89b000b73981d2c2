import FCM
import Foundation
import PaperboyTesting
import Synchronization
import Testing
import _CryptoExtras

@Suite("FCM access tokens")
struct FCMAccessTokensTests {
    /// A token endpoint stand-in that counts fetches and answers what the test says.
    final class Endpoint: Sendable {
        private let state = Mutex<(fetches: Int, assertions: [String], failing: Bool)>((0, [], false))
        let lifetime: Duration

        init(lifetime: Duration = .seconds(3599)) { self.lifetime = lifetime }

        var fetches: Int { state.withLock { $0.fetches } }
        var assertions: [String] { state.withLock { $0.assertions } }
        func fail(_ failing: Bool) { state.withLock { $0.failing = failing } }

        func fetch(_ assertion: String) throws(FCMAuthError) -> FCMAccessToken {
            let (count, failing) = state.withLock { state in
                state.fetches += 1
                state.assertions.append(assertion)
                return (state.fetches, state.failing)
            }
            if failing { throw FCMAuthError("the token endpoint refused the service account (HTTP 400, invalid_grant)") }
            return FCMAccessToken(value: "token-\(count)", lifetime: lifetime)
        }
    }

    /// Tokens from `endpoint` on `clock`; each backoff is all of its step (`random` 1) unless told otherwise.
    static func tokens(
        _ endpoint: Endpoint,
        clock: ManualClock,
        now: Date = Date(timeIntervalSince1970: 1_800_000_000),
        random: @escaping @Sendable () -> Double = { 1 }
    )
        -> FCMAccessTokens<ManualClock>
    {
        FCMAccessTokens(
            account: FCMTestAccount.make(),
            clock: clock,
            wallTime: { now },
            fetch: { assertion throws(FCMAuthError) in try endpoint.fetch(assertion) },
            random: random
        )
    }

    @Test("the assertion is RS256 with kid, and its claims are iss, scope, aud, iat and exp = iat + 3600")
    func assertionShape() async throws {
        let endpoint = Endpoint()
        let tokens = Self.tokens(endpoint, clock: ManualClock())
        _ = try await tokens.current()
        let parts = try #require(endpoint.assertions.first).split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(try Self.decode(parts[0]) == #"{"alg":"RS256","kid":"0123456789abcdef","typ":"JWT"}"#)
        let claims = try JSONSerialization.jsonObject(with: Self.data(parts[1])) as? [String: Any]
        #expect(claims?["iss"] as? String == "sender@paperboy-test.iam.gserviceaccount.com")
        #expect(claims?["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(claims?["aud"] as? String == "https://oauth2.googleapis.com/token")
        #expect(claims?["iat"] as? Int == 1_800_000_000)
        #expect(claims?["exp"] as? Int == 1_800_003_600)
        let signature = _RSA.Signing.RSASignature(rawRepresentation: try Self.data(parts[2]))
        let signed = Data((parts[0] + "." + parts[1]).utf8)
        #expect(FCMTestAccount.key.publicKey.isValidSignature(signature, for: signed, padding: .insecurePKCS1v1_5))
        #expect(!FCMTestAccount.key.publicKey.isValidSignature(signature, for: Data("x".utf8), padding: .insecurePKCS1v1_5))
    }

    @Test("one fetch serves an hour of sending: renewed 5 minutes before it expires, not sooner")
    func cachedUntilRenewal() async throws {
        let endpoint = Endpoint()
        let clock = ManualClock()
        let tokens = Self.tokens(endpoint, clock: clock)
        #expect(try await tokens.current() == "token-1")
        clock.advance(by: .seconds(3599 - 301))
        #expect(try await tokens.current() == "token-1")
        #expect(endpoint.fetches == 1)
        clock.advance(by: .seconds(2))
        #expect(try await tokens.current() == "token-2", "within 5 minutes of expiry it is renewed")
        #expect(endpoint.fetches == 2)
        // A day of sending, a request a minute: one fetch per 55 minutes.
        for _ in 0..<(24 * 60) {
            clock.advance(by: .seconds(60))
            _ = try await tokens.current()
        }
        #expect(endpoint.fetches == 2 + 26, "24 h at one renewal per ~55 min")
    }

    @Test("a token that lives less than twice the renewal margin is renewed half-way, not on every call")
    func shortLivedTokens() async throws {
        let endpoint = Endpoint(lifetime: .seconds(60))
        let clock = ManualClock()
        let tokens = Self.tokens(endpoint, clock: clock)
        for _ in 0..<29 {
            _ = try await tokens.current()
            clock.advance(by: .seconds(1))
        }
        #expect(endpoint.fetches == 1)
        clock.advance(by: .seconds(1))
        _ = try await tokens.current()
        #expect(endpoint.fetches == 2)
    }

    @Test("a thousand concurrent callers share one fetch")
    func oneFetchUnderConcurrency() async throws {
        let endpoint = Endpoint()
        let tokens = Self.tokens(endpoint, clock: ManualClock())
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<1000 { group.addTask { try await tokens.current() } }
            var values = Set<String>()
            for try await value in group { values.insert(value) }
            return values
        }
        #expect(values == ["token-1"])
        #expect(endpoint.fetches == 1)
    }

    @Test("a token FCM refused is dropped: the next call fetches a new one; refusing an old token changes nothing")
    func rejectedToken() async throws {
        let endpoint = Endpoint()
        let tokens = Self.tokens(endpoint, clock: ManualClock())
        #expect(try await tokens.current() == "token-1")
        await tokens.rejected("token-1")
        #expect(try await tokens.current() == "token-2")
        await tokens.rejected("token-1")
        #expect(try await tokens.current() == "token-2")
        #expect(endpoint.fetches == 2)
    }

    @Test("a failed renewal keeps the valid token; with none valid the error names the endpoint's answer, not the key")
    func failedFetch() async throws {
        let endpoint = Endpoint()
        let clock = ManualClock()
        let tokens = Self.tokens(endpoint, clock: clock)
        #expect(try await tokens.current() == "token-1")
        endpoint.fail(true)
        clock.advance(by: .seconds(3400))
        #expect(try await tokens.current() == "token-1", "renewal failed; the old token has 199 s left")
        clock.advance(by: .seconds(200))
        let error = await #expect(throws: FCMAuthError.self) { try await tokens.current() }
        #expect(error?.message.contains("invalid_grant") == true)
        #expect(error?.message.contains("PRIVATE KEY") == false)
        endpoint.fail(false)
        // Two failures in a row: the next fetch waits 2 s.
        clock.advance(by: .seconds(2))
        #expect(try await tokens.current() == "token-4", "the next call after the backoff tries again")
    }

    @Test("a token endpoint that fails fast is asked once per backoff step, 1 s doubling to 60 s; callers meanwhile get its error at once")
    func backoffAfterFailures() async throws {
        let endpoint = Endpoint()
        endpoint.fail(true)
        let clock = ManualClock()
        let tokens = Self.tokens(endpoint, clock: clock)
        var fetchedAt: [Duration] = []
        var elapsed = Duration.zero
        // Two minutes of a busy sender: a call every 100 ms.
        while elapsed < .seconds(120) {
            let before = endpoint.fetches
            let error = await #expect(throws: FCMAuthError.self) { try await tokens.current() }
            #expect(error?.message.contains("invalid_grant") == true)
            if endpoint.fetches > before { fetchedAt.append(elapsed) }
            clock.advance(by: .milliseconds(100))
            elapsed += .milliseconds(100)
        }
        #expect(fetchedAt == [.zero, .seconds(1), .seconds(3), .seconds(7), .seconds(15), .seconds(31), .seconds(63)], "\(fetchedAt)")
        // Success ends the backoff: after the next fetch, a failure waits 1 s again.
        endpoint.fail(false)
        clock.advance(by: .seconds(60))
        #expect(try await tokens.current() == "token-8")
        await tokens.rejected("token-8")
        endpoint.fail(true)
        await #expect(throws: FCMAuthError.self) { try await tokens.current() }
        #expect(endpoint.fetches == 9)
        clock.advance(by: .milliseconds(999))
        await #expect(throws: FCMAuthError.self) { try await tokens.current() }
        #expect(endpoint.fetches == 9, "within the first step")
        clock.advance(by: .milliseconds(1))
        await #expect(throws: FCMAuthError.self) { try await tokens.current() }
        #expect(endpoint.fetches == 10)
    }

    @Test("the backoff is jittered between half and all of its step, so that workers that failed together do not ask together")
    func backoffJitter() async throws {
        let endpoint = Endpoint()
        endpoint.fail(true)
        let clock = ManualClock()
        let tokens = Self.tokens(endpoint, clock: clock, random: { 0 })
        await #expect(throws: FCMAuthError.self) { try await tokens.current() }
        await #expect(throws: FCMAuthError.self) { try await tokens.current() }
        #expect(endpoint.fetches == 1)
        clock.advance(by: .milliseconds(500))
        let error = await #expect(throws: FCMAuthError.self) { try await tokens.current() }
        #expect(endpoint.fetches == 2, "half the 1 s step")
        #expect(error?.message.contains("PRIVATE KEY") == false)
    }

    static func data(_ base64URL: String) throws -> Data {
        var text = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return try #require(Data(base64Encoded: text))
    }

    static func decode(_ base64URL: String) throws -> String {
        String(decoding: try data(base64URL), as: UTF8.self)
    }
}
