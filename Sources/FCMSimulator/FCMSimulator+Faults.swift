import Foundation
import PushSimulator

extension FCMSimulator {
    /// What the simulator does besides answering as a healthy FCM would. Changeable while it runs
    /// (``FCMSimulator/updateFaults(_:)``, `POST /control/faults`); stream settings apply to new connections.
    public struct Faults: Sendable {
        /// Outcomes chosen per registration token by prefix (first match wins), for messages that passed validation.
        public var outcomesByTokenPrefix: [(prefix: String, outcome: Outcome)] = []
        /// Answers that are not FCM's, per registration token by prefix (first match wins, after
        /// ``outcomesByTokenPrefix``), for messages that passed validation: what a proxy or a wrong endpoint in FCM's
        /// place sends (an HTML 404, an empty 404, a 200 without a message name). Counted as rejected under
        /// `foreign STATUS`.
        public var foreignAnswersByTokenPrefix: [(prefix: String, answer: SimulatorForeignAnswer)] = []
        /// Answer the next `count` authenticated send requests with `outcome`, before validation.
        public var failNext: (outcome: Outcome, count: Int)? = nil
        /// Random server failures: each a probability (0...1) of answering that outcome, before validation.
        /// Deterministic given ``seed``.
        public var failureRates: [(outcome: Outcome, probability: Double)] = []
        /// Added before every answer (scheduled on the event loop, never blocking it).
        public var latency: Duration = .zero
        /// Messages per sliding minute per project; over it FCM answers 429 QUOTA_EXCEEDED with `Retry-After`.
        /// Every authenticated send request counts, rejected ones included, as at FCM. nil: no quota.
        public var quotaPerMinute: Int? = nil
        /// HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS (FCM is observed at about 100).
        public var maxConcurrentStreams: Int = 100
        /// What a client that opens more streams than that gets.
        public var streamLimitAction: StreamLimitAction = .goAway
        public var seed: UInt64 = 1

        public init() {}
    }

    /// What happens to a stream opened beyond SETTINGS_MAX_CONCURRENT_STREAMS.
    public enum StreamLimitAction: String, Sendable, Codable, CaseIterable {
        /// GOAWAY (last stream id = the last stream within the limit, error REFUSED_STREAM): the streams within the
        /// limit are answered, the rest must be sent again on a new connection; then the connection closes. What
        /// FCM's front ends are observed to do.
        case goAway = "goaway"
        /// RST_STREAM REFUSED_STREAM for the extra stream only (RFC 9113 §5.1.2; nginx and NIO do this).
        case refuseStream = "refuse"
    }

    /// An error the simulator answers instead of accepting.
    public struct Outcome: Sendable, Hashable {
        public var code: FCMSimulator.ErrorCode
        /// `Retry-After` seconds (for 429 and 503); nil sends none.
        public var retryAfter: Int?
        /// The error message; nil uses the code's default (``invalidToken`` uses FCM's token message).
        public var message: String?

        public init(code: FCMSimulator.ErrorCode, retryAfter: Int? = nil, message: String? = nil) {
            self.code = code
            self.retryAfter = retryAfter
            self.message = message
        }

        public static let unregistered = Outcome(code: .unregistered)
        public static let senderIDMismatch = Outcome(code: .senderIDMismatch)
        /// INVALID_ARGUMENT with "The registration token is not a valid FCM registration token".
        public static let invalidToken = Outcome(code: .invalidArgument, message: FCMMessageValidator.invalidTokenMessage)
        public static let unavailable = Outcome(code: .unavailable)
        public static let `internal` = Outcome(code: .internal)
        public static let thirdPartyAuthError = Outcome(code: .thirdPartyAuthError)
        public static func quotaExceeded(retryAfter: Int?) -> Outcome { Outcome(code: .quotaExceeded, retryAfter: retryAfter) }

        /// `UNREGISTERED`, `INVALID_TOKEN`, `QUOTA_EXCEEDED:30` (Retry-After 30 s), `UNAVAILABLE:5`, …; nil if not one.
        public init?(parsing text: some StringProtocol) {
            let parts = text.split(separator: ":", maxSplits: 1)
            guard let name = parts.first else { return nil }
            var retryAfter: Int?
            if parts.count == 2 {
                guard let seconds = Int(parts[1]), seconds >= 0 else { return nil }
                retryAfter = seconds
            }
            if name.uppercased() == "INVALID_TOKEN" {
                self = .invalidToken
            } else if let code = FCMSimulator.ErrorCode(rawValue: name.uppercased()) {
                self.init(code: code)
            } else {
                return nil
            }
            self.retryAfter = retryAfter
        }

        /// The text ``init(parsing:)`` reads.
        public var text: String {
            let name = self == .invalidToken ? "INVALID_TOKEN" : code.rawValue
            return retryAfter.map { "\(name):\($0)" } ?? name
        }

        var response: FCMSimulatorResponse { .fcmError(code, message: message, retryAfter: retryAfter) }
    }

    /// One send the simulator answered for a target: when, and accepted (with the message id and the request
    /// body) or the error code.
    public struct LedgerEntry: Sendable, Codable, Equatable {
        public var at: Date
        /// `accepted`, or the error code (`UNREGISTERED`, `INVALID_ARGUMENT`, …).
        public var outcome: String
        /// The `name` answered for an accepted message.
        public var name: String?
        /// The request body of an accepted message, as sent.
        public var body: String?

        public init(at: Date, outcome: String, name: String? = nil, body: String? = nil) {
            self.at = at
            self.outcome = outcome
            self.name = name
            self.body = body
        }
    }

    /// What the simulator saw since it started (or since ``reset()``).
    public struct Stats: Sendable, Codable, Equatable {
        /// Send requests (anything to `…/messages:send`).
        public var requests: Int
        public var accepted: Int
        /// Messages that passed with `validate_only`: answered 200, delivered to nobody.
        public var validatedOnly: Int
        /// Rejections by FCM `errorCode`, or by Google status where FCM gives none (`UNAUTHENTICATED`,
        /// `PERMISSION_DENIED`, `NOT_FOUND`).
        public var rejected: [String: Int]
        /// Access tokens issued, by service account (`client_email`).
        public var tokenFetches: [String: Int]
        /// Token requests refused, by OAuth2 error (`invalid_grant`, …).
        public var tokenRejections: [String: Int]
        public var http2Connections: Int
        public var http1Connections: Int
        public var goAwaysSent: Int
        /// Streams opened beyond SETTINGS_MAX_CONCURRENT_STREAMS.
        public var streamLimitViolations: Int
        /// The most streams ever open at once on one connection.
        public var peakConcurrentStreams: Int
        /// Accepts per whole second since start (index 0 = first second).
        public var acceptsPerSecond: [Int]
        public var startedAt: Date
    }
}
