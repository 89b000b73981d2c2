import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL

/// Sends notifications to one APNs endpoint with one signing key: a pool of HTTP/2 connections, the
/// provider token shared by all of them, and the retry policy.
///
/// ```swift
/// let key = try APNsSigningKey(pemFile: "AuthKey_KEY1234567.p8", keyID: "KEY1234567", teamID: "TEAM123456")
/// let client = try APNsClient(configuration: .init(endpoint: .production), key: key)
/// let outcome = await client.send(try .background(["edition": "e1"]), to: token, topic: "com.example.news")
/// await client.shutdown()
/// ```
///
/// Every call ends in an ``APNsOutcome``: it never throws, and it never returns before the
/// notification's fate is known or known to be unknown. Many tasks may send at once; beyond the streams
/// the server allows they wait their turn.
public final class APNsClient: Sendable {
    public struct Configuration: Sendable {
        public var endpoint: APNsEndpoint
        /// HTTP/2 connections to open (on demand) to the endpoint.
        public var connections: Int = 2
        /// Streams per connection before the server's first SETTINGS (APNs allows 1 until it has seen a
        /// valid provider token).
        public var initialStreamLimit: Int = 1
        /// The most streams used on one connection, even if the server allows more.
        public var maximumStreamsPerConnection: Int = 1000
        /// From a request's write to its answer; then its fate is unknown and its stream is cancelled.
        public var requestTimeout: Duration = .seconds(10)
        public var connectTimeout: Duration = .seconds(10)
        /// How long a request may wait for a connection and a free stream before it fails as not sent.
        public var maximumWait: Duration = .seconds(60)
        /// An idle connection is checked with a PING this often; no PING ACK within ``pingTimeout`` closes it.
        public var pingInterval: Duration = .seconds(60)
        public var pingTimeout: Duration = .seconds(10)
        public var reconnectInitialBackoff: Duration = .milliseconds(100)
        public var reconnectMaximumBackoff: Duration = .seconds(30)
        /// How often one request may come back unprocessed (GOAWAY, refused stream) before it fails.
        public var maximumResends: Int = 10
        public var retryPolicy = APNsRetryPolicy()
        /// TLS settings, e.g. the trust roots of a test server. ALPN `h2` and TLS 1.2 or newer are always set.
        public var tls: TLSConfiguration?

        public init(endpoint: APNsEndpoint) {
            self.endpoint = endpoint
        }
    }

    public let configuration: Configuration
    private let tokens: any APNsProviderTokenSource
    private let pool: APNsConnectionPool
    private let metrics: APNsMetrics
    private let authority: String
    private let scheme: String

    /// - Parameters:
    ///   - tokens: where provider tokens come from; see ``APNsProviderTokens``.
    ///   - eventLoopGroup: where connections run; the shared NIO group by default.
    public init(
        configuration: Configuration,
        tokens: any APNsProviderTokenSource,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.apns")
    ) throws {
        self.configuration = configuration
        self.tokens = tokens
        self.metrics = APNsMetrics()
        self.authority = configuration.endpoint.authority
        self.scheme = configuration.endpoint.usesTLS ? "https" : "http"
        self.pool = try APNsConnectionPool(
            configuration: .init(
                endpoint: configuration.endpoint,
                connections: max(1, configuration.connections),
                initialStreamLimit: max(1, configuration.initialStreamLimit),
                streamCap: max(1, configuration.maximumStreamsPerConnection),
                connectTimeout: TimeAmount(configuration.connectTimeout),
                maximumWait: TimeAmount(configuration.maximumWait),
                maximumResends: configuration.maximumResends,
                reconnectInitialBackoff: TimeAmount(configuration.reconnectInitialBackoff),
                reconnectMaximumBackoff: TimeAmount(configuration.reconnectMaximumBackoff),
                timing: .init(
                    requestTimeout: TimeAmount(configuration.requestTimeout),
                    pingInterval: TimeAmount(configuration.pingInterval),
                    pingTimeout: TimeAmount(configuration.pingTimeout)
                )
            ),
            tls: configuration.tls,
            group: eventLoopGroup,
            metrics: metrics,
            logger: logger
        )
    }

    /// A client whose provider tokens are made from `key` on the system clock.
    public convenience init(
        configuration: Configuration,
        key: APNsSigningKey,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.apns")
    ) throws {
        let metrics = APNsMetrics()
        let keyID = key.keyID
        let tokens = APNsProviderTokens(key: key, clock: ContinuousClock(), onRefresh: { metrics.tokenRefreshed(keyID: keyID) })
        try self.init(configuration: configuration, tokens: tokens, eventLoopGroup: eventLoopGroup, logger: logger)
    }

