import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import PushTransport
import _CryptoExtras

/// Where the client gets the OAuth 2.0 access token for a request, and tells of tokens FCM refused.
public protocol FCMAccessTokenSource: Sendable {
    /// The token to send with now; fetches one when there is none or it is about to expire.
    func current() async throws(FCMAuthError) -> String
    /// FCM answered 401 `UNAUTHENTICATED` to `token`: the next ``current()`` fetches a new one.
    func rejected(_ token: String) async
}

/// An access token as the token endpoint issued it.
public struct FCMAccessToken: Sendable, Equatable {
    public var value: String
    /// `expires_in`: how long it is valid from when it was issued (Google: 3599 s).
    public var lifetime: Duration

    public init(value: String, lifetime: Duration) {
        self.value = value
        self.lifetime = lifetime
    }
}

/// The token endpoint refused the service account or could not be reached. Never contains the key, the
/// assertion or a token.
public struct FCMAuthError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// The service account itself was refused (the token endpoint answered 400, 401 or 403, e.g. `invalid_grant`
    /// for a deleted key), or its key cannot sign: asking again with the same account cannot help. False when the
    /// endpoint could not be reached or failed (5xx, 429, a broken answer).
    public var refused: Bool

    public init(_ message: String, refused: Bool = false) {
        self.message = message
        self.refused = refused
    }

    public var description: String { message }
}

