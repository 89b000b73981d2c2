/// The push service a device is registered with.
public enum PushProvider: String, Codable, CaseIterable, Sendable {
    /// Apple Push Notification service: iOS devices, hex tokens.
    case apns
    /// Firebase Cloud Messaging HTTP v1: Android devices, and iOS devices whose app registers through Firebase.
    case fcm

    /// The provider's name in messages: "APNs", "FCM".
    public var displayName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        }
    }
}

/// The operating system of a device, which decides the shape of its push (an iOS device through FCM still
/// needs the APNs headers for a background push).
public enum DevicePlatform: String, Codable, CaseIterable, Sendable {
    case ios
    case android

    /// Whether a device of this platform can be registered with `provider`: APNs serves iOS only, FCM both.
    public func isServed(by provider: PushProvider) -> Bool {
        provider == .fcm || self == .ios
    }
}

/// A device token of either provider.
public enum PushToken: Hashable, Sendable, CustomStringConvertible {
    case apns(DeviceToken)
    case fcm(FCMToken)

    /// Parses `text` as a token of `provider`.
    ///
    /// - Throws: the provider's parse error, as a message for the `token` field.
    public init(_ text: some StringProtocol, provider: PushProvider) throws(InvalidToken) {
        switch provider {
        case .apns:
            do { self = .apns(try DeviceToken(hex: text)) } catch { throw InvalidToken(message: error.description) }
        case .fcm:
            do { self = .fcm(try FCMToken(text)) } catch { throw InvalidToken(message: error.description) }
        }
    }

    /// A token read back from storage: `devices.token` with `devices.provider`.
    public init(provider: PushProvider, bytes: [UInt8]) {
        switch provider {
        case .apns: self = .apns(DeviceToken(bytes: bytes))
        case .fcm: self = .fcm(FCMToken(bytes: bytes))
        }
    }

    /// Every token `text` can be, one per provider whose syntax it fits, for lookups that get a token
    /// without its provider (`GET /v1/devices/{token}`). A hex text of an APNs token's length is also a
    /// syntactically valid FCM token; both are looked up (a real FCM token has a `:`, so in practice one
    /// matches).
    ///
    /// - Throws: when `text` is a token of neither provider, with both reasons.
    public static func candidates(_ text: some StringProtocol) throws(InvalidToken) -> [PushToken] {
        var found: [PushToken] = []
        var reasons: [String] = []
        for provider in PushProvider.allCases {
            do { found.append(try PushToken(text, provider: provider)) } catch { reasons.append(error.message) }
        }
        guard !found.isEmpty else {
            throw InvalidToken(message: "not an APNs device token (\(reasons[0])) nor an FCM registration token (\(reasons[1]))")
        }
        return found
    }

    public var provider: PushProvider {
        switch self {
        case .apns: .apns
        case .fcm: .fcm
        }
    }

    /// What `devices.token` stores: the raw bytes of an APNs token (half its hex), the ASCII bytes of an
    /// FCM token.
    public var bytes: [UInt8] {
        switch self {
        case .apns(let token): token.bytes
        case .fcm(let token): token.bytes
        }
    }

    /// The token as its provider takes it: lowercase hex for APNs (`/3/device/<hex>`), the text for FCM
    /// (a message's `token`).
    public var text: String {
        switch self {
        case .apns(let token): token.hex
        case .fcm(let token): token.text
        }
    }

    public var description: String { text }

    /// The device's stable 32-bit cohort key: one hash over ``bytes`` for both providers.
    public var cohortKey: UInt32 { DeviceToken.cohortKey(of: bytes) }

    /// Why a text is not a token, worded for the `token` field.
    public struct InvalidToken: Error, Equatable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}
