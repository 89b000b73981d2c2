import Foundation

/// One line of the audit log (`audit_log`, migration 0024): a change made through the console or the admin API, or a
/// console sign-in or sign-out; when, who (the role, the name given, the client's address), what, and what it named.
public struct AuditEntry: Sendable, Equatable {
    /// Where the change was made.
    public enum Surface: String, Sendable, Codable, CaseIterable {
        /// The web console (`/console`).
        case console
        /// The admin API (`/v1/…` with the admin token).
        case admin
    }

    public var id: Int64
    public var at: Date
    public var surface: Surface
    /// `operator` or `viewer` (console), `admin` (admin API).
    public var role: String
    /// The name given: typed at the console's sign-in, or the admin API's `X-Paperboy-Operator` header.
    public var name: String?
    /// The client's address as the server saw it (through a trusted proxy, the address the proxy saw).
    public var address: String?
    /// `start broadcast`, `cancel broadcast`, `add key`, `sign in`, …
    public var action: String
    public var appID: Int?
    public var broadcastID: UUID?
    public var editionID: UUID?
    /// What came of it, in words.
    public var detail: String

    public init(
        id: Int64 = 0,
        at: Date,
        surface: Surface,
        role: String,
        name: String?,
        address: String?,
        action: String,
        appID: Int? = nil,
        broadcastID: UUID? = nil,
        editionID: UUID? = nil,
        detail: String = ""
    ) {
        self.id = id
        self.at = at
        self.surface = surface
        self.role = role
        self.name = name.map { String($0.prefix(64)) }
        self.address = address.map { String($0.prefix(64)) }
        self.action = String(action.prefix(64))
        self.appID = appID
        self.broadcastID = broadcastID
        self.editionID = editionID
        self.detail = String(detail.prefix(2000))
    }

    /// Who, as the pages and `paperboy audit` show it: `operator (ana) from 192.0.2.10`.
    public var who: String {
        var text = name.map { "\(role) (\($0))" } ?? role
        if let address { text += " from \(address)" }
        return text
    }
}

extension AuditEntry: Encodable {
    enum CodingKeys: String, CodingKey {
        case id, at, surface, role, name, address, action, detail
        case appID = "appId"
        case broadcastID = "broadcastId"
        case editionID = "editionId"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(at, forKey: .at)
        try container.encode(surface, forKey: .surface)
        try container.encode(role, forKey: .role)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(address, forKey: .address)
        try container.encode(action, forKey: .action)
        try container.encodeIfPresent(appID, forKey: .appID)
        try container.encodeIfPresent(broadcastID.map { $0.uuidString.lowercased() }, forKey: .broadcastID)
        try container.encodeIfPresent(editionID.map { $0.uuidString.lowercased() }, forKey: .editionID)
        try container.encode(detail, forKey: .detail)
    }
}
