import Foundation
import PaperboyCore

/// One line of the audit log (`audit_log`, migrations 0024 and 0035): a change made through the console, the admin API,
/// the CLI or by a schedule, or a console sign-in or sign-out; when (the database's clock), who (the role, the name
/// given, the client's address, the console session), what, and what it named.
public struct AuditEntry: Sendable, Equatable {
    /// Where the change was made.
    public enum Surface: String, Sendable, Codable, CaseIterable {
        /// The web console (`/console`).
        case console
        /// The admin API (`/v1/…` with the admin token).
        case admin
        /// The `paperboy` command line: role `cli`, the OS user as the name, the host as the address.
        case cli
        /// A schedule firing a broadcast: role `scheduler`, the schedule's name.
        case scheduler

        /// How the pages and `paperboy audit` name it.
        public var label: String {
            switch self {
            case .console: "console"
            case .admin: "admin API"
            case .cli: "CLI"
            case .scheduler: "schedule"
            }
        }
    }

    public var id: Int64
    /// When it was written, by the database's clock (what the writer passes is not stored).
    public var at: Date
    public var surface: Surface
    /// `operator` or `viewer` (console), `admin` (admin API), `cli`, `scheduler`.
    public var role: String
    /// The name given: typed at the console's sign-in, the admin API's `X-Paperboy-Operator` header, the OS user of
    /// the CLI, the schedule's name.
    public var name: String?
    /// The client's address as the server saw it (through a trusted proxy, the address the proxy saw); the host the
    /// CLI ran on.
    public var address: String?
    /// The console session that made it (`console_sessions.id`).
    public var sessionID: Int64?
    /// How many times it happened: sign-ins are counted, one line per role, name and address an hour.
    public var times: Int
    /// The last of them, when more than one.
    public var lastAt: Date?
    /// `start broadcast`, `cancel broadcast`, `add key`, `sign in`, …
    public var action: String
    public var appID: Int?
    public var broadcastID: UUID?
    public var editionID: UUID?
    /// What came of it, in words.
    public var detail: String

    public init(
        id: Int64 = 0,
        at: Date = Date(),
        surface: Surface,
        role: String,
        name: String?,
        address: String?,
        action: String,
        appID: Int? = nil,
        broadcastID: UUID? = nil,
        editionID: UUID? = nil,
        detail: String = "",
        sessionID: Int64? = nil,
        times: Int = 1,
        lastAt: Date? = nil
    ) {
        self.id = id
        self.at = at
        self.surface = surface
        self.role = role
        self.name = name.map { $0.clipped(toCodePoints: 64) }
        self.address = address.map { $0.clipped(toCodePoints: 64) }
        self.action = action.clipped(toCodePoints: 64)
        self.appID = appID
        self.broadcastID = broadcastID
        self.editionID = editionID
        self.detail = detail.clipped(toCodePoints: 2000)
        self.sessionID = sessionID
        self.times = times
        self.lastAt = lastAt
    }

    /// Who, as the pages and `paperboy audit` show it: `operator (ana) from 192.0.2.10`, `cli (deploy) on ops-1`.
    public var who: String {
        var text = name.map { "\(role) (\($0))" } ?? role
        if let address { text += surface == .cli ? " on \(address)" : " from \(address)" }
        return text
    }

    /// The action with its count: `sign in`, or `sign in ×12` for twelve in the hour.
    public var actionCounted: String { times > 1 ? "\(action) ×\(times)" : action }
}

extension AuditEntry: Encodable {
    enum CodingKeys: String, CodingKey {
        case id, at, surface, role, name, address, action, detail, times, lastAt
        case sessionID = "sessionId"
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
        try container.encodeIfPresent(sessionID, forKey: .sessionID)
        try container.encode(times, forKey: .times)
        try container.encodeIfPresent(lastAt, forKey: .lastAt)
    }
}
