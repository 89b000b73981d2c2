import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import PaperboyCore
import PushTransport
import Synchronization

/// FCM's side of ``FCMClient``: access tokens, `messages:send` requests, FCM's answers, its retry rules and the
/// project's quota, for PushTransport's ``PushClient``.
public struct FCMProvider: PushProviderProtocol {
    /// An ``FCMClient``'s settings: `FCMClient.Configuration`. The connections' settings
    /// (``PushConnectionSettings``) read as its own fields: `configuration.connections`, `.requestTimeout`, ….
    public struct Configuration: PushClientConfiguration {
        /// `https://fcm.googleapis.com` by default; `http://host:port` for a local simulator (cleartext HTTP/2
        /// with prior knowledge).
        public var endpoint: PushEndpoint = Self.production
        /// 8 connections of up to 100 streams: FCM is observed to allow about 100 per connection.
        public var connection = PushConnectionSettings(connections: 8, initialStreamLimit: 100, maximumStreamsPerConnection: 100)
        public var retryPolicy = FCMRetryPolicy()
        /// The project's quota, messages a minute (FCM's default: 600,000). Every attempt counts, as at FCM.
        public var quotaPerMinute: Int = 600_000

        public static let production = PushEndpoint(host: "fcm.googleapis.com", port: 443, usesTLS: true)

        public init() {}

        public var connectionEndpoint: PushEndpoint { endpoint }
    }

    public static let service = "FCM"
    public static let reasonDimension = "code"

    /// The Firebase project the messages are sent for.
    let projectID: String
    private let tokens: any FCMAccessTokenSource
    private let retryPolicy: FCMRetryPolicy
    private let quota: FCMQuota
    private let path: String
    private let authority: String
    private let scheme: String

    package init(configuration: Configuration, projectID: String, tokens: any FCMAccessTokenSource) {
        self.projectID = projectID
        self.tokens = tokens
        self.retryPolicy = configuration.retryPolicy
        self.quota = FCMQuota(perMinute: configuration.quotaPerMinute)
        self.path = "/v1/projects/\(projectID)/messages:send"
        self.authority = configuration.endpoint.authority
        self.scheme = configuration.endpoint.usesTLS ? "https" : "http"
    }

    public func credential() async throws(PushTransportError) -> String {
        do {
            return try await tokens.current()
        } catch {
            throw PushTransportError(error.refused ? .credentialsRefused : .connectFailed, error.message)
        }
    }

    public func credentialRejected(_ credential: String) async {
        await tokens.rejected(credential)
    }

    public func admit(_ count: Int) -> Duration {
        quota.reserve(count)
    }

    /// Every request of a batch has the same headers: one path per project, the body carries the token.
    public func requests(for deliveries: [FCMDelivery], credential: String) -> [PushRequest] {
        var headers = HPACKHeaders()
        headers.reserveCapacity(6)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: scheme)
        headers.add(name: ":path", value: path)
        headers.add(name: ":authority", value: authority)
        headers.add(name: "authorization", value: "Bearer " + credential)
        headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        // The bodies go into one buffer, which the requests share as slices: a body costs no allocation of its own
        // (an array and a buffer to copy it into, before). The buffer is filled before it is sliced, so that no
        // write meets a slice and copies it.
        var bodies = ByteBuffer()
        bodies.reserveCapacity(deliveries.reduce(0) { $0 + $1.message.bodyLength(token: $1.token) })
        var ends: [Int] = []
        ends.reserveCapacity(deliveries.count)
        for delivery in deliveries {
            delivery.message.writeBody(token: delivery.token, to: &bodies)
            ends.append(bodies.writerIndex)
        }
        var requests: [PushRequest] = []
        requests.reserveCapacity(deliveries.count)
        var start = bodies.readerIndex
        for end in ends {
            requests.append(PushRequest(headers: headers, body: bodies.getSlice(at: start, length: end - start)!))
            start = end
        }
        return requests
    }

    /// FCM answers 200 with the message's `name`, and an error with Google's error body (``FCMRejection``). A 200
    /// without a `name` came from something in FCM's place (a proxy, a wrong endpoint): a fate unknown.
    public func outcome(status: Int, headers: HPACKHeaders, body: ByteBuffer?) -> FCMOutcome {
        if status == 200, let body, let name = Self.acceptedName(body) { return .accepted(name: name) }
        let data = body.map { Data(buffer: $0) } ?? Data()
        guard status == 200 else {
            return .rejected(FCMRejection(status: status, retryAfter: headers.first(name: "retry-after"), body: data))
        }
        struct Accepted: Decodable {
            var name: String
        }
        do {
            return .accepted(name: try JSONDecoder().decode(Accepted.self, from: data).name)
        } catch {
            return .fateUnknown(
                PushTransportError(.foreignAnswer, "the endpoint answered 200 without a message name: not FCM's answer, FCM may not have it")
            )
        }
    }

    /// The `name` of FCM's usual 200 answer, `{"name":"projects/P/messages/ID"}` (optionally with whitespace around
    /// it), read without a JSONDecoder: decoding every answer cost more CPU than the rest of the message's handling.
    /// Nil for any other body, which then goes through the decoder (escapes, other keys, other spacing).
    static func acceptedName(_ body: ByteBuffer) -> String? {
        body.withUnsafeReadableBytes { bytes -> String? in
            var start = bytes.startIndex
            var end = bytes.endIndex
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            let prefix: StaticString = #"{"name":""#
            let suffix: StaticString = #""}"#
            guard end - start >= prefix.utf8CodeUnitCount + suffix.utf8CodeUnitCount else { return nil }
            for offset in 0..<prefix.utf8CodeUnitCount where bytes[start + offset] != prefix.utf8Start[offset] { return nil }
            for offset in 0..<suffix.utf8CodeUnitCount where bytes[end - suffix.utf8CodeUnitCount + offset] != suffix.utf8Start[offset] {
                return nil
            }
            let value = UnsafeRawBufferPointer(rebasing: bytes[(start + prefix.utf8CodeUnitCount)..<(end - suffix.utf8CodeUnitCount)])
            // A quote, a backslash or a control character needs JSON's rules; so does anything not ASCII.
            guard value.allSatisfy({ $0 >= 0x20 && $0 < 0x80 && $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "\"") }) else { return nil }
            return String(decoding: value, as: UTF8.self)
        }
    }

    /// A 401 `UNAUTHENTICATED` once with a new access token; 429, 500 and 503 as the retry policy says.
    public func retry(after outcome: FCMOutcome, attempt: Int, elapsed: Duration, random: Double) -> PushRetry {
        guard case .rejected(let rejection) = outcome else { return .no }
        switch rejection.action {
        case .refreshAccessToken:
            return .withFreshCredential
        case .retry:
            switch retryPolicy.decision(afterAttempt: attempt, rejection: rejection, elapsed: elapsed, random: random) {
            case .retry(let delay): return .after(delay)
            case .giveUp: return .no
            }
        case .deactivateToken, .fixConfiguration, .drop:
            return .no
        }
    }
}

/// The project's quota, shared by the client's calls: ``FCMRateLimit`` on the monotonic clock.
final class FCMQuota: Sendable {
    private let limit: Mutex<FCMRateLimit>
    private let origin = ContinuousClock.now

    init(perMinute: Int) {
        limit = Mutex(FCMRateLimit(perMinute: perMinute))
    }

    /// How long `count` messages wait before they go out.
    func reserve(_ count: Int) -> Duration {
        limit.withLock { $0.reserve(count, now: ContinuousClock.now - origin) }
    }
}
