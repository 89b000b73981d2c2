import APNs
import Crypto
import Foundation
import PaperboyCore
import Synchronization

/// What the APNs simulator checks before it accepts a notification, as APNs does: method, path and
/// token, the provider token's signature, key, team and age, topic, push type against priority,
/// expiration, collapse id, apns-id and payload size. Pure: the HTTP/2 server feeds it requests.
public struct APNsRequestValidator: Sendable {
    public struct Configuration: Sendable {
        /// The team whose tokens are accepted; nil accepts any `iss`.
        public var teamID: String?
        /// Public keys by key id; provider tokens must be signed by one of them.
        public var keys: [String: P256.Signing.PublicKey]
        /// The topics (bundle ids) accepted; nil accepts any.
        public var topics: Set<String>?
        /// Provider tokens older than this answer `ExpiredProviderToken`.
        public var maximumTokenAge: TimeInterval = 3600
        /// Keys revoked since the simulator started (Apple's developer account): their provider tokens, new or seen
        /// before, answer `InvalidProviderToken`.
        public var revoked = RevokedKeys()
        /// The topic the simulated devices' tokens were issued to; nil: any. A request for another topic the key may
        /// send to answers `DeviceTokenNotForTopic`, as APNs answers a token of another app (an app added with the
        /// wrong bundle id).
        public var deviceTopic: String?

        public init(teamID: String? = nil, keys: [String: P256.Signing.PublicKey], topics: Set<String>? = nil) {
            self.teamID = teamID
            self.keys = keys
            self.topics = topics
        }
    }

