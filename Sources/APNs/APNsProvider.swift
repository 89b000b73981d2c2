import Foundation
import NIOCore
import NIOHPACK
import PaperboyCore
import PushTransport

/// APNs's side of ``APNsClient``: provider tokens, `POST /3/device/<token>` requests, APNs's answers and its retry
/// rules, for PushTransport's ``PushClient``.
public struct APNsProvider: PushProviderProtocol {
    /// An ``APNsClient``'s settings: `APNsClient.Configuration`. The connections' settings
    /// (``PushConnectionSettings``) read as its own fields: `configuration.connections`, `.requestTimeout`, ….
    public struct Configuration: PushClientConfiguration {
        public var endpoint: APNsEndpoint
        /// 4 connections, one stream each until APNs has seen a valid provider token, then up to 1000: several
        /// connections with a few hundred streams each cost less CPU than one with a thousand, as NIO's
        /// per-connection stream table grows with the streams open on it (see BENCHMARKS.md).
        public var connection = PushConnectionSettings(connections: 4, initialStreamLimit: 1, maximumStreamsPerConnection: 1000)
        public var retryPolicy = APNsRetryPolicy()

        public init(endpoint: APNsEndpoint) {
            self.endpoint = endpoint
        }

        public var connectionEndpoint: PushEndpoint { endpoint.transport }
    }

    public static let service = "APNs"
    public static let reasonDimension = "reason"

    private let tokens: any APNsProviderTokenSource
    private let retryPolicy: APNsRetryPolicy
    private let authority: String
    private let scheme: String

    package init(configuration: Configuration, tokens: any APNsProviderTokenSource) {
        self.tokens = tokens
        self.retryPolicy = configuration.retryPolicy
        self.authority = configuration.endpoint.authority
        self.scheme = configuration.endpoint.usesTLS ? "https" : "http"
    }

    public func credential() async throws(PushTransportError) -> String {
        do {
            return try tokens.current()
        } catch {
            throw PushTransportError(.connectFailed, "cannot sign a provider token: \(error)")
        }
    }

    public func credentialRejected(_ credential: String) async {
        tokens.rejected(credential)
    }

    public func requests(for deliveries: [APNsDelivery], credential: String) -> [PushRequest] {
        let authorization = "bearer " + credential
        var requests: [PushRequest] = []
        requests.reserveCapacity(deliveries.count)
        // A broadcast sends one notification many times: share its body and its headers instead of making them
        // per request (the headers' numbers are formatted, and their array allocated, once per notification).
        var last: (notification: APNsNotification, body: ByteBuffer, headers: [(name: String, value: String)])?
        for delivery in deliveries {
            if last?.notification != delivery.notification {
                let notification = delivery.notification
                last = (notification, ByteBuffer(bytes: notification.payload), notification.headers)
            }
            requests.append(
                PushRequest(headers: headers(delivery, notificationHeaders: last!.headers, authorization: authorization), body: last!.body)
            )
        }
        return requests
    }

    private func headers(_ delivery: APNsDelivery, notificationHeaders: [(name: String, value: String)], authorization: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(6 + notificationHeaders.count)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: scheme)
        // The path and the apns-id differ per request: keeping them out of the HPACK table leaves room
        // for the headers that repeat (authorization, topic).
        headers.add(name: ":path", value: "/3/device/" + delivery.deviceToken, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        headers.add(name: "authorization", value: authorization)
        headers.add(name: "apns-topic", value: delivery.topic)
        for (name, value) in notificationHeaders {
            headers.add(name: name, value: value, indexing: name == "apns-id" ? .nonIndexable : .indexable)
        }
        return headers
    }

    /// APNs answers 200 with an `apns-id`, and an error with a JSON body holding its `reason`. Anything else came
    /// from something in APNs's place (a proxy, a wrong endpoint): a 200 without an `apns-id` is a fate unknown, an
    /// error without APNs's body a rejection that is not APNs's (``APNsRejection/isAPNsAnswer``), which never
    /// deactivates a token.
    public func outcome(status: Int, headers: HPACKHeaders, body: ByteBuffer?) -> APNsOutcome {
        let apnsID = headers.first(name: "apns-id")
        if status == 200 {
            guard let apnsID else {
                return .fateUnknown(
                    PushTransportError(.foreignAnswer, "the endpoint answered 200 without an apns-id: not APNs's answer, APNs may not have it")
                )
            }
            return .accepted(apnsID: apnsID)
        }
        guard let answer = APNsErrorBody(body) else {
            return .rejected(
                APNsRejection(status: status, reason: .unknown("status \(status) without a reason"), apnsID: apnsID, isAPNsAnswer: false)
            )
        }
        return .rejected(
            APNsRejection(
                status: status,
                reason: APNsReason(rawValue: answer.reason),
                timestamp: answer.timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                apnsID: apnsID
            )
        )
    }

    /// `ExpiredProviderToken` once with a new provider token; 429, 500 and 503 as the retry policy says.
    public func retry(after outcome: APNsOutcome, attempt: Int, elapsed: Duration, random: Double) -> PushRetry {
        guard case .rejected(let rejection) = outcome else { return .no }
        if rejection.reason == .expiredProviderToken { return .withFreshCredential }
        switch retryPolicy.decision(afterAttempt: attempt, status: rejection.status, reason: rejection.reason, elapsed: elapsed, random: random) {
        case .retry(let delay): return .after(delay)
        case .giveUp: return .no
        }
    }
}

/// APNs's error body: `{"reason": "BadDeviceToken"}`, with `timestamp` (milliseconds) for 410.
struct APNsErrorBody: Decodable {
    var reason: String
    var timestamp: Int64?

    /// The body as APNs writes it, or nil for any other body (none, HTML, JSON of another shape).
    init?(_ body: ByteBuffer?) {
        guard let body, body.readableBytes > 0 else { return nil }
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(body.readableBytesView))
        } catch {
            return nil
        }
    }
}
