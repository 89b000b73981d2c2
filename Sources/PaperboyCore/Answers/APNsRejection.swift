import Foundation

/// APNs refused a notification.
public struct APNsRejection: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status: 400, 403, 404, 405, 410, 413, 429, 500 or 503.
    public var status: Int
    public var reason: APNsReason
    /// For 410: when APNs learned that the token is no longer valid. Stop sending to the token unless it
    /// was registered again after this instant.
    public var timestamp: Date?
    public var apnsID: String?
    /// Whether the answer carried APNs's own error body (JSON with a `reason`). False for an answer from something
    /// else in APNs's place (a proxy's HTML page, an empty 410 or 404): its ``reason`` is ``APNsReason/unknown(_:)``
    /// and it never says anything about the token.
    public var isAPNsAnswer: Bool

    public init(status: Int, reason: APNsReason, timestamp: Date? = nil, apnsID: String? = nil, isAPNsAnswer: Bool = true) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
        self.isAPNsAnswer = isAPNsAnswer
    }

    public var description: String { "\(status) \(reason)" }

    /// What the rejection means:
    ///
    /// - ``PushVerdict/tokenDead(since:)``: `Unregistered` and `ExpiredToken` (410, since the answer's timestamp).
    /// - ``PushVerdict/tokenInvalid(hint:)``: `BadDeviceToken` (a token APNs does not know, or one of the other
    ///   environment: a sandbox token sent to production) and `DeviceTokenNotForTopic` (APNs's word on this token for
    ///   this topic: a topic our key may not send to answers `TopicDisallowed` and a malformed one `BadTopic`, so what
    ///   remains is a token issued to another app, which is FCM's `SENDER_ID_MISMATCH`). Dead for this app, one
    ///   device at a time; every device at once means the endpoint's environment or the app's bundle id is wrong.
    /// - ``PushVerdict/credentialsRejected``: every 403 (`InvalidProviderToken`, `ExpiredProviderToken` after the one
    ///   refresh, `MissingProviderToken`, `UnrelatedKeyIdInToken`, `Forbidden`, `BadCertificate…`) and 429
    ///   `TooManyProviderTokenUpdates`: APNs refused our provider token or key, never the device's fault.
    /// - ``PushVerdict/misconfigured``: `BadTopic`, `TopicDisallowed`, `MissingTopic` (the app's bundle id, or a key
    ///   of another team), `BadPath` and `MethodNotAllowed` (our endpoint or client).
    /// - ``PushVerdict/unavailable``: APNs busy or failing beyond the retries (429 `TooManyRequests`, 500
    ///   `InternalServerError`, 503 `ServiceUnavailable` and `Shutdown`, and an unknown reason with one of those
    ///   statuses): not this message's fault, and not final.
    /// - ``PushVerdict/dropped``: the rest, about this message (`PayloadTooLarge`, `BadPriority`, …).
    /// - A reason this build does not know is judged by its status, never as a dead token; an answer without
    ///   APNs's body by ``PushVerdict/foreignAnswer(status:)``.
    public var verdict: PushVerdict {
        guard isAPNsAnswer else { return .foreignAnswer(status: status) }
        switch reason {
        case .unregistered, .expiredToken:
            return .tokenDead(since: timestamp)
        case .badDeviceToken:
            return .tokenInvalid(
                hint: "the devices' tokens are of the other APNs environment than the endpoint they were sent to "
                    + "(sandbox tokens sent to production, or the reverse), or the endpoint is not the one intended"
            )
        case .deviceTokenNotForTopic:
            return .tokenInvalid(hint: "the app's bundle id (apns-topic) is not the one its devices registered with")
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken,
            .unrelatedKeyIdInToken, .tooManyProviderTokenUpdates:
            return .credentialsRejected
        case .badTopic, .topicDisallowed, .missingTopic, .badPath, .methodNotAllowed:
            return .misconfigured
        case .badCollapseId, .badExpirationDate, .badMessageId, .badPriority, .duplicateHeaders, .idleTimeout, .invalidPushType,
            .missingDeviceToken, .payloadEmpty, .payloadTooLarge:
            return .dropped
        case .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown:
            return .unavailable
        case .unknown:
            switch status {
            case 403: return .credentialsRejected
            case 404, 405: return .misconfigured
            case 429, 500, 503: return .unavailable
            default: return .dropped
            }
        }
    }
}
