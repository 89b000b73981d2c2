/// The `errorCode` of FCM's `google.firebase.fcm.v1.FcmError` detail, with the HTTP status and the Google
/// `status` FCM answers it with.
extension FCMSimulator {
    public enum ErrorCode: String, Sendable, Hashable, CaseIterable, Codable {
        case unregistered = "UNREGISTERED"
        case invalidArgument = "INVALID_ARGUMENT"
        case senderIDMismatch = "SENDER_ID_MISMATCH"
        case quotaExceeded = "QUOTA_EXCEEDED"
        case unavailable = "UNAVAILABLE"
        case `internal` = "INTERNAL"
        case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"

        public var httpStatus: Int {
            switch self {
            case .unregistered: 404
            case .invalidArgument: 400
            case .senderIDMismatch: 403
            case .quotaExceeded: 429
            case .unavailable: 503
            case .internal: 500
            case .thirdPartyAuthError: 401
            }
        }

        /// The canonical Google API status of the error body (`error.status`).
        public var googleStatus: String {
            switch self {
            case .unregistered: "NOT_FOUND"
            case .invalidArgument: "INVALID_ARGUMENT"
            case .senderIDMismatch: "PERMISSION_DENIED"
            case .quotaExceeded: "RESOURCE_EXHAUSTED"
            case .unavailable: "UNAVAILABLE"
            case .internal: "INTERNAL"
            case .thirdPartyAuthError: "UNAUTHENTICATED"
            }
        }

        /// The `error.message` FCM answers when nothing more specific applies.
        public var defaultMessage: String {
            switch self {
            case .unregistered: "Requested entity was not found."
            case .invalidArgument: "Request contains an invalid argument."
            case .senderIDMismatch: "SenderId mismatch"
            case .quotaExceeded: "Quota exceeded for quota metric 'Messages per minute' of service 'fcm.googleapis.com'."
            case .unavailable: "The service is currently unavailable."
            case .internal: "Internal error encountered."
            case .thirdPartyAuthError: "Auth error from APNS or Web Push Service"
            }
        }
    }
}
