import Foundation

/// What FCM checks in a `messages:send` body before it accepts it: the fields it knows (in snake_case or
/// lowerCamelCase, as Google's JSON parser accepts both), exactly one target, string-only `data` without reserved
/// keys, `notification`, `android` (priority, `ttl` format and range, collapse key), `apns` (string headers,
/// `payload.aps`), `apns-priority: 5` for a data-only message to an iOS token, and the 4096-byte payload limit.
/// Pure: the server feeds it bodies.
///
/// Not checked (accepted as any object): `webpush`, `android.notification`, `fcm_options`.
public struct FCMMessageValidator: Sendable {
    /// FCM's limit on a message's payload.
    public static let maximumPayloadBytes = 4096
    /// The longest `android.ttl` FCM accepts: 28 days.
    public static let maximumTTLSeconds = 2_419_200.0
    /// The message FCM answers for a token it cannot parse (clients delete the token on exactly this text).
    public static let invalidTokenMessage = "The registration token is not a valid FCM registration token"

    public enum Target: Sendable, Equatable {
        case token(String)
        case topic(String)
        case condition(String)

        /// How the ledger files the target: the token itself, `topic:NAME` or `condition:EXPR`.
        public var ledgerKey: String {
            switch self {
            case .token(let token): token
            case .topic(let topic): "topic:" + topic
            case .condition(let condition): "condition:" + condition
            }
        }
    }

    public struct Message: Sendable, Equatable {
        public var target: Target
        public var validateOnly: Bool

        public init(target: Target, validateOnly: Bool) {
            self.target = target
            self.validateOnly = validateOnly
        }
    }

    public enum Verdict: Sendable, Equatable {
        case valid(Message)
        /// INVALID_ARGUMENT with this message; `invalidToken` when it is the token's fault.
        case invalid(String, invalidToken: Bool = false)
    }

    /// Decides which tokens are iOS devices (their data-only messages need `apns-priority: 5`).
    public var isIOSToken: @Sendable (String) -> Bool

    public init(isIOSToken: @escaping @Sendable (String) -> Bool = { _ in false }) {
        self.isIOSToken = isIOSToken
    }