/// The access token of one service account, shared by every connection and task.
///
/// A token is fetched when the first request needs one and again ``Configuration/renewBefore`` (5 minutes)
/// before it expires (half-way through a token that lives less than twice that), so that a steady sender
/// fetches once an hour; many tasks asking at once share one
/// fetch. A token FCM refused (401, e.g. revoked) is dropped and the next request fetches a new one. When a
/// renewal fails while the old token is still valid, the old token is used meanwhile.
///
/// A failed fetch is not repeated at once: a token endpoint that fails fast would otherwise be asked again by every
/// send call, tens of times a second. The next fetch waits ``Configuration/initialBackoff`` (1 s), doubling with
/// each failure in a row up to ``Configuration/maximumBackoff`` (60 s), each wait between half and all of its step
/// (jitter, so that many workers that failed together do not ask together); callers meanwhile get the old token
/// while it is valid, else the last error at once. A successful fetch ends the backoff.
///
/// The clock (and the jitter) are injected so that tests step through hours without sleeping.
public actor FCMAccessTokens<C: Clock>: FCMAccessTokenSource where C.Duration == Duration {
    public struct Configuration: Sendable {
        /// A token this close to its expiry is renewed before use.
        public var renewBefore: Duration = .seconds(5 * 60)
        /// The wait after a failed fetch before the next; it doubles with each failure in a row.
        public var initialBackoff: Duration = .seconds(1)
        public var maximumBackoff: Duration = .seconds(60)
        public init() {}
    }

    /// Trades a signed assertion for a token: an HTTP POST to the account's token URI in production.
    public typealias Fetch = @Sendable (_ assertion: String) async throws(FCMAuthError) -> FCMAccessToken

    private struct Cached {
        var token: String
        var expiresAt: C.Instant
        /// ``Configuration/renewBefore`` before expiry, or half-way for tokens shorter-lived than twice that.
        var renewAt: C.Instant
    }

    private let assertion: FCMAssertion
    private let clock: C
    private let wallTime: @Sendable () -> Date
    private let configuration: Configuration
    private let fetch: Fetch
    private let onFetch: @Sendable (_ succeeded: Bool) -> Void
    private let random: @Sendable () -> Double
    private var cached: Cached?
    private var inFlight: Task<Cached, any Error>?
    /// After failed fetches: how many in a row, the last one's error, and when the next may start.
    private var backoff: (failures: Int, error: FCMAuthError, until: C.Instant)?

    /// How many tokens were fetched (successfully or not): for metrics and tests.
    public private(set) var fetches = 0

    public init(
        account: FCMServiceAccount,
        clock: C,
        configuration: Configuration = .init(),
        wallTime: @escaping @Sendable () -> Date = Date.init,
        fetch: @escaping Fetch,
        onFetch: @escaping @Sendable (_ succeeded: Bool) -> Void = { _ in },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.assertion = FCMAssertion(
            clientEmail: account.clientEmail,
            privateKeyID: account.privateKeyID,
            tokenURI: account.tokenURI.absoluteString,
            privateKey: account.privateKey
        )
        self.clock = clock
        self.wallTime = wallTime
        self.configuration = configuration
        self.fetch = fetch
        self.onFetch = onFetch
        self.random = random
    }

    public func current() async throws(FCMAuthError) -> String {
        let now = clock.now
        if let cached, now < cached.renewAt {
            return cached.token
        }
        if inFlight == nil, let backoff, now < backoff.until {
            if let cached, now < cached.expiresAt { return cached.token }
            let seconds = now.duration(to: backoff.until).components.seconds + 1
            throw FCMAuthError(
                "\(backoff.error.message) (the token endpoint is asked again within \(seconds) s)",
                refused: backoff.error.refused
            )
        }
        let task = inFlight ?? startFetch()
        do {
            let fresh = try await task.value
            // Kept before returning, so the next call sees it (``finish(_:)`` may run later, on a busy machine
            // after many calls that would reuse the finished fetch instead of renewing on time).
            record(task, .success(fresh))
            return fresh.token
        } catch {
            record(task, .failure(error))
            // A failed renewal: the old token serves while it is valid; the next call tries again.
            if let cached, clock.now < cached.expiresAt { return cached.token }
            throw Self.authError(error)
        }
    }

    public func rejected(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    private func startFetch() -> Task<Cached, any Error> {
        fetches += 1
        let renewBefore = configuration.renewBefore
        let task = Task { [assertion, wallTime, fetch, clock] () throws -> Cached in
            let signed: String
            do {
                signed = try assertion.signed(issuedAt: wallTime())
            } catch {
                throw FCMAuthError("cannot sign the service account's assertion: \(error)", refused: true)
            }
            let requested = clock.now
            let token = try await fetch(signed)
            // The lifetime counts from the request, not the answer: never later than the server's clock.
            return Cached(
                token: token.value,
                expiresAt: requested.advanced(by: token.lifetime),
                renewAt: requested.advanced(by: max(token.lifetime - renewBefore, token.lifetime / 2))
            )
        }
        inFlight = task
        Task { await self.finish(task) }
        return task
    }

    /// For a fetch nobody waits for any more (its callers cancelled).
    private func finish(_ task: Task<Cached, any Error>) async {
        record(task, await task.result)
    }

    /// Keeps what fetch `task` got, once: the first of its waiters (or ``finish(_:)``) to get here.
    private func record(_ task: Task<Cached, any Error>, _ result: Result<Cached, any Error>) {
        guard inFlight == task else { return }
        inFlight = nil
        switch result {
        case .success(let fresh):
            cached = fresh
            backoff = nil
            onFetch(true)
        case .failure(let error):
            let failures = (backoff?.failures ?? 0) + 1
            let wait = Duration.backoff(
                afterFailures: failures,
                initial: configuration.initialBackoff,
                maximum: configuration.maximumBackoff,
                random: random()
            )
            backoff = (failures, Self.authError(error), clock.now.advanced(by: wait))
            onFetch(false)
        }
    }

    private static func authError(_ error: any Error) -> FCMAuthError {
        (error as? FCMAuthError) ?? FCMAuthError("cannot get an FCM access token: \(error)")
    }
}

extension FCMAccessTokens where C == ContinuousClock {
    /// Tokens for `account` from its `token_uri`, over `httpClient`.
    public init(account: FCMServiceAccount, httpClient: HTTPClient = .shared, onFetch: @escaping @Sendable (_ succeeded: Bool) -> Void = { _ in }) {
        let tokenURI = account.tokenURI.absoluteString
        self.init(
            account: account,
            clock: ContinuousClock(),
            fetch: { assertion throws(FCMAuthError) in
                try await FCMTokenEndpoint.fetch(assertion: assertion, tokenURI: tokenURI, httpClient: httpClient)
            },
            onFetch: onFetch
        )
    }
}

/// The OAuth 2.0 token endpoint's protocol: a form POST of the JWT bearer grant, a JSON answer.
enum FCMTokenEndpoint {
    static let timeout = TimeAmount.seconds(15)

    static func fetch(assertion: String, tokenURI: String, httpClient: HTTPClient) async throws(FCMAuthError) -> FCMAccessToken {
        var request = HTTPClientRequest(url: tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "accept", value: "application/json")
        // The assertion is base64url and dots: nothing to escape.
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion))
        let status: UInt
        let body: ByteBuffer
        do {
            let response = try await httpClient.execute(request, timeout: timeout)
            status = response.status.code
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            throw FCMAuthError("cannot reach the token endpoint \(tokenURI): \(error)")
        }
        let data = Data(buffer: body)
        guard status == 200 else {
            let answer = try? JSONDecoder().decode(ErrorAnswer.self, from: data)
            let why = [answer?.error, answer?.error_description].compactMap { $0 }.joined(separator: ": ")
            throw FCMAuthError(
                "the token endpoint \(tokenURI) refused the service account (HTTP \(status)\(why.isEmpty ? "" : ", \(why)"))",
                refused: [400, 401, 403].contains(status)
            )
        }
        guard let answer = try? JSONDecoder().decode(TokenAnswer.self, from: data), !answer.access_token.isEmpty,
            answer.expires_in > 0
        else {
            throw FCMAuthError("the token endpoint \(tokenURI) answered 200 without an access_token and expires_in")
        }
        return FCMAccessToken(value: answer.access_token, lifetime: .seconds(answer.expires_in))
    }

    // swift-format-ignore: AlwaysUseLowerCamelCase
    private struct TokenAnswer: Decodable {
        var access_token: String
        var expires_in: Int
    }

    // swift-format-ignore: AlwaysUseLowerCamelCase
    private struct ErrorAnswer: Decodable {
        var error: String?
        var error_description: String?
    }
}
