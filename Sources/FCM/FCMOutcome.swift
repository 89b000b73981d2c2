import PushTransport

/// What became of one message.
public enum FCMOutcome: Sendable, Equatable {
    /// FCM accepted it; `name` is the message's resource name, `projects/P/messages/ID`.
    case accepted(name: String)
    /// FCM answered with an error, after any retries the policy allows.
    case rejected(FCMRejection)
    /// It was written to a connection that then failed, or timed out waiting for the answer: FCM may or may
    /// not have it. The client never resends these by itself, because that could wake a device twice.
    case fateUnknown(PushTransportError)
    /// It was never sent: no connection or no access token in time, or the client shut down. Safe to send again.
    case notSent(PushTransportError)

    public var isAccepted: Bool {
        if case .accepted = self { return true }
        return false
    }
}

/// FCM refused a message: the HTTP status, FCM's error code and its message.
public struct FCMRejection: Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var code: FCMErrorCode
    public var message: String
    /// The `Retry-After` the answer carried (429, 503), if any.
    public var retryAfter: Duration?

    public init(status: Int, code: FCMErrorCode, message: String, retryAfter: Duration? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// What the sender does about it (``FCMErrorCode/action(message:)``).
    public var action: FCMErrorCode.Action { code.action(message: message) }

    public var description: String { "\(status) \(code)" }
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
