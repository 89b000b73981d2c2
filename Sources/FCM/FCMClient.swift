import AsyncHTTPClient
import Logging
import Metrics
import NIOCore
import NIOPosix
// FCM's client is PushTransport's, specialised: importers of FCM use its results, verdicts, errors and
// settings as FCM's own.
@_exported import PushTransport

/// Sends FCM HTTP v1 messages for one Firebase project: a pool of HTTP/2 connections, the service account's access
/// token shared by all of them, the retry rules of FCM's documentation and the project's quota as a token bucket.
/// It is PushTransport's ``PushClient`` with FCM's rules (``FCMProvider``), the machinery the APNs client uses.
///
/// ```swift
/// let account = try FCMServiceAccount(contentsOf: "service-account.json")
/// let client = try FCMClient(configuration: .init(), account: account)
/// let outcome = await client.send(try .data(["edition": "e1"], for: .android(priority: .normal, ttl: nil, collapseKey: nil)), to: token)
/// await client.shutdown()
/// ```
///
/// FCM has no batch endpoint (it was removed in 2024): every message is one request, and throughput comes from
/// HTTP/2 streams, about 100 per connection. Every call ends in an ``FCMOutcome``: it never throws, and it never
/// returns before the message's fate is known or known to be unknown. Each batch waits for the project's quota,
/// then goes out; 429, 500 and 503 are sent again as ``FCMProvider/Configuration/retryPolicy`` says (after
/// `Retry-After` when FCM gives one), a 401 `UNAUTHENTICATED` once at once with a fresh access token, nothing else.
/// ``PushClient/send(_:reporting:)`` says what cancelling a call does.
public typealias FCMClient = PushClient<FCMProvider>

/// What became of one delivery, with how long it took and how many attempts.
public typealias FCMResult = PushResult<FCMOutcome>

extension PushClient where Provider == FCMProvider {
    /// - Parameters:
    ///   - projectID: the Firebase project (the service account's `project_id`).
    ///   - tokens: where access tokens come from; see ``FCMAccessTokens``.
    public convenience init(
        configuration: FCMProvider.Configuration,
        projectID: String,
        tokens: any FCMAccessTokenSource,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.fcm")
    ) throws {
        try self.init(
            configuration: configuration,
            provider: FCMProvider(configuration: configuration, projectID: projectID, tokens: tokens),
            eventLoopGroup: eventLoopGroup,
            logger: logger
        )
    }

    /// A client whose access tokens come from `account`'s token endpoint; each fetch counts in
    /// `fcm_token_fetches_total{result}` (`ok`, `failed`), about one an hour.
    public convenience init(
        configuration: FCMProvider.Configuration,
        account: FCMServiceAccount,
        httpClient: HTTPClient = .shared,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.fcm")
    ) throws {
        let factory = configuration.metricsFactory ?? MetricsSystem.factory
        let fetched = Counter(label: "fcm_token_fetches_total", dimensions: [("result", "ok")], factory: factory)
        let failed = Counter(label: "fcm_token_fetches_total", dimensions: [("result", "failed")], factory: factory)
        let tokens = FCMAccessTokens(account: account, httpClient: httpClient, onFetch: { ($0 ? fetched : failed).increment() })
        try self.init(configuration: configuration, projectID: account.projectID, tokens: tokens, eventLoopGroup: eventLoopGroup, logger: logger)
    }

    /// The Firebase project the messages are sent for.
    public var projectID: String { provider.projectID }

    /// Sends `message` to the app instance with registration `token`.
    public func send(_ message: FCMMessage, to token: String) async -> FCMOutcome {
        await send([FCMDelivery(message, to: token)])[0].outcome
    }
}

/// One message for one app instance.
public struct FCMDelivery: Sendable {
    public var message: FCMMessage
    /// The FCM registration token.
    public var token: String

    public init(_ message: FCMMessage, to token: String) {
        self.message = message
        self.token = token
    }
}
