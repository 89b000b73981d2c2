import Foundation

/// FCM refused a message: the HTTP status, FCM's error code and its message.
public struct FCMRejection: Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var code: FCMErrorCode
    public var message: String
    /// The `Retry-After` the answer carried (429, 503), if any.
    public var retryAfter: Duration?
    /// Whether the answer carried Google's error body (an FCM `errorCode` or an `error.status`). False for an
    /// answer from something else in FCM's place (a proxy's HTML page, an empty 404, JSON of another shape): its
    /// ``code`` is then only what the HTTP status says (`QUOTA_EXCEEDED`, `INTERNAL` and `UNAVAILABLE` for 429, 500
    /// and 503, which HTTP says were not processed and may be sent again; `HTTP 404` and the like otherwise), and it
    /// never says anything about the token.
    public var isFCMAnswer: Bool

    public init(status: Int, code: FCMErrorCode, message: String, retryAfter: Duration? = nil, isFCMAnswer: Bool = true) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.isFCMAnswer = isFCMAnswer
    }

    /// Reads an error answer: the FCM error code of `error.details` when there is one, else Google's
    /// `error.status`; without either the answer is not FCM's (``isFCMAnswer``).
    ///
    /// - Parameter retryAfter: the `retry-after` header, in seconds (FCM sends seconds; an HTTP date reads as none).
    public init(status: Int, retryAfter: String?, body: Data) {
        let answer: GoogleErrorAnswer?
        do {
            answer = try JSONDecoder().decode(GoogleErrorAnswer.self, from: body)
        } catch {
            answer = nil
        }
        let fcmCode = answer?.error.details?.first(where: { $0.type?.hasSuffix("FcmError") == true && $0.errorCode != nil })?.errorCode
        if let text = fcmCode ?? answer?.error.status, !text.isEmpty {
            code = FCMErrorCode(text)
            isFCMAnswer = true
        } else {
            code =
                switch status {
                case 429: .quotaExceeded
                case 500: .internal
                case 503: .unavailable
                default: .other("HTTP \(status)")
                }
            isFCMAnswer = false
        }
        self.status = status
        message = answer?.error.message ?? ""
        self.retryAfter = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { Duration.seconds(max(0, $0)) }
    }

    /// What the sender does about it (``FCMErrorCode/action(message:)``).
    public var action: FCMErrorCode.Action { code.action(message: message) }

    /// What the rejection means:
    ///
    /// - ``PushVerdict/tokenDead(since:)`` (FCM gives no time): `UNREGISTERED`.
    /// - ``PushVerdict/tokenInvalid(hint:)``: `SENDER_ID_MISMATCH` (a token of another Firebase project) and the
    ///   `INVALID_ARGUMENT` that says the registration token is not valid: dead for this app, one device at a time;
    ///   every device at once means the service account is of another project than the app's devices.
    /// - ``PushVerdict/credentialsRejected``: 401 `UNAUTHENTICATED` after the one refresh of the access token, and
    ///   Google's `PERMISSION_DENIED` without an FCM code (the service account may not send for the project).
    /// - ``PushVerdict/misconfigured``: `THIRD_PARTY_AUTH_ERROR` (the app's APNs credentials at Firebase), and
    ///   Google's `NOT_FOUND` without an FCM code (no such project or method: the path we send to is wrong).
    /// - ``PushVerdict/unavailable``: FCM over quota or failing beyond the retries (429 `QUOTA_EXCEEDED`, 500
    ///   `INTERNAL`, 503 `UNAVAILABLE`): not this message's fault, and not final.
    /// - ``PushVerdict/dropped``: the rest: a message FCM refuses (`INVALID_ARGUMENT` about the message).
    /// - An answer without Google's error body: ``PushVerdict/foreignAnswer(status:)``.
    public var verdict: PushVerdict {
        guard isFCMAnswer else { return .foreignAnswer(status: status) }
        switch action {
        case .deactivateToken:
            switch code {
            case .senderIDMismatch:
                return .tokenInvalid(hint: "the app's service account is of another Firebase project than the one its devices registered with")
            case .invalidArgument:
                return .tokenInvalid(
                    hint: "the devices' tokens are not registration tokens of the app's Firebase project (another project's, or not FCM tokens)"
                )
            default:
                return .tokenDead(since: nil)
            }
        case .refreshAccessToken: return .credentialsRejected
        case .fixConfiguration: return .misconfigured
        case .retry: return .unavailable
        case .drop:
            switch code {
            case .other("PERMISSION_DENIED"): return .credentialsRejected
            case .other("NOT_FOUND"): return .misconfigured
            default: return .dropped
            }
        }
    }

    public var description: String { "\(status) \(code)" }
}

