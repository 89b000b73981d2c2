import Foundation

/// One of an app's device API keys as an operator sees it: when it was made, last used and revoked. Never
/// the key or its hash: the key is shown once, when it is made (``DeviceAPIKey``).
public struct AppAPIKey: Sendable, Codable, Equatable {
    public var id: Int
    public var appID: Int
    public var createdAt: Date
    /// When a server last looked the key up, to within ``AppRepository/lastUseResolution`` plus the API's
    /// key cache time (30 s); nil when no server has seen it since it was made (or since migration 0013).
    public var lastUsedAt: Date?
    /// When the key was revoked; from then on (after the API's key cache time) it answers 401.
    public var revokedAt: Date?

    enum CodingKeys: String, CodingKey {
        case id
        case appID = "appId"
        case createdAt
        case lastUsedAt
        case revokedAt
    }

    public init(id: Int, appID: Int, createdAt: Date, lastUsedAt: Date? = nil, revokedAt: Date? = nil) {
        self.id = id
        self.appID = appID
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }
}
