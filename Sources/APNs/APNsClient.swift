import Foundation
import Logging
import Metrics
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import PushTransport
import Synchronization

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
/// Connections open on first use. In a `ServiceGroup` the client is a `Service`: ``run()`` shuts it down
/// on graceful shutdown, so list it before the services that send with it (the group stops services in
/// reverse order).
///
/// Every call ends in an ``APNsOutcome``: it never throws, and it never returns before the
/// notification's fate is known or known to be unknown. Many tasks may send at once; beyond the streams
/// the server allows they wait their turn.
public final class APNsClient: Sendable {
    public struct Configuration: Sendable {
        public var endpoint: APNsEndpoint
        /// HTTP/2 connections to open (on demand) to the endpoint. Several connections with a few hundred
        /// streams each cost less CPU than one with a thousand: NIO's per-connection stream table grows
        /// with the streams open on it (see BENCHMARKS.md).
        public var connections: Int = 4
        /// Streams per connection before the server's first SETTINGS (APNs allows 1 until it has seen a
        /// valid provider token).
        public var initialStreamLimit: Int = 1
        /// The most streams used on one connection, even if the server allows more.
        public var maximumStreamsPerConnection: Int = 1000
        /// From a request's write to its answer; then its fate is unknown and its stream is cancelled.
        public var requestTimeout: Duration = .seconds(10)
        /// A connection with requests outstanding that answers nothing for this long, or for four times the
        /// recent answer time if that is longer (at most ``requestTimeout``), is stalled: it takes no new
        /// requests until it answers again, and while every connection is stalled the client is
        /// ``APNsClient/isUnreachable``. An APNs that hangs keeps its connections open and takes in what is
        /// written, then processes it all at once when it is back: this bounds that burst.
        public var stalledAfter: Duration = .milliseconds(500)
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
        /// Where the client's metrics go; the process's bootstrapped `MetricsSystem` when nil.
        public var metricsFactory: (any MetricsFactory)?

        public init(endpoint: APNsEndpoint) {
            self.endpoint = endpoint
        }
    }

    public let configuration: Configuration
    private let tokens: any APNsProviderTokenSource
    private let pool: PushConnectionPool
    private let metrics: APNsMetrics
    private let authority: String
    private let scheme: String

    /// - Parameters:
    ///   - tokens: where provider tokens come from; see ``APNsProviderTokens``.
    ///   - eventLoopGroup: where connections run; the shared NIO group by default.
    public convenience init(
        configuration: Configuration,
        tokens: any APNsProviderTokenSource,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.apns")
    ) throws {
        try self.init(
            configuration: configuration,
            tokens: tokens,
            metrics: APNsMetrics(factory: configuration.metricsFactory),
            eventLoopGroup: eventLoopGroup,
            logger: logger
        )
    }

