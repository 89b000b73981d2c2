import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import NIOPosix
import NIOSSL
import PushTransport
import Synchronization

/// Sends FCM HTTP v1 messages for one Firebase project: a pool of HTTP/2 connections (the machinery the APNs
/// client uses, ``PushConnectionPool``), the service account's access token shared by all of them, the retry
/// rules of FCM's documentation and the project's quota as a token bucket.
///
/// ```swift
/// let account = try FCMServiceAccount(contentsOf: "service-account.json")
/// let client = try FCMClient(configuration: .init(), account: account)
/// let outcome = await client.send(try .data(["edition": "e1"], for: .android(priority: .normal, ttl: nil, collapseKey: nil)), to: token)
/// await client.shutdown()
/// ```
///
/// FCM has no batch endpoint (it was removed in 2024): every message is one request, and throughput comes
/// from HTTP/2 streams, about 100 per connection. Every call ends in an ``FCMOutcome``: it never throws, and it
/// never returns before the message's fate is known or known to be unknown.
public final class FCMClient: Sendable {
    public struct Configuration: Sendable {
        /// `https://fcm.googleapis.com` by default; `http://host:port` for a local simulator (cleartext HTTP/2
        /// with prior knowledge).
        public var endpoint: PushEndpoint = Self.production
        /// HTTP/2 connections to open (on demand).
        public var connections: Int = 8
        /// Streams per connection before the server's first SETTINGS; FCM is observed to allow about 100.
        public var initialStreamLimit: Int = 100
        /// The most streams on one connection, even if the server allows more.
        public var maximumStreamsPerConnection: Int = 100
        /// From a request's write to its answer; then its fate is unknown and its stream is cancelled.
        public var requestTimeout: Duration = .seconds(10)
        /// A connection with requests outstanding that answers nothing this long (or four times the recent answer
        /// time, if longer) takes no new requests: see ``PushConnectionPool``.
        public var stalledAfter: Duration = .milliseconds(500)
        public var connectTimeout: Duration = .seconds(10)
        /// How long a request may wait for a connection, a free stream or an access token before it fails as not sent.
        public var maximumWait: Duration = .seconds(60)
        public var pingInterval: Duration = .seconds(60)
        public var pingTimeout: Duration = .seconds(10)
        public var reconnectInitialBackoff: Duration = .milliseconds(100)
        public var reconnectMaximumBackoff: Duration = .seconds(30)
        /// How often one request may come back unprocessed (GOAWAY, refused stream) before it fails.
        public var maximumResends: Int = 10
        public var retryPolicy = FCMRetryPolicy()
        /// The project's quota, messages a minute (FCM's default: 600,000). Every attempt counts, as at FCM.
        public var quotaPerMinute: Int = 600_000
        /// TLS settings, e.g. the trust roots of a test server. ALPN `h2` and TLS 1.2 or newer are always set.
        public var tls: TLSConfiguration?
        /// Where the client's metrics go; the process's bootstrapped `MetricsSystem` when nil.
        public var metricsFactory: (any MetricsFactory)?

        public static let production = PushEndpoint(host: "fcm.googleapis.com", port: 443, usesTLS: true)

        public init() {}
    }

    public let configuration: Configuration
    /// The Firebase project the messages are sent for.
    public let projectID: String
    private let tokens: any FCMAccessTokenSource
    private let pool: PushConnectionPool
    private let metrics: FCMMetrics
    private let logger: Logger
    private let path: String
    private let authority: String
    private let scheme: String
    private let quota: Mutex<FCMRateLimit>
    private let quotaOrigin = ContinuousClock.now

    /// - Parameters:
    ///   - projectID: the Firebase project (the service account's `project_id`).
    ///   - tokens: where access tokens come from; see ``FCMAccessTokens``.
    public convenience init(
        configuration: Configuration,
        projectID: String,
        tokens: any FCMAccessTokenSource,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.fcm")
    ) throws {
        try self.init(
            configuration: configuration,
            projectID: projectID,
            tokens: tokens,
            metrics: FCMMetrics(factory: configuration.metricsFactory),
            eventLoopGroup: eventLoopGroup,
            logger: logger
        )
    }

    /// A client whose access tokens come from `account`'s token endpoint.
    public convenience init(
        configuration: Configuration,
        account: FCMServiceAccount,
        httpClient: HTTPClient = .shared,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.fcm")
    ) throws {
        let metrics = FCMMetrics(factory: configuration.metricsFactory)
        let tokens = FCMAccessTokens(account: account, httpClient: httpClient, onFetch: { metrics.tokenFetched(succeeded: $0) })
        try self.init(
            configuration: configuration,
            projectID: account.projectID,
            tokens: tokens,
            metrics: metrics,
            eventLoopGroup: eventLoopGroup,
            logger: logger
        )
    }