/// Google's error body: `{"error": {"code", "message", "status", "details": [{"@type", "errorCode"}]}}`.
private struct GoogleErrorAnswer: Decodable {
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

/// FCM's error codes (`error.details[].errorCode` of an answer, else its `error.status`).
public enum FCMErrorCode: Sendable, Hashable, CustomStringConvertible {
    /// 404: the app instance was unregistered (uninstalled, token expired): the token is dead.
    case unregistered
    /// 400: the message is malformed, or the token is not a valid FCM token (see ``invalidTokenMessage``).
    case invalidArgument
    /// 403: the token belongs to another Firebase project.
    case senderIDMismatch
    /// 429: the project's (or a device's) message quota is spent.
    case quotaExceeded
    /// 503: FCM is overloaded.
    case unavailable
    /// 500: FCM failed.
    case `internal`
    /// 401: the app's APNs credentials at Firebase are missing or wrong: an app configuration error.
    case thirdPartyAuthError
    /// 401 without an FCM code: the access token is missing, expired or revoked.
    case unauthenticated
    /// Any other code, as FCM spelled it.
    case other(String)

    /// The text of an `INVALID_ARGUMENT` that is about the token, not the message.
    public static let invalidTokenMessage = "The registration token is not a valid FCM registration token"

    /// Reads FCM's spelling (`UNREGISTERED`, …).
    public init(_ text: String) {
        switch text {
        case "UNREGISTERED": self = .unregistered
        case "INVALID_ARGUMENT": self = .invalidArgument
        case "SENDER_ID_MISMATCH": self = .senderIDMismatch
        case "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED": self = .quotaExceeded
        case "UNAVAILABLE": self = .unavailable
        case "INTERNAL": self = .internal
        case "THIRD_PARTY_AUTH_ERROR": self = .thirdPartyAuthError
        case "UNAUTHENTICATED": self = .unauthenticated
        default: self = .other(text)
        }
    }

    /// FCM's spelling, for logs, metrics and the ledger.
    public var description: String {
        switch self {
        case .unregistered: "UNREGISTERED"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .senderIDMismatch: "SENDER_ID_MISMATCH"
        case .quotaExceeded: "QUOTA_EXCEEDED"
        case .unavailable: "UNAVAILABLE"
        case .internal: "INTERNAL"
        case .thirdPartyAuthError: "THIRD_PARTY_AUTH_ERROR"
        case .unauthenticated: "UNAUTHENTICATED"
        case .other(let text): text
        }
    }

    /// What an answer with this code asks of the sender.
    public enum Action: Sendable, Equatable {
        /// The token will never work again: stop sending to it (unless it is registered again later).
        case deactivateToken
        /// Send again later: after `Retry-After`, else after a backoff.
        case retry
        /// Fetch a new access token and send again, once.
        case refreshAccessToken
        /// The app's configuration at Firebase is wrong: no message of this app can succeed; say so, stop.
        case fixConfiguration
        /// This message cannot succeed as it is; the token may be fine.
        case drop
    }

    /// The rules of FCM's documentation: dead tokens are UNREGISTERED, SENDER_ID_MISMATCH and the
    /// INVALID_ARGUMENT that says the token is invalid; 429, 500 and 503 are retried; 400, 401, 403 and 404 never.
    public func action(message: String) -> Action {
        switch self {
        case .unregistered, .senderIDMismatch: .deactivateToken
        case .invalidArgument: message.hasPrefix(Self.invalidTokenMessage) ? .deactivateToken : .drop
        case .quotaExceeded, .unavailable, .internal: .retry
        case .unauthenticated: .refreshAccessToken
        case .thirdPartyAuthError: .fixConfiguration
        case .other: .drop
        }
    }
}