    private init(
        configuration: Configuration,
        tokens: any APNsProviderTokenSource,
        metrics: APNsMetrics,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger
    ) throws {
        self.configuration = configuration
        self.tokens = tokens
        self.metrics = metrics
        self.authority = configuration.endpoint.authority
        self.scheme = configuration.endpoint.usesTLS ? "https" : "http"
        self.pool = try PushConnectionPool(
            configuration: .init(
                service: "APNs",
                endpoint: configuration.endpoint.transport,
                connections: max(1, configuration.connections),
                initialStreamLimit: max(1, configuration.initialStreamLimit),
                streamCap: max(1, configuration.maximumStreamsPerConnection),
                connectTimeout: TimeAmount(configuration.connectTimeout),
                maximumWait: TimeAmount(configuration.maximumWait),
                maximumResends: configuration.maximumResends,
                reconnectInitialBackoff: TimeAmount(configuration.reconnectInitialBackoff),
                reconnectMaximumBackoff: TimeAmount(configuration.reconnectMaximumBackoff),
                stalledAfter: TimeAmount(configuration.stalledAfter),
                timing: .init(
                    requestTimeout: TimeAmount(configuration.requestTimeout),
                    pingInterval: TimeAmount(configuration.pingInterval),
                    pingTimeout: TimeAmount(configuration.pingTimeout)
                )
            ),
            tls: configuration.tls,
            group: eventLoopGroup,
            metrics: metrics.connections,
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
        let metrics = APNsMetrics(factory: configuration.metricsFactory)
        let keyID = key.keyID
        let tokens = APNsProviderTokens(key: key, clock: ContinuousClock(), onRefresh: { metrics.tokenRefreshed(keyID: keyID) })
        try self.init(configuration: configuration, tokens: tokens, metrics: metrics, eventLoopGroup: eventLoopGroup, logger: logger)
    }

    /// Sends `notification` to the device with `token` (hex) for the app `topic` (its bundle id).
    ///
    /// Retries 429 `TooManyRequests`, 500 and 503 as ``Configuration/retryPolicy`` allows, and once at
    /// once after `ExpiredProviderToken` with a fresh provider token. Requests the server did not process
    /// are sent again on another connection without counting as attempts.
    public func send(_ notification: APNsNotification, to token: String, topic: String) async -> APNsOutcome {
        await send([APNsDelivery(notification, to: token, topic: topic)])[0].outcome
    }

    /// True while APNs cannot be reached (connection attempts fail, no connection is ready) or does not
    /// answer (every open connection stalled: see ``Configuration/stalledAfter``). A sender that paces its
    /// requests waits for it instead of queueing them: queued requests all go out at once when APNs is back.
    public var isUnreachable: Bool { pool.isUnreachable }

    /// How long a connection with requests outstanding may answer nothing before it is stalled, now: see
    /// ``Configuration/stalledAfter``. Requests written to an APNs that hangs are processed when it is back,
    /// about this long's worth at the sender's rate; a paced sender resuming after it waits as long.
    public var silenceLimit: Duration { Duration(pool.silenceLimit) }

    /// Sends many notifications at once and returns their results in the same order.
    ///
    /// The same rules as ``send(_:to:topic:)`` apply to each; the batch enters the pool with one lock and
    /// one hop per connection, which is what makes a broadcast cheap. Each retryable rejection is sent
    /// again after its own jittered backoff, so that a batch's retries spread out; those due within 10 ms
    /// of each other go out together (``APNsRetryPolicy/waves(_:resolution:)``).
    public func send(_ deliveries: [APNsDelivery]) async -> [APNsResult] {
        let start = ContinuousClock.now
        var results = [APNsResult?](repeating: nil, count: deliveries.count)
        // A retry's result comes after the result it replaces.
        for (index, result) in await send(deliveries, Array(deliveries.indices), attempt: 1, refreshedAfterExpiry: false, start: start) {
            results[index] = result
        }
        let final = results.map { $0! }
        for result in final { metrics.record(result.outcome, nanoseconds: result.latency.nanoseconds) }
        return final
    }

    /// Retries due within this long of each other go out as one batch.
    static let retryResolution = Duration.milliseconds(10)

    /// Sends the deliveries at `pending` (their positions in `deliveries`) as attempt `attempt`, then
    /// retries each retryable rejection after its own jittered backoff.
    ///
    /// - Returns: every result by position, retries' results after the ones they replace.
    private func send(
        _ deliveries: [APNsDelivery],
        _ pending: [Int],
        attempt: Int,
        refreshedAfterExpiry: Bool,
        start: ContinuousClock.Instant
    ) async -> [(Int, APNsResult)] {
        let providerToken: String
        do {
            providerToken = try tokens.current()
        } catch {
            let outcome = APNsOutcome.notSent(APNsTransportError(.connectFailed, "cannot sign a provider token: \(error)"))
            return pending.map { ($0, APNsResult(outcome: outcome, latency: ContinuousClock.now - start, attempts: attempt)) }
        }
        let answers = await execute(pending.map { deliveries[$0] }, providerToken: providerToken)
        var results: [(Int, APNsResult)] = []
        results.reserveCapacity(pending.count)
        var retries: [(position: Int, delay: Duration)] = []
        var expired: [Int] = []
        for (position, index) in pending.enumerated() {
            let (outcome, finished) = answers[position]
            results.append((index, APNsResult(outcome: outcome, latency: finished - start, attempts: attempt)))
            guard case .rejected(let rejection) = outcome else { continue }
            if rejection.reason == .expiredProviderToken && !refreshedAfterExpiry {
                expired.append(index)
                continue
            }
            let decision = configuration.retryPolicy.decision(
                afterAttempt: attempt,
                status: rejection.status,
                reason: rejection.reason,
                elapsed: finished - start,
                random: Double.random(in: 0..<1)
            )
            if case .retry(let after) = decision {
                retries.append((index, after))
                metrics.retried(rejection.reason)
            }
        }
        let refreshed = refreshedAfterExpiry || !expired.isEmpty
        if !expired.isEmpty {
            tokens.rejected(providerToken)
            // Sent again at once, but only with a new token: a token younger than 20 minutes is not replaced.
            if (try? tokens.current()) != providerToken {
                retries.append(contentsOf: expired.map { ($0, Duration.zero) })
                for _ in expired { metrics.retried(.expiredProviderToken) }
            }
        }
        guard !retries.isEmpty else { return results }
        let retried = await PushRetryWave.send(retries, resolution: Self.retryResolution) { positions in
            await self.send(deliveries, positions, attempt: attempt + 1, refreshedAfterExpiry: refreshed, start: start)
        }
        return results + retried
    }

    /// Lets the requests in flight finish, fails the waiting ones as not sent, and closes the connections.
    ///
    /// In a `ServiceGroup`, ``run()`` does this on graceful shutdown; call it directly where there is no
    /// group, as a one-shot command does.
    public func shutdown() async {
        await pool.shutdown()
    }

    // MARK: The wire

    /// One pass over the wire: outcomes (before retries) and when each was answered.
    private func execute(_ deliveries: [APNsDelivery], providerToken: String) async -> [(APNsOutcome, ContinuousClock.Instant)] {
        let authorization = "bearer " + providerToken
        return await withUnsafeContinuation { continuation in
            let collector = PushBatchCollector<APNsOutcome>(count: deliveries.count, continuation: continuation)
            var requests: [PushWireRequest] = []
            requests.reserveCapacity(deliveries.count)
            let now = NIODeadline.now()
            let firstID = pool.makeRequestIDs(count: deliveries.count)
            // A broadcast sends one payload many times: share its bytes instead of copying them per request.
            var lastPayload: [UInt8] = []
            var lastBody = ByteBuffer()
            for (position, delivery) in deliveries.enumerated() {
                let payload = delivery.notification.payload
                if payload != lastPayload {
                    lastPayload = payload
                    lastBody = ByteBuffer(bytes: payload)
                }
                requests.append(
                    PushWireRequest(
                        id: firstID + UInt64(position),
                        headers: headers(delivery, authorization: authorization),
                        body: lastBody,
                        enqueuedAt: now
                    ) { result in
                        collector.finish(position, Self.outcome(of: result))
                    }
                )
            }
            pool.submit(contentsOf: requests)
        }
    }

    private func headers(_ delivery: APNsDelivery, authorization: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(11)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: scheme)
        // The path and the apns-id differ per request: keeping them out of the HPACK table leaves room
        // for the headers that repeat (authorization, topic).
        headers.add(name: ":path", value: "/3/device/" + delivery.deviceToken, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        headers.add(name: "authorization", value: authorization)
        headers.add(name: "apns-topic", value: delivery.topic)
        for (name, value) in delivery.notification.headers {
            headers.add(name: name, value: value, indexing: name == "apns-id" ? .nonIndexable : .indexable)
        }
        return headers
    }

    private static func outcome(of result: PushWireResult) -> APNsOutcome {
        switch result {
        case .response(let status, let headers, let body):
            let apnsID = headers.first(name: "apns-id")
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

/// What became of one delivery, with how long it took and how many attempts.
public struct APNsResult: Sendable, Equatable {
    public var outcome: APNsOutcome
    /// From the call to the final answer, retries and waiting for a stream included.
    public var latency: Duration
    /// Sends of it that APNs answered or may have seen; resends of unprocessed requests do not count.
    public var attempts: Int
}