    static let bodyFields: Set<String> = ["message", "validate_only"]
    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition",
    ]
    static let notificationFields: Set<String> = ["title", "body", "image"]
    static let androidFields: Set<String> = [
        "collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification", "fcm_options", "direct_boot_ok",
        "bandwidth_constrained_ok", "restricted_satellite_ok",
    ]
    static let apnsFields: Set<String> = ["headers", "payload", "fcm_options", "live_activity_token"]
    /// `aps` keys that make a message visible (not data-only).
    static let visibleAPSKeys: Set<String> = ["alert", "badge", "sound"]

    public func validate(body: some Collection<UInt8>) -> Verdict {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)), let root = object as? [String: Any] else {
            return .invalid("Invalid JSON payload received. The body is not a JSON object.")
        }
        let top: [String: Any]
        switch fields(root, allowed: Self.bodyFields, at: nil) {
        case .success(let fields): top = fields
        case .failure(let failure): return failure.verdict
        }
        var validateOnly = false
        if let value = top["validate_only"] {
            guard let flag = Self.bool(value) else { return .invalid("Invalid value at 'validate_only' (TYPE_BOOL), must be true or false") }
            validateOnly = flag
        }
        guard let rawMessage = top["message"] else { return .invalid("Invalid JSON payload received. 'message' is required.") }
        guard let messageObject = rawMessage as? [String: Any] else {
            return .invalid("Invalid JSON payload received. 'message' must be an object.")
        }
        switch check(messageObject) {
        case .success(let target): return .valid(Message(target: target, validateOnly: validateOnly))
        case .failure(let failure): return failure.verdict
        }
    }

    struct Failure: Error {
        var message: String
        var invalidToken = false
        var verdict: Verdict { .invalid(message, invalidToken: invalidToken) }
    }

    private func check(_ raw: [String: Any]) -> Result<Target, Failure> {
        Result {
            let message = try fields(raw, allowed: Self.messageFields, at: "message").get()
            let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
            guard targets.count <= 1 else {
                throw Failure(message: "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '\(targets[1])'")
            }
            guard let field = targets.first else { throw Failure(message: "Recipient of the message is not set.") }
            guard let value = message[field] as? String else {
                throw Failure(message: "Invalid value at 'message.\(field)' (TYPE_STRING), must be a string")
            }
            let target: Target
            switch field {
            case "token":
                guard Self.isWellFormedToken(value) else { throw Failure(message: Self.invalidTokenMessage, invalidToken: true) }
                target = .token(value)
            case "topic":
                let name = value.hasPrefix("/topics/") ? String(value.dropFirst("/topics/".count)) : value
                guard !name.isEmpty, name.utf8.allSatisfy(Self.isTopicByte) else {
                    throw Failure(message: "Invalid value at 'message.topic': '\(value)' is not a topic name ([a-zA-Z0-9-_.~%]+)")
                }
                target = .topic(name)
            default:
                guard !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                    throw Failure(message: "Invalid value at 'message.condition': the condition is empty")
                }
                target = .condition(value)
            }

            var payloadBytes = 0
            if let data = message["data"] { payloadBytes += try checkData(data, at: "message.data") }
            let notification = message["notification"]
            if let notification { payloadBytes += try checkNotification(notification) }
            if let android = message["android"] { payloadBytes += try checkAndroid(android) }
            guard payloadBytes <= Self.maximumPayloadBytes else {
                throw Failure(
                    message:
                        "Message is too big: \(payloadBytes) bytes of data and notification, the limit is \(Self.maximumPayloadBytes)"
                )
            }
            var apnsPriority: String?
            var visibleAPS = false
            if let apns = message["apns"] {
                (apnsPriority, visibleAPS) = try checkAPNs(apns)
            }
            if case .token(let token) = target, notification == nil, !visibleAPS, apnsPriority ?? "10" != "5", isIOSToken(token) {
                throw Failure(
                    message:
                        "Invalid value at 'message.apns.headers': a data-only message to an iOS device needs apns-priority 5 (FCM's default is 10, which APNs rejects for background notifications)"
                )
            }
            return target
        }.mapError { $0 as? Failure ?? Failure(message: "\($0)") }
    }

    /// Checks a `data` map; returns its size (UTF-8 bytes of keys and values).
    private func checkData(_ raw: Any, at path: String) throws -> Int {
        guard let data = raw as? [String: Any] else { throw Failure(message: "Invalid value at '\(path)': must be an object of strings") }
        var bytes = 0
        for (key, value) in data {
            guard let string = value as? String, !(value is NSNumber) else {
                throw Failure(message: "Invalid value at '\(path)[\(key)].value' (TYPE_STRING), data values must be strings")
            }
            if key == "from" || key == "message_type" || key.hasPrefix("google.") || key.hasPrefix("gcm.") {
                throw Failure(message: "Invalid data payload key: '\(key)' at '\(path)' is reserved")
            }
            bytes += key.utf8.count + string.utf8.count
        }
        return bytes
    }

    private func checkNotification(_ raw: Any) throws -> Int {
        let notification = try fields(raw, allowed: Self.notificationFields, at: "message.notification").get()
        var bytes = 0
        for (key, value) in notification {
            guard let string = value as? String, !(value is NSNumber) else {
                throw Failure(message: "Invalid value at 'message.notification.\(key)' (TYPE_STRING), must be a string")
            }
            bytes += key.utf8.count + string.utf8.count
        }
        return bytes
    }

    private func checkAndroid(_ raw: Any) throws -> Int {
        let android = try fields(raw, allowed: Self.androidFields, at: "message.android").get()
        if let priority = android["priority"] {
            guard let text = priority as? String, ["normal", "high"].contains(text.lowercased()) else {
                throw Failure(
                    message:
                        "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), \(priority): must be NORMAL or HIGH"
                )
            }
        }
        if let ttl = android["ttl"] {
            guard let text = ttl as? String, let seconds = Self.durationSeconds(text) else {
                throw Failure(
                    message:
                        "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), \"\(ttl)\": must be seconds such as \"3600s\" or \"3.5s\""
                )
            }
            guard seconds <= Self.maximumTTLSeconds else {
                throw Failure(message: "Invalid value at 'message.android.ttl': \(text) is more than 2419200s (28 days)")
            }
        }
        for key in ["collapse_key", "restricted_package_name"] {
            if let value = android[key], !(value is String) || value is NSNumber {
                throw Failure(message: "Invalid value at 'message.android.\(key)' (TYPE_STRING), must be a string")
            }
        }
        if let notification = android["notification"], !(notification is [String: Any]) {
            throw Failure(message: "Invalid value at 'message.android.notification': must be an object")
        }
        return try android["data"].map { try checkData($0, at: "message.android.data") } ?? 0
    }

    /// - Returns: the `apns-priority` header, if any, and whether `aps` makes the message visible.
    private func checkAPNs(_ raw: Any) throws -> (priority: String?, visible: Bool) {
        let apns = try fields(raw, allowed: Self.apnsFields, at: "message.apns").get()
        var priority: String?
        if let rawHeaders = apns["headers"] {
            guard let headers = rawHeaders as? [String: Any] else {
                throw Failure(message: "Invalid value at 'message.apns.headers': must be an object of strings")
            }
            for (name, value) in headers {
                guard let string = value as? String, !(value is NSNumber) else {
                    throw Failure(message: "Invalid value at 'message.apns.headers[\(name)].value' (TYPE_STRING), header values must be strings")
                }
                if name.lowercased() == "apns-priority" {
                    guard string == "5" || string == "10" else {
                        throw Failure(message: "Invalid value at 'message.apns.headers': apns-priority must be 5 or 10, got '\(string)'")
                    }
                    priority = string
                }
            }
        }
        var visible = false
        if let rawPayload = apns["payload"] {
            guard let payload = rawPayload as? [String: Any] else {
                throw Failure(message: "Invalid value at 'message.apns.payload': must be an object")
            }
            guard let aps = payload["aps"] as? [String: Any] else {
                throw Failure(message: "Invalid value at 'message.apns.payload': must hold an 'aps' object")
            }
            visible = aps.keys.contains { Self.visibleAPSKeys.contains($0) }
            let size = (try? JSONSerialization.data(withJSONObject: payload).count) ?? 0
            guard size <= Self.maximumPayloadBytes else {
                throw Failure(message: "Invalid value at 'message.apns.payload': \(size) bytes, the limit is \(Self.maximumPayloadBytes)")
            }
        }
        return (priority, visible)
    }

    /// An object's fields with lowerCamelCase names turned to snake_case; a failure naming the first unknown one.
    private func fields(_ raw: Any, allowed: Set<String>, at path: String?) -> Result<[String: Any], Failure> {
        guard let object = raw as? [String: Any] else {
            return .failure(Failure(message: "Invalid value at '\(path ?? "body")': must be an object"))
        }
        var fields: [String: Any] = [:]
        for (name, value) in object {
            let snake = Self.snakeCase(name)
            guard allowed.contains(snake) else {
                let place = path.map { " at '\($0)'" } ?? ""
                return .failure(Failure(message: "Invalid JSON payload received. Unknown name \"\(name)\"\(place): Cannot find field."))
            }
            fields[snake] = value
        }
        return .success(fields)
    }

    static func snakeCase(_ name: String) -> String {
        guard name.contains(where: \.isUppercase) else { return name }
        var out = ""
        for character in name {
            if character.isUppercase {
                out += "_" + character.lowercased()
            } else {
                out.append(character)
            }
        }
        return out
    }

    private static let booleanNumberType = type(of: NSNumber(value: true))

    static func bool(_ value: Any) -> Bool? {
        // JSON `true`/`false` parse to Foundation's boolean NSNumber class, numbers to another.
        guard let number = value as? NSNumber, type(of: number) == booleanNumberType else { return nil }
        return number.boolValue
    }

    /// A registration token as FCM issues them: 1 to 4096 characters of `[A-Za-z0-9_:.-]`. (FCM's are about 160.)
    public static func isWellFormedToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= 4096
            && token.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
                case UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "."): true
                default: false
                }
            }
    }

    static func isTopicByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"): true
        default: false
        }
    }

    /// A protobuf JSON duration, `3600s` or `3.5s` (at most nine decimals, not negative), in seconds.
    static func durationSeconds(_ text: String) -> Double? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy(\.isASCII), whole.allSatisfy(\.isNumber) else { return nil }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].count), parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber) else { return nil }
        }
        return Double(number)
    }
}
