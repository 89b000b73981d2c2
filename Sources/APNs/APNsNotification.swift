import Foundation

/// A notification ready to send: the JSON payload and the APNs headers that describe it.
///
/// Build one with ``background(_:expiration:collapseID:apnsID:)`` or
/// ``alert(title:body:appKeys:expiration:collapseID:apnsID:)``; both check Apple's rules before anything is
/// sent. The client adds `authorization` and `apns-topic`.
public struct APNsNotification: Sendable, Equatable {
    public enum PushType: String, Sendable {
        case background
        case alert
    }

    /// The largest payload APNs accepts, in bytes.
    public static let maximumPayloadBytes = 4096
    /// The longest `apns-collapse-id`, in bytes.
    public static let maximumCollapseIDBytes = 64

    public let pushType: PushType
    /// 5 for background pushes (10 is an error for them), 10 for alerts.
    public let priority: Int
    /// When APNs stops trying to deliver; `nil` sends `apns-expiration: 0` (deliver now or never).
    public let expiration: Date?
    public let collapseID: String?
    public let apnsID: UUID?
    /// The JSON payload.
    public let payload: [UInt8]

    /// A background notification: `aps` is exactly `{"content-available": 1}` and `appKeys` (an object,
    /// without an `aps` key) sit beside it. Push type `background`, priority 5.
    public static func background(
        _ appKeys: some Encodable,
        expiration: Date? = nil,
        collapseID: String? = nil,
        apnsID: UUID? = nil
    ) throws(APNsNotificationError) -> APNsNotification {
        try background(appKeysJSON: encode(appKeys), expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }

    /// A background notification whose app keys are already JSON (an object), e.g. from a file or a flag.
    public static func background(
        appKeysJSON: Data,
        expiration: Date? = nil,
        collapseID: String? = nil,
        apnsID: UUID? = nil
    ) throws(APNsNotificationError) -> APNsNotification {
        try APNsNotification(
            pushType: .background,
            priority: 5,
            aps: #"{"content-available":1}"#,
            keys: appKeysJSON,
            expiration: expiration,
            collapseID: collapseID,
            apnsID: apnsID
        )
    }

    /// An alert with `mutable-content: 1`, for a Notification Service Extension to act on where background
    /// pushes do not run. Push type `alert`, priority 10.
    public static func alert(
        title: String,
        body: String,
        appKeys: some Encodable = [String: String](),
        expiration: Date? = nil,
        collapseID: String? = nil,
        apnsID: UUID? = nil
    ) throws(APNsNotificationError) -> APNsNotification {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let alertJSON = try? encoder.encode(["title": title, "body": body]) else { throw .alertNotEncodable }
        let alert = String(decoding: alertJSON, as: UTF8.self)
        return try APNsNotification(
            pushType: .alert,
            priority: 10,
            aps: #"{"alert":\#(alert),"mutable-content":1}"#,
            keys: encode(appKeys),
            expiration: expiration,
            collapseID: collapseID,
            apnsID: apnsID
        )
    }

    /// The app's keys as sorted JSON.
    private static func encode(_ appKeys: some Encodable) throws(APNsNotificationError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let keys = try? encoder.encode(appKeys) else { throw .appKeysNotAnObject }
        return keys
    }

    private init(
        pushType: PushType,
        priority: Int,
        aps: String,
        keys: Data,
        expiration: Date?,
        collapseID: String?,
        apnsID: UUID?
    ) throws(APNsNotificationError) {
        if let collapseID, collapseID.utf8.count > Self.maximumCollapseIDBytes {
            throw .collapseIDTooLong(bytes: collapseID.utf8.count)
        }
        let trimmed = Data(String(decoding: keys, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        guard let object = try? JSONSerialization.jsonObject(with: trimmed) as? [String: Any] else {
            throw .appKeysNotAnObject
        }
        let keys = trimmed
        guard object["aps"] == nil else { throw .apsInAppKeys }
        // `{"aps":…` then the app's keys without their own braces.
        var payload = Array(#"{"aps":"#.utf8) + Array(aps.utf8)
        let inner = keys.dropFirst().dropLast()
        if !object.isEmpty {
            payload.append(UInt8(ascii: ","))
            payload.append(contentsOf: inner)
        }
        payload.append(UInt8(ascii: "}"))
        guard payload.count <= Self.maximumPayloadBytes else { throw .payloadTooLarge(bytes: payload.count) }
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    /// The APNs request headers this notification needs, besides `authorization` and `apns-topic`.
    public var headers: [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [
            ("apns-push-type", pushType.rawValue),
            ("apns-priority", String(priority)),
            ("apns-expiration", String(expiration.map { max(0, Int($0.timeIntervalSince1970)) } ?? 0)),
        ]
        if let collapseID { headers.append(("apns-collapse-id", collapseID)) }
        if let apnsID { headers.append(("apns-id", apnsID.uuidString.lowercased())) }
        return headers
    }

    public static func == (lhs: APNsNotification, rhs: APNsNotification) -> Bool {
        lhs.pushType == rhs.pushType && lhs.priority == rhs.priority && lhs.expiration == rhs.expiration
            && lhs.collapseID == rhs.collapseID && lhs.apnsID == rhs.apnsID && lhs.payload == rhs.payload
    }
}

/// A notification that breaks Apple's rules, refused before anything is sent.
public enum APNsNotificationError: Error, Equatable, CustomStringConvertible {
    case payloadTooLarge(bytes: Int)
    case collapseIDTooLong(bytes: Int)
    /// The app's keys tried to set `aps`; a background push's `aps` holds only `content-available`.
    case apsInAppKeys
    case appKeysNotAnObject
    /// The alert's title and body could not be written as JSON.
    case alertNotEncodable

    public var description: String {
        switch self {
        case .payloadTooLarge(let bytes):
            "the payload is \(bytes) bytes; APNs accepts at most \(APNsNotification.maximumPayloadBytes)"
        case .collapseIDTooLong(let bytes):
            "the collapse id is \(bytes) bytes; APNs accepts at most \(APNsNotification.maximumCollapseIDBytes)"
        case .apsInAppKeys:
            "the app's keys contain \"aps\"; Paperboy writes aps itself (a background push may not carry alert, badge or sound)"
        case .appKeysNotAnObject:
            "the app's keys must be a JSON object, e.g. {\"edition\": \"2026-11-23-morning\"}"
        case .alertNotEncodable:
            "the alert's title and body cannot be written as JSON"
        }
    }
}
