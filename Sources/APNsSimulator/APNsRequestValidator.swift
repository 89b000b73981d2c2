import APNs
import Crypto
import Foundation
import PaperboyCore

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

    public func validate(_ request: Request, now: Date) -> Verdict {
        guard request.method == "POST" else { return .rejected(status: 405, reason: .methodNotAllowed) }
        guard request.path.hasPrefix("/3/device/") else { return .rejected(status: 404, reason: .badPath) }
        let text = request.path.dropFirst("/3/device/".count)
        guard !text.isEmpty else { return .rejected(status: 400, reason: .missingDeviceToken) }
        guard let token = try? DeviceToken(hex: text) else { return .rejected(status: 400, reason: .badDeviceToken) }
        var headers: [String: String] = [:]
        for (name, value) in request.headers {
            guard headers.updateValue(value, forKey: name.lowercased()) == nil else {
                return .rejected(status: 400, reason: .duplicateHeaders)
            }
        }
        if let rejection = checkProviderToken(headers["authorization"], now: now) { return rejection }
        guard let topic = headers["apns-topic"], !topic.isEmpty else { return .rejected(status: 400, reason: .missingTopic) }
        if let topics = configuration.topics, !topics.contains(topic) { return .rejected(status: 400, reason: .topicDisallowed) }
        let pushType = headers["apns-push-type"] ?? "alert"
        guard ["alert", "background", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk"].contains(pushType) else {
            return .rejected(status: 400, reason: .invalidPushType)
        }
        let priority = headers["apns-priority"] ?? (pushType == "background" ? "5" : "10")
        guard ["1", "5", "10"].contains(priority), !(pushType == "background" && priority == "10") else {
            return .rejected(status: 400, reason: .badPriority)
        }
        if let expiration = headers["apns-expiration"], Int(expiration) == nil {
            return .rejected(status: 400, reason: .badExpirationDate)
        }
        if let collapseID = headers["apns-collapse-id"], collapseID.utf8.count > 64 {
            return .rejected(status: 400, reason: .badCollapseId)
        }
        if let apnsID = headers["apns-id"], UUID(uuidString: apnsID) == nil {
            return .rejected(status: 400, reason: .badMessageId)
        }
        guard !request.body.isEmpty else { return .rejected(status: 400, reason: .payloadEmpty) }
        guard request.body.count <= APNsNotification.maximumPayloadBytes else {
            return .rejected(status: 413, reason: .payloadTooLarge)
        }
        return .accepted(token: token.hex)
    }

    private func checkProviderToken(_ authorization: String?, now: Date) -> Verdict? {
        guard let authorization, authorization.hasPrefix("bearer ") || authorization.hasPrefix("Bearer ") else {
            return .rejected(status: 403, reason: .missingProviderToken)
        }
        let parts = authorization.dropFirst("bearer ".count).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let invalid = Verdict.rejected(status: 403, reason: .invalidProviderToken)
        guard parts.count == 3,
            let headerData = Self.base64URLDecode(parts[0]), let claimsData = Self.base64URLDecode(parts[1]),
            let signatureData = Self.base64URLDecode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any],
            header["alg"] as? String == "ES256", let keyID = header["kid"] as? String,
            let issuer = claims["iss"] as? String, let issuedAt = (claims["iat"] as? NSNumber)?.doubleValue
        else { return invalid }
        guard let key = configuration.keys[keyID] else { return invalid }
        if let teamID = configuration.teamID, issuer != teamID { return invalid }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return invalid }
        guard now.timeIntervalSince1970 - issuedAt <= configuration.maximumTokenAge else {
            return .rejected(status: 403, reason: .expiredProviderToken)
        }
        return nil
    }

    private static func base64URLDecode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while !base64.count.isMultiple(of: 4) { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
