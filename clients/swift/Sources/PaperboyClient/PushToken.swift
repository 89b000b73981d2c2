import Foundation

/// The device's token as Paperboy takes it in `/v1/devices/{token}`: an APNs device token in hex (what
/// `didRegisterForRemoteNotificationsWithDeviceToken` hands over as `Data`), or an FCM registration token as
/// Firebase gives it.
public enum PushToken: Sendable, Equatable, Hashable, Codable {
    case apns(Data)
    case fcm(String)

    /// The token's text: lowercase hex for APNs (never `Data.description`, whose format changed in iOS 13),
    /// as is for FCM.
    public var text: String {
        switch self {
        case .apns(let bytes): bytes.map { String(format: "%02x", $0) }.joined()
        case .fcm(let token): token
        }
    }

    /// The token as a path segment: an FCM token's `:` escaped (Paperboy takes both forms).
    var pathSegment: String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-_")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