    private init(
        configuration: Configuration,
        projectID: String,
        tokens: any FCMAccessTokenSource,
        metrics: FCMMetrics,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger
    ) throws {
        self.configuration = configuration
        self.projectID = projectID
        self.tokens = tokens
        self.metrics = metrics
        self.logger = logger
        self.path = "/v1/projects/\(projectID)/messages:send"
        self.authority = configuration.endpoint.authority
        self.scheme = configuration.endpoint.usesTLS ? "https" : "http"
        self.quota = Mutex(FCMRateLimit(perMinute: configuration.quotaPerMinute))
        self.pool = try PushConnectionPool(
            configuration: .init(
                service: "FCM",
                endpoint: configuration.endpoint,
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

    /// Sends `message` to the app instance with registration `token`.
    public func send(_ message: FCMMessage, to token: String) async -> FCMOutcome {
        await send([FCMDelivery(message, to: token)])[0].outcome
    }

    /// True while FCM cannot be reached or does not answer: a paced sender waits instead of queueing.
    public var isUnreachable: Bool { pool.isUnreachable }

    /// How long a connection with requests outstanding may answer nothing before it is stalled, now.
    public var silenceLimit: Duration { Duration(pool.silenceLimit) }

    /// Sends many messages at once and returns their results in the same order.
    ///
    /// Each waits for the project's quota, then goes out as one request; 429, 500 and 503 are sent again as
    /// ``Configuration/retryPolicy`` says (after `Retry-After` when FCM gives one), a 401 `UNAUTHENTICATED` once
    /// at once with a fresh access token, nothing else.
    public func send(_ deliveries: [FCMDelivery]) async -> [FCMResult] {
        let start = ContinuousClock.now
        var results = [FCMResult?](repeating: nil, count: deliveries.count)
        for (index, result) in await send(deliveries, Array(deliveries.indices), attempt: 1, refreshedToken: false, start: start) {
            results[index] = result
        }
        let final = results.map { $0! }
        for result in final { metrics.record(result.outcome, nanoseconds: result.latency.nanoseconds) }
        return final
    }

    /// Retries due within this long of each other go out as one batch.
    static let retryResolution = Duration.milliseconds(10)

    private func send(
        _ deliveries: [FCMDelivery],
        _ pending: [Int],
        attempt: Int,
        refreshedToken: Bool,
        start: ContinuousClock.Instant
    ) async -> [(Int, FCMResult)] {
        let accessToken: String
        do {
            accessToken = try await tokens.current()
        } catch {
            let outcome = FCMOutcome.notSent(PushTransportError(.connectFailed, error.message))
            return pending.map { ($0, FCMResult(outcome: outcome, latency: ContinuousClock.now - start, attempts: attempt)) }
        }
        let wait = quota.withLock { $0.reserve(pending.count, now: ContinuousClock.now - quotaOrigin) }
        if wait > .zero {
            do {
                try await Task.sleep(for: wait)
            } catch {
                let outcome = FCMOutcome.notSent(PushTransportError(.shutdown, "cancelled while waiting for the FCM quota"))
                return pending.map { ($0, FCMResult(outcome: outcome, latency: ContinuousClock.now - start, attempts: attempt)) }
            }
        }
        let answers = await execute(pending.map { deliveries[$0] }, accessToken: accessToken)
        var results: [(Int, FCMResult)] = []
        results.reserveCapacity(pending.count)
        var retries: [(position: Int, delay: Duration)] = []
        var unauthenticated: [Int] = []
        for (position, index) in pending.enumerated() {
            let (outcome, finished) = answers[position]
            results.append((index, FCMResult(outcome: outcome, latency: finished - start, attempts: attempt)))
            guard case .rejected(let rejection) = outcome else { continue }
            switch rejection.action {
            case .refreshAccessToken where !refreshedToken:
                unauthenticated.append(index)
            case .retry:
                let decision = configuration.retryPolicy.decision(
                    afterAttempt: attempt,
                    rejection: rejection,
                    elapsed: finished - start,
                    random: Double.random(in: 0..<1)
                )
                if case .retry(let after) = decision {
                    retries.append((index, after))
                    metrics.retried(rejection.code)
                }
            default:
                break
            }
        }
        let refreshed = refreshedToken || !unauthenticated.isEmpty
        if !unauthenticated.isEmpty {
            await tokens.rejected(accessToken)
            retries.append(contentsOf: unauthenticated.map { ($0, Duration.zero) })
            for _ in unauthenticated { metrics.retried(.unauthenticated) }
        }
        guard !retries.isEmpty else { return results }
        let retried = await PushRetryWave.send(retries, resolution: Self.retryResolution) { positions in
            await self.send(deliveries, positions, attempt: attempt + 1, refreshedToken: refreshed, start: start)
        }
        return results + retried
    }

    /// Lets the requests in flight finish, fails the waiting ones as not sent, and closes the connections.
    public func shutdown() async {
        await pool.shutdown()
    }

    // MARK: The wire

    private func execute(_ deliveries: [FCMDelivery], accessToken: String) async -> [(FCMOutcome, ContinuousClock.Instant)] {
        let headers = requestHeaders(accessToken: accessToken)
        return await withUnsafeContinuation { continuation in
            let collector = PushBatchCollector<FCMOutcome>(count: deliveries.count, continuation: continuation)
            var requests: [PushWireRequest] = []
            requests.reserveCapacity(deliveries.count)
            let now = NIODeadline.now()
            let firstID = pool.makeRequestIDs(count: deliveries.count)
            for (position, delivery) in deliveries.enumerated() {
                requests.append(
                    PushWireRequest(
                        id: firstID + UInt64(position),
                        headers: headers,
                        body: ByteBuffer(bytes: delivery.message.body(token: delivery.token)),
                        enqueuedAt: now
                    ) { result in
                        collector.finish(position, Self.outcome(of: result))
                    }
                )
            }
            pool.submit(contentsOf: requests)
        }
    }

    /// Every request of a batch has the same headers: one path per project, the body carries the token.
    private func requestHeaders(accessToken: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(6)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: scheme)
        headers.add(name: ":path", value: path)
        headers.add(name: ":authority", value: authority)
        headers.add(name: "authorization", value: "Bearer " + accessToken)
        headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        return headers
    }

    static func outcome(of result: PushWireResult) -> FCMOutcome {
        switch result {
        case .response(let status, let headers, let body):
            let data = body.map { Data(buffer: $0) } ?? Data()
            if status == 200 {
                let name = (try? JSONDecoder().decode(Accepted.self, from: data))?.name ?? ""
                return .accepted(name: name)
            }
            return .rejected(rejection(status: status, retryAfter: headers.first(name: "retry-after"), body: data))
        case .fateUnknown(let error):
            return .fateUnknown(error)
        case .notSent(let error):
            return .notSent(error)
        case .resend:
            // The pool resends these itself; one that reaches here was never sent.
            return .notSent(PushTransportError(.connectionLost, "the request was not processed"))
        }
    }

    /// Reads FCM's error answer: the FCM error code of `error.details` when there is one, else `error.status`,
    /// else what the HTTP status means.
    static func rejection(status: Int, retryAfter: String?, body: Data) -> FCMRejection {
        let answer = try? JSONDecoder().decode(ErrorAnswer.self, from: body)
        let fcmCode = answer?.error.details?.first(where: { $0.type?.hasSuffix("FcmError") == true && $0.errorCode != nil })?.errorCode
        let code: FCMErrorCode
        if let text = fcmCode ?? answer?.error.status {
            code = FCMErrorCode(text)
        } else {
            switch status {
            case 400: code = .invalidArgument
            case 401: code = .unauthenticated
            case 403: code = .senderIDMismatch
            case 404: code = .unregistered
            case 429: code = .quotaExceeded
            case 500: code = .internal
            case 503: code = .unavailable
            default: code = .other("HTTP \(status)")
            }
        }
        // Retry-After in seconds; an HTTP date is read as no value (FCM sends seconds).
        let delay = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { Duration.seconds(max(0, $0)) }
        return FCMRejection(status: status, code: code, message: answer?.error.message ?? "", retryAfter: delay)
    }

    private struct Accepted: Decodable {
        var name: String
    }

    private struct ErrorAnswer: Decodable {
        struct Body: Decodable {
            var status: String?
            var message: String?
            var details: [Detail]?
        }

        struct Detail: Decodable {
            var type: String?
            var errorCode: String?

            enum CodingKeys: String, CodingKey {
                case type = "@type"
                case errorCode
            }
        }

        var error: Body
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

/// What became of one delivery, with how long it took and how many attempts.
public struct FCMResult: Sendable, Equatable {
    public var outcome: FCMOutcome
    /// From the call to the final answer, retries, quota waits and waiting for a stream included.
    public var latency: Duration
    /// Sends of it that FCM answered or may have seen; resends of unprocessed requests do not count.
    public var attempts: Int
}
