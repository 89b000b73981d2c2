import Foundation
import Logging
import Metrics
import NIOCore
import NIOPosix
import NIOSSL
// APNs's client is PushTransport's, specialised: importers of APNs use its results, verdicts, errors and
// settings as APNs's own.
@_exported import PushTransport

/// Sends notifications to one APNs endpoint with one signing key: a pool of HTTP/2 connections, the provider token
/// shared by all of them, and the retry policy. It is PushTransport's ``PushClient`` with APNs's rules
/// (``APNsProvider``).
///
/// ```swift
/// let key = try APNsSigningKey(pemFile: "AuthKey_KEY1234567.p8", keyID: "KEY1234567", teamID: "TEAM123456")
/// let client = try APNsClient(configuration: .init(endpoint: .production), key: key)
/// let outcome = await client.send(try .background(["edition": "e1"]), to: token, topic: "com.example.news")
/// await client.shutdown()
/// ```
///
/// Connections open on first use. In a `ServiceGroup` the client is a `Service`: `run()` shuts it down on graceful
/// shutdown, so list it before the services that send with it (the group stops services in reverse order).
///
/// Every call ends in an ``APNsOutcome``: it never throws, and it never returns before the notification's fate is
/// known or known to be unknown. Many tasks may send at once; beyond the streams the server allows they wait their
/// turn. ``PushClient/send(_:reporting:)`` says what cancelling a call does.
public typealias APNsClient = PushClient<APNsProvider>

/// What became of one delivery, with how long it took and how many attempts.
public typealias APNsResult = PushResult<APNsOutcome>

extension PushClient where Provider == APNsProvider {
    /// - Parameters:
    ///   - tokens: where provider tokens come from; see ``APNsProviderTokens``.
    ///   - eventLoopGroup: where connections run; the shared NIO group by default.
    public convenience init(
        configuration: APNsProvider.Configuration,
        tokens: any APNsProviderTokenSource,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.apns")
    ) throws {
        try self.init(
            configuration: configuration,
            provider: APNsProvider(configuration: configuration, tokens: tokens),
            eventLoopGroup: eventLoopGroup,
            logger: logger
        )
    }

    /// A client whose provider tokens are made from `key` on the system clock; each new token counts in
    /// `apns_provider_token_refreshes_total{key_id}`.
    public convenience init(
        configuration: APNsProvider.Configuration,
        key: APNsSigningKey,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.apns")
    ) throws {
        let refreshes = Counter(
            label: "apns_provider_token_refreshes_total",
            dimensions: [("key_id", key.keyID)],
            factory: configuration.metricsFactory ?? MetricsSystem.factory
        )
        let tokens = APNsProviderTokens(key: key, clock: ContinuousClock(), onRefresh: { refreshes.increment() })
        try self.init(configuration: configuration, tokens: tokens, eventLoopGroup: eventLoopGroup, logger: logger)
    }

    /// Sends `notification` to the device with `token` (hex) for the app `topic` (its bundle id).
    ///
    /// Retries 429 `TooManyRequests`, 500 and 503 as ``APNsProvider/Configuration/retryPolicy`` allows, and once at
    /// once after `ExpiredProviderToken` with a fresh provider token. Requests the server did not process are sent
    /// again on another connection without counting as attempts.
    public func send(_ notification: APNsNotification, to token: String, topic: String) async -> APNsOutcome {
        await send([APNsDelivery(notification, to: token, topic: topic)])[0].outcome
    }
}

/// One notification for one device of one app.
public struct APNsDelivery: Sendable {
    public var notification: APNsNotification
    /// The device token, hex.
    public var deviceToken: String
    /// The app's bundle id.
    public var topic: String

    public init(_ notification: APNsNotification, to deviceToken: String, topic: String) {
        self.notification = notification
        self.deviceToken = deviceToken
        self.topic = topic
    }
}
