import Foundation
import NIOCore

/// One FCM HTTP v1 message without its target: a data message for an Android app, or for an iOS app through
/// FCM (with the `apns` block a background push needs). The JSON is made once; each send adds its token.
///
/// ```swift
/// let message = try FCMMessage.data(["edition": "e1"], for: .android(priority: .normal, ttl: .seconds(3600), collapseKey: "morning"))
/// ```
public struct FCMMessage: Sendable, Equatable {
    /// How an Android device is asked to handle it.
    public enum AndroidPriority: String, Sendable {
        /// Delivered at once unless the device dozes, then at its next maintenance window.
        case normal
        /// May wake a dozing device briefly; downgraded by Android when it leads to no visible notification.
        case high
    }

    /// Who receives it, and with which delivery options.
    public enum Target: Sendable, Equatable {
        /// `android.priority`, `android.ttl` (0…28 days, whole seconds) and `android.collapse_key`.
        case android(priority: AndroidPriority, ttl: Duration?, collapseKey: String?)
        /// An iOS app through FCM: `apns-priority: 5`, `apns-push-type: background` and `aps.content-available: 1`
        /// (FCM rejects data-only messages at APNs priority 10); `apns-expiration` when `expiration` is given.
        case ios(expiration: Date?, collapseID: String?)
    }

    /// FCM's limit on a message's payload.
    public static let maximumPayloadBytes = 4096
    /// The longest `android.ttl` FCM takes: 28 days.
    public static let maximumTTL = Duration.seconds(2_419_200)

    /// `"message":{` … everything after the token, ready to be spliced: `,"data":{…},"android":{…}}}`.
    let tail: [UInt8]
    /// The `data` keys and values, as the payload's size is counted.
    public let data: [String: String]
    public let target: Target

    /// A data-only message: `data` reaches the app as string pairs.
    ///
    /// - Throws: ``FCMMessageError`` naming a reserved key (`from`, `message_type`, `google.*`, `gcm.*`), a
    ///   TTL out of range, or a payload over 4096 bytes.
    public static func data(_ data: [String: String], for target: Target) throws(FCMMessageError) -> FCMMessage {
        try make(data: data, alert: nil, for: target)
    }

    /// A message the device shows: `notification` with `title` and `body`, and `data` for the app when the
    /// reader taps it. Android gets it at high priority; iOS through FCM as an alert (`apns-priority: 10`,
    /// `apns-push-type: alert`, `mutable-content: 1` so that a notification service extension can fetch).
    public static func alert(title: String, body: String, data: [String: String], for target: Target) throws(FCMMessageError) -> FCMMessage {
        try make(data: data, alert: (title, body), for: target)
    }

    private static func make(
        data: [String: String],
        alert: (title: String, body: String)?,
        for target: Target
    ) throws(FCMMessageError)
        -> FCMMessage
    {
        for key in data.keys.sorted() {
            if key.isEmpty || key == "from" || key == "message_type" || key.hasPrefix("google.") || key.hasPrefix("gcm.") {
                throw FCMMessageError("data key '\(key)' is reserved by FCM (from, message_type, google.*, gcm.*)")
            }
        }
        let payloadBytes =
            data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } + (alert.map { $0.title.utf8.count + $0.body.utf8.count } ?? 0)
        guard payloadBytes <= maximumPayloadBytes else {
            throw FCMMessageError("the payload is \(payloadBytes) bytes; FCM takes at most \(maximumPayloadBytes)")
        }
        var message: [String: Any] = ["data": data]
        if let alert { message["notification"] = ["title": alert.title, "body": alert.body] }
        switch target {
        case .android(let priority, let ttl, let collapseKey):
            var android: [String: Any] = ["priority": alert == nil ? priority.rawValue : AndroidPriority.high.rawValue]
            if let ttl {
                guard ttl >= .zero, ttl <= maximumTTL else {
                    throw FCMMessageError("android ttl must be 0 to 2,419,200 s (28 days); got \(ttl)")
                }
                android["ttl"] = "\(ttl.components.seconds)s"
            }
            if let collapseKey { android["collapse_key"] = collapseKey }
            message["android"] = android
        case .ios(let expiration, let collapseID):
            var headers =
                alert == nil ? ["apns-priority": "5", "apns-push-type": "background"] : ["apns-priority": "10", "apns-push-type": "alert"]
            if let expiration { headers["apns-expiration"] = String(Int(expiration.timeIntervalSince1970)) }
            if let collapseID { headers["apns-collapse-id"] = collapseID }
            let aps: [String: Any] = alert == nil ? ["content-available": 1] : ["mutable-content": 1]
            message["apns"] = ["headers": headers, "payload": ["aps": aps]]
        }
        let json: Data
        do {
            json = try JSONSerialization.data(withJSONObject: message, options: [.sortedKeys, .withoutEscapingSlashes])
        } catch {
            throw FCMMessageError("cannot encode the message: \(error)")
        }
        // `{"android":…,"data":…}` becomes `,"android":…,"data":…}}` after the token.
        var tail: [UInt8] = Array(",".utf8)
        tail.append(contentsOf: json.dropFirst())
        tail.append(UInt8(ascii: "}"))
        return FCMMessage(tail: tail, data: data, target: target)
    }

    /// The request body for `token`: `{"message":{"token":"…",…}}`. Tokens are URL-safe text (checked where
    /// they are registered), so they need no escaping; one that would is escaped all the same. Public so that a
    /// benchmark can hand other senders (h2load) the very bytes the client sends.
    public func body(token: String) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(bodyLength(token: token))
        body.append(contentsOf: #"{"message":{"token":"#.utf8)
        if Self.needsNoEscaping(token) {
            body.append(UInt8(ascii: "\""))
            body.append(contentsOf: token.utf8)
            body.append(UInt8(ascii: "\""))
        } else {
            Self.appendJSONString(token, to: &body)
        }
        body.append(contentsOf: tail)
        return body
    }

    /// ``body(token:)`` written at the end of `buffer`, without an array of its own: a batch's bodies go into one
    /// buffer (``FCMProvider``).
    func writeBody(token: String, to buffer: inout ByteBuffer) {
        guard Self.needsNoEscaping(token) else {
            buffer.writeBytes(body(token: token))
            return
        }
        buffer.writeStaticString(#"{"message":{"token":""#)
        buffer.writeString(token)
        buffer.writeInteger(UInt8(ascii: "\""))
        buffer.writeBytes(tail)
    }

    /// The length of ``body(token:)`` for a token that needs no escaping; a lower bound for one that does.
    func bodyLength(token: String) -> Int {
        22 + token.utf8.count + tail.count
    }

    /// Whether `token` goes into a JSON string as it is: printable ASCII without quotes or backslashes.
    private static func needsNoEscaping(_ token: String) -> Bool {
        token.utf8.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 < 0x80 }
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped, everything else as UTF-8.
    static func appendJSONString(_ text: String, to body: inout [UInt8]) {
        body.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                body.append(UInt8(ascii: "\\"))
                body.append(byte)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                body.append(contentsOf: Array(#"\u00"#.utf8))
                body.append(hex[Int(byte >> 4)])
                body.append(hex[Int(byte & 0xF)])
            default:
                body.append(byte)
            }
        }
        body.append(UInt8(ascii: "\""))
    }
}

/// A message FCM would refuse, said before sending it.
public struct FCMMessageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
