import Crypto
import Foundation

/// A signed-in browser: its role, the name typed at sign-in, when it signed in, when it was last used, when the
/// session ends. Kept in the browser as a signed cookie (``seal(with:)``); the server keeps only the ids of sessions
/// signed out before they expired (`console_ended_sessions`) and when everyone was last signed out.
struct ConsoleSession: Sendable, Equatable, Codable {
    var role: ConsoleRole
    /// The name typed at sign-in, if any, recorded with every action.
    var name: String?
    /// When it signed in: a session issued before "sign out everyone" is ended.
    var issued: Date
    /// When it ends, however much it is used.
    var expires: Date
    /// When a request last renewed it: unused for longer than the idle timeout, it ends.
    var seen: Date
    /// Random per sign-in: the session's id (what sign-out records) and what its CSRF token is made from.
    var id: String

    enum CodingKeys: String, CodingKey {
        case role = "r"
        case name = "n"
        case issued = "t"
        case expires = "e"
        case seen = "s"
        case id = "i"
    }

    init(role: ConsoleRole, name: String?, issued: Date, expires: Date, id: String = ConsoleSession.randomID()) {
        self.role = role
        self.name = name
        self.issued = issued
        self.expires = expires
        self.seen = issued
        self.id = id
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let role = ConsoleRole(rawValue: try container.decode(String.self, forKey: .role)) else {
            throw DecodingError.dataCorruptedError(forKey: .role, in: container, debugDescription: "unknown role")
        }
        self.role = role
        self.name = try container.decodeIfPresent(String.self, forKey: .name)
        self.issued = Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .issued) / 1000)
        self.expires = Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .expires))
        self.seen = Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .seen))
        self.id = try container.decode(String.self, forKey: .id)
        guard id.count <= 64 else { throw DecodingError.dataCorruptedError(forKey: .id, in: container, debugDescription: "id too long") }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(role.rawValue, forKey: .role)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode((issued.timeIntervalSince1970 * 1000).rounded(.down), forKey: .issued)
        try container.encode(expires.timeIntervalSince1970.rounded(.down), forKey: .expires)
        try container.encode(seen.timeIntervalSince1970.rounded(.down), forKey: .seen)
        try container.encode(id, forKey: .id)
    }

    /// Who, for the record of actions and the page header: `operator (alice)` or `viewer`.
    var who: String { name.map { "\(role.rawValue) (\($0))" } ?? role.rawValue }

    /// The cookie's value: the session as JSON and its HMAC-SHA256 under the role's session key, both base64url,
    /// joined by `.`.
    func seal(with keys: ConsoleKeys) -> String? {
        guard let key = keys.sessionKey(for: role), let payload = try? JSONEncoder().encode(self) else { return nil }
        let mac = HMAC<SHA256>.authenticationCode(for: payload, using: key)
        return Self.base64url(payload) + "." + Self.base64url(Data(mac))
    }

    /// Why a cookie opens no session.
    enum Refusal: String, Error, Sendable, Equatable {
        /// Not a cookie of ours: malformed, or signed with another key (another secret or token, or forged).
        case forged
        /// Past its absolute end.
        case expired
        /// Unused for longer than the idle timeout.
        case idle
    }

    /// The session a cookie value holds, when its signature is good under its role's key, it has not expired and it
    /// was used within `idleTimeout`; whether it was signed out is the database's to say (the caller asks it next).
    static func open(_ value: String, keys: ConsoleKeys, now: Date, idleTimeout: TimeInterval) -> Result<ConsoleSession, Refusal> {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = data(base64url: parts[0]), let mac = data(base64url: parts[1]) else { return .failure(.forged) }
        guard let session = try? JSONDecoder().decode(ConsoleSession.self, from: payload),
            let key = keys.sessionKey(for: session.role),
            HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: payload, using: key)
        else { return .failure(.forged) }
        guard session.expires > now else { return .failure(.expired) }
        guard now.timeIntervalSince(session.seen) < idleTimeout else { return .failure(.idle) }
        return .success(session)
    }

    /// The token every form of this session carries (and every action checks): bound to the session's id and made
    /// with the role's CSRF key, so another site can neither read nor make it.
    func csrfToken(with keys: ConsoleKeys) -> String? {
        guard let key = keys.csrfKey(for: role) else { return nil }
        return Self.base64url(Data(HMAC<SHA256>.authenticationCode(for: Data("csrf\n\(id)".utf8), using: key)))
    }

    /// Whether `token` is this session's CSRF token, compared without an early exit.
    func acceptsCSRF(_ token: String?, with keys: ConsoleKeys) -> Bool {
        guard let token, let key = keys.csrfKey(for: role), let given = Self.data(base64url: Substring(token)) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: Data("csrf\n\(id)".utf8), using: key)
    }

    static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        return base64url(Data((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    static func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func data(base64url text: Substring) -> Data? {
        guard text.count < 4096 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
