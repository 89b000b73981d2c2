import AsyncHTTPClient
import Crypto
import FCMSimulator
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import _CryptoExtras

/// A wall clock the test moves by hand.
final class TestClock: Sendable {
    private let time: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        time = Mutex(start)
    }

    func now() -> Date { time.withLock { $0 } }
    func advance(seconds: TimeInterval) { time.withLock { $0 += seconds } }
}

/// A running simulator with one trusted account, a clock and an HTTP/1.1 client, for one test.
struct SimulatorFixture: Sendable {
    static let projectID = "paperboy-test"

    let simulator: FCMSimulator
    let account: FCMSimulator.ServiceAccount
    let clock: TestClock
    let client: HTTPClient

    /// Starts a simulator, runs `body`, and always shuts both down.
    static func with(
        faults: FCMSimulator.Faults = .init(),
        tokenLifetime: Duration = .seconds(3600),
        iosTokenPrefixes: [String] = [],
        _ body: (SimulatorFixture) async throws -> Void
    ) async throws {
        let clock = TestClock()
        var configuration = FCMSimulator.Configuration(faults: faults)
        configuration.eventLoopThreads = 1
        configuration.now = { clock.now() }
        configuration.tokenLifetime = tokenLifetime
        configuration.iosTokenPrefixes = iosTokenPrefixes
        let simulator = try FCMSimulator(configuration: configuration)
        try await simulator.start()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let account = try simulator.makeServiceAccount(projectID: projectID)
            try await body(SimulatorFixture(simulator: simulator, account: account, clock: clock, client: client))
        } catch {
            try? await client.shutdown()
            try? await simulator.shutdown()
            throw error
        }
        try await client.shutdown()
        try await simulator.shutdown()
    }

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: String

        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:] }
        /// `error.details[0].errorCode`, nil when there is none.
        var errorCode: String? {
            ((json["error"] as? [String: Any])?["details"] as? [[String: Any]])?.first?["errorCode"] as? String
        }
        var errorStatus: String? { (json["error"] as? [String: Any])?["status"] as? String }
        var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
    }

    func post(_ path: String, contentType: String, body: String, authorization: String? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: simulator.url + path)
        request.method = .POST
        request.headers.add(name: "content-type", value: contentType)
        if let authorization { request.headers.add(name: "authorization", value: authorization) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await client.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), headers: response.headers, body: String(buffer: bytes))
    }

    func get(_ path: String) async throws -> Answer {
        let response = try await client.execute(HTTPClientRequest(url: simulator.url + path), timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), headers: response.headers, body: String(buffer: bytes))
    }

    /// Asks the token endpoint for an access token with `assertion` (default: a good one for ``account``).
    func tokenRequest(assertion: String? = nil) async throws -> Answer {
        let jwt = try assertion ?? Assertion(account: account, now: clock.now()).signed()
        return try await post(
            "/token",
            contentType: "application/x-www-form-urlencoded",
            body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(jwt)"
        )
    }

    /// A fresh access token for ``account``.
    func accessToken() async throws -> String {
        let answer = try await tokenRequest()
        guard let token = answer.json["access_token"] as? String else { throw TestFailure("no access token: \(answer.status) \(answer.body)") }
        return token
    }

    /// Sends a message body over HTTP/1.1 with a bearer token.
    func send(_ body: String, token: String, projectID: String = projectID) async throws -> Answer {
        try await post("/v1/projects/\(projectID)/messages:send", contentType: "application/json", body: body, authorization: "Bearer \(token)")
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// An OAuth2 JWT-bearer assertion as Google's client libraries make it, with every part changeable.
struct Assertion {
    var issuer: String
    var audience: String
    var scope = "https://www.googleapis.com/auth/firebase.messaging"
    var issuedAt: Date
    var expires: Date
    var keyID: String
    var key: _RSA.Signing.PrivateKey

    init(account: FCMSimulator.ServiceAccount, now: Date) throws {
        issuer = account.clientEmail
        audience = account.tokenURI
        issuedAt = now
        expires = now + 3600
        keyID = account.privateKeyID
        key = try _RSA.Signing.PrivateKey(pemRepresentation: account.privateKey)
    }

    func signed() throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": "RS256", "typ": "JWT", "kid": keyID])
        let claims = try JSONSerialization.data(withJSONObject: [
            "iss": issuer, "scope": scope, "aud": audience, "iat": Int(issuedAt.timeIntervalSince1970), "exp": Int(expires.timeIntervalSince1970),
        ])
        let input = Self.base64URL(header) + "." + Self.base64URL(claims)
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// Message bodies the tests send.
enum Body {
    static let androidToken = "dRf3kx0TQ0mVv6pPa1nQzz:APA91bHqL7x1qV0-test_token.android"
    static let iosToken = "ios-fU2bQ7sC0kWm:APA91bE2test_token"

    static func dataMessage(token: String = androidToken, extra: String = "") -> String {
        #"{"message":{"token":""# + token + #"","data":{"edition":"2026-11-24-morning","tier":"1"}"# + extra + "}}"
    }
}