    /// Sends `notification` to the device with `token` (hex) for the app `topic` (its bundle id).
    ///
    /// Retries 429 `TooManyRequests`, 500 and 503 as ``Configuration/retryPolicy`` allows, and once at
    /// once after `ExpiredProviderToken` with a fresh provider token. Requests the server did not process
    /// are sent again on another connection without counting as attempts.
    public func send(_ notification: APNsNotification, to token: String, topic: String) async -> APNsOutcome {
        let start = ContinuousClock.now
        var attempt = 1
        var refreshedAfterExpiry = false
        let body = ByteBuffer(bytes: notification.payload)
        while true {
            let providerToken: String
            do {
                providerToken = try tokens.current()
            } catch {
                let outcome = APNsOutcome.notSent(APNsTransportError(.connectFailed, "cannot sign a provider token: \(error)"))
                metrics.record(outcome, nanoseconds: 0)
                return outcome
            }
            let result = await execute(headers: headers(notification, token: token, topic: topic, providerToken: providerToken), body: body)
            let outcome = Self.outcome(of: result)
            guard case .rejected(let rejection) = outcome else {
                metrics.record(outcome, nanoseconds: (ContinuousClock.now - start).nanoseconds)
                return outcome
            }
            if rejection.reason == .expiredProviderToken && !refreshedAfterExpiry {
                refreshedAfterExpiry = true
                tokens.rejected(providerToken)
                if (try? tokens.current()) != providerToken {
                    attempt += 1
                    metrics.retried(rejection.reason)
                    continue
                }
            }
            let decision = configuration.retryPolicy.decision(
                afterAttempt: attempt,
                status: rejection.status,
                reason: rejection.reason,
                elapsed: ContinuousClock.now - start,
                random: Double.random(in: 0..<1)
            )
            guard case .retry(let delay) = decision else {
                metrics.record(outcome, nanoseconds: (ContinuousClock.now - start).nanoseconds)
                return outcome
            }
            metrics.retried(rejection.reason)
            do {
                try await Task.sleep(for: delay)
            } catch {
                metrics.record(outcome, nanoseconds: (ContinuousClock.now - start).nanoseconds)
                return outcome
            }
            attempt += 1
        }
    }

    /// Lets the requests in flight finish, fails the waiting ones as not sent, and closes the connections.
    public func shutdown() async {
        await pool.shutdown()
    }

    /// Open connections, requests on the wire and requests waiting for a stream.
    public var load: (connections: Int, inFlight: Int, waiting: Int) { pool.snapshot }

    // MARK: The wire

    private func execute(headers: HPACKHeaders, body: ByteBuffer) async -> APNsWireResult {
        let id = pool.makeRequestID()
        return await withUnsafeContinuation { continuation in
            pool.submit(
                APNsWireRequest(id: id, headers: headers, body: body, enqueuedAt: .now()) { result in
                    continuation.resume(returning: result)
                }
            )
        }
    }

    private func headers(_ notification: APNsNotification, token: String, topic: String, providerToken: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(11)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: scheme)
        // The path and the apns-id differ per request: keeping them out of the HPACK table leaves room
        // for the headers that repeat (authorization, topic).
        headers.add(name: ":path", value: "/3/device/" + token, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        headers.add(name: "authorization", value: "bearer " + providerToken)
        headers.add(name: "apns-topic", value: topic)
        for (name, value) in notification.headers {
            headers.add(name: name, value: value, indexing: name == "apns-id" ? .nonIndexable : .indexable)
        }
        return headers
    }

    private static func outcome(of result: APNsWireResult) -> APNsOutcome {
        switch result {
        case .response(let status, let apnsID, let body):
            if status == 200 { return .accepted(apnsID: apnsID ?? "") }
            let answer = body.flatMap { try? JSONDecoder().decode(ErrorBody.self, from: Data($0.readableBytesView)) }
            return .rejected(
                APNsRejection(
                    status: status,
                    reason: answer.map { APNsReason(rawValue: $0.reason) } ?? .unknown("status \(status) without a reason"),
                    timestamp: answer?.timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                    apnsID: apnsID
                )
            )
        case .fateUnknown(let error):
            return .fateUnknown(error)
        case .notSent(let error):
            return .notSent(error)
        case .resend:
            // The pool resends these itself; one that reaches here was never sent.
            return .notSent(APNsTransportError(.connectionLost, "the request was not processed"))
        }
    }

    private struct ErrorBody: Decodable {
        var reason: String
        var timestamp: Int64?
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
