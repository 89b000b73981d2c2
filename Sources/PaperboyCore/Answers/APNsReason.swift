/// Why APNs rejected a notification: the `reason` of an error response.
///
/// An open set: reasons Apple adds later decode as ``unknown(_:)`` instead of failing.
public enum APNsReason: Hashable, Sendable, CustomStringConvertible {
    case badCollapseId
    case badDeviceToken
    case badExpirationDate
    case badMessageId
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIdInToken
    case badPath
    case methodNotAllowed
    case unregistered
    case expiredToken
    case payloadTooLarge
    case tooManyProviderTokenUpdates
    case tooManyRequests
    case internalServerError
    case serviceUnavailable
    case shutdown
    /// A reason this build does not know yet.
    case unknown(String)

    private static let known: [String: APNsReason] = Dictionary(
        uniqueKeysWithValues: [
            APNsReason.badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken, .missingTopic,
            .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
            .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken, .badPath, .methodNotAllowed, .unregistered,
            .expiredToken, .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError,
            .serviceUnavailable, .shutdown,
        ].map { ($0.rawValue, $0) }
    )

    /// Decodes a reason string as APNs sends it, e.g. `BadDeviceToken`.
    public init(rawValue: String) {
        self = Self.known[rawValue] ?? .unknown(rawValue)
    }

    /// The reason string as APNs sends it.
    public var rawValue: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIdInToken: "UnrelatedKeyIdInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .unregistered: "Unregistered"
        case .expiredToken: "ExpiredToken"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let reason): reason
        }
    }

    public var description: String { rawValue }

    /// Whether sending the same notification again later may succeed: 429 TooManyRequests and the
    /// server's own failures (500, 503). Never a reason about the token, topic or payload.
    public var isRetryable: Bool {
        switch self {
        case .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown: true
        default: false
        }
    }

    /// Whether the token itself is at fault, so that nothing should be sent to it again (until the device
    /// registers again, for ``unregistered`` and ``expiredToken``).
    public var isPermanentForToken: Bool {
        switch self {
        case .badDeviceToken, .deviceTokenNotForTopic, .unregistered, .expiredToken: true
        default: false
        }
    }
}