    /// A request as it arrived: method, path, headers in order (duplicates kept), body.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }
    }

    public enum Verdict: Equatable, Sendable {
        /// Accepted for this device token (lowercase hex).
        case accepted(token: String)
        case rejected(status: Int, reason: APNsReason)
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Checks a request given as a list of headers. Header names are compared case-insensitively.
    public func validate(_ request: Request, now: Date) -> Verdict {
        var head = Head(method: request.method, path: request.path)
        for (name, value) in request.headers {
            head.add(name: name.lowercased(), value: value)
        }
        var providerTokens = ProviderTokenCache()
        return validate(head, body: request.body, now: now, providerTokens: &providerTokens)
    }

    /// Checks a request whose headers were gathered in a ``Head``, as the HTTP/2 server does.
    ///
    /// A provider token found in `providerTokens` is not verified again (the signature, key and team cannot
    /// change), only its age; a token that verifies is added to it.
    public func validate(
        _ head: Head,
        body: some Collection<UInt8>,
        now: Date,
        providerTokens: inout ProviderTokenCache
    ) -> Verdict {
        guard head.method == "POST" else { return .rejected(status: 405, reason: .methodNotAllowed) }
        guard let path = head.path, path.hasPrefix("/3/device/") else { return .rejected(status: 404, reason: .badPath) }
        let text = path.dropFirst("/3/device/".count)
        guard !text.isEmpty else { return .rejected(status: 400, reason: .missingDeviceToken) }
        guard let token = try? DeviceToken(hex: text) else { return .rejected(status: 400, reason: .badDeviceToken) }
        guard !head.hasDuplicateHeaders else { return .rejected(status: 400, reason: .duplicateHeaders) }
        if let rejection = checkProviderToken(head.authorization, now: now, cache: &providerTokens) { return rejection }
        guard let topic = head.topic, !topic.isEmpty else { return .rejected(status: 400, reason: .missingTopic) }
        if let topics = configuration.topics, !topics.contains(topic) { return .rejected(status: 400, reason: .topicDisallowed) }
        if let deviceTopic = configuration.deviceTopic, topic != deviceTopic { return .rejected(status: 400, reason: .deviceTokenNotForTopic) }
        let pushType = head.pushType ?? "alert"
        switch pushType {
        case "alert", "background", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk": break
        default: return .rejected(status: 400, reason: .invalidPushType)
        }
        switch head.priority ?? (pushType == "background" ? "5" : "10") {
        case "1", "5": break
        case "10" where pushType != "background": break
        default: return .rejected(status: 400, reason: .badPriority)
        }
        if let expiration = head.expiration, Int(expiration) == nil {
            return .rejected(status: 400, reason: .badExpirationDate)
        }
        if let collapseID = head.collapseID, collapseID.utf8.count > APNsNotification.maximumCollapseIDBytes {
            return .rejected(status: 400, reason: .badCollapseId)
        }
        if let apnsID = head.apnsID, UUID(uuidString: apnsID) == nil {
            return .rejected(status: 400, reason: .badMessageId)
        }
        guard !body.isEmpty else { return .rejected(status: 400, reason: .payloadEmpty) }
        guard body.count <= APNsNotification.maximumPayloadBytes else {
            return .rejected(status: 413, reason: .payloadTooLarge)
        }
        // APNs documents no reason of its own for a payload that is not a JSON object; a cheap look at the
        // first byte catches a body that is not one at all without parsing every payload.
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard body.first(where: { !isSpace($0) }) == UInt8(ascii: "{") else {
            return .rejected(status: 400, reason: .payloadEmpty)
        }
        return .accepted(token: token.hex)
    }

    private func checkProviderToken(_ authorization: String?, now: Date, cache: inout ProviderTokenCache) -> Verdict? {
        guard let authorization, authorization.hasPrefix("bearer ") || authorization.hasPrefix("Bearer ") else {
            return .rejected(status: 403, reason: .missingProviderToken)
        }
        let issuedAt: Double
        let keyID: String
        if let known = cache.entry(of: authorization) {
            (issuedAt, keyID) = known
        } else {
            guard let verified = verifiedIssuedAt(authorization) else {
                return .rejected(status: 403, reason: .invalidProviderToken)
            }
            cache.insert(authorization, issuedAt: verified.issuedAt, keyID: verified.keyID)
            (issuedAt, keyID) = verified
        }
        if configuration.revoked.contains(keyID) { return .rejected(status: 403, reason: .invalidProviderToken) }
        guard now.timeIntervalSince1970 - issuedAt <= configuration.maximumTokenAge else {
            return .rejected(status: 403, reason: .expiredProviderToken)
        }
        cache.hasAcceptedToken = true
        return nil
    }

    /// The `iat` and key id of a provider token signed by a known key for the configured team; nil if it is not one.
    private func verifiedIssuedAt(_ authorization: String) -> (issuedAt: Double, keyID: String)? {
        let parts = authorization.dropFirst("bearer ".count).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3,
            let headerData = Self.base64URLDecode(parts[0]), let claimsData = Self.base64URLDecode(parts[1]),
            let signatureData = Self.base64URLDecode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any],
            header["alg"] as? String == "ES256", let keyID = header["kid"] as? String,
            let issuer = claims["iss"] as? String, let issuedAt = (claims["iat"] as? NSNumber)?.doubleValue
        else { return nil }
        guard let key = configuration.keys[keyID] else { return nil }
        if let teamID = configuration.teamID, issuer != teamID { return nil }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return nil }
        return (issuedAt, keyID)
    }

    private static func base64URLDecode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while !base64.count.isMultiple(of: 4) { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

extension APNsRequestValidator {
    /// The request line and the headers the rules read, gathered in one pass over a request's headers.
    public struct Head: Sendable {
        public var method: String?
        public var path: String?
        public var authorization: String?
        public var topic: String?
        public var pushType: String?
        public var priority: String?
        public var expiration: String?
        public var collapseID: String?
        public var apnsID: String?
        /// Whether one of the headers above came more than once (APNs: `DuplicateHeaders`).
        public var hasDuplicateHeaders = false

        public init(method: String? = nil, path: String? = nil) {
            self.method = method
            self.path = path
        }

        /// Takes one header (lowercase name, as HTTP/2 sends them); HTTP/2 pseudo-headers `:method` and
        /// `:path` included. Headers the rules do not read are ignored.
        public mutating func add(name: String, value: String) {
            switch name {
            case ":method": Self.set(&method, value, &hasDuplicateHeaders)
            case ":path": Self.set(&path, value, &hasDuplicateHeaders)
            case "authorization": Self.set(&authorization, value, &hasDuplicateHeaders)
            case "apns-topic": Self.set(&topic, value, &hasDuplicateHeaders)
            case "apns-push-type": Self.set(&pushType, value, &hasDuplicateHeaders)
            case "apns-priority": Self.set(&priority, value, &hasDuplicateHeaders)
            case "apns-expiration": Self.set(&expiration, value, &hasDuplicateHeaders)
            case "apns-collapse-id": Self.set(&collapseID, value, &hasDuplicateHeaders)
            case "apns-id": Self.set(&apnsID, value, &hasDuplicateHeaders)
            default: return
            }
        }

        private static func set(_ field: inout String?, _ value: String, _ duplicate: inout Bool) {
            if field != nil { duplicate = true }
            field = value
        }
    }

    /// Provider tokens one connection has already proven (signature, key and team), with their `iat`, so
    /// that a token reused for thousands of requests is verified once. Bounded: a few recent tokens.
    public struct ProviderTokenCache: Sendable {
        /// How many tokens are remembered; a connection rarely uses more than one or two at a time.
        public static let capacity = 4

        private var entries: [(authorization: String, issuedAt: Double, keyID: String)] = []
        /// Whether a request on this connection has carried a valid provider token (signature and age), after
        /// which APNs raises the connection's stream limit.
        public internal(set) var hasAcceptedToken = false

        public init() {}

        func entry(of authorization: String) -> (issuedAt: Double, keyID: String)? {
            for entry in entries where entry.authorization == authorization {
                return (entry.issuedAt, entry.keyID)
            }
            return nil
        }

        mutating func insert(_ authorization: String, issuedAt: Double, keyID: String) {
            if entries.count >= Self.capacity { entries.removeLast() }
            entries.insert((authorization, issuedAt, keyID), at: 0)
        }
    }

    /// Key ids revoked while the simulator runs, shared by its connections.
    public final class RevokedKeys: Sendable {
        private let keys = Mutex<Set<String>>([])

        public init() {}

        /// Revokes the key: requests signed with it are refused from now on.
        public func revoke(_ keyID: String) { keys.withLock { _ = $0.insert(keyID) } }

        func contains(_ keyID: String) -> Bool { keys.withLock { $0.contains(keyID) } }
    }
}
