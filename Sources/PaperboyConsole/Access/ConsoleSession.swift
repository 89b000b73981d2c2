import Crypto
import Foundation

/// A signed-in browser: its role, the name typed at sign-in, when the session ends. Kept in the browser as a
/// signed cookie (``seal(with:)``), so that nothing about it is stored on the server.
struct ConsoleSession: Sendable, Equatable, Codable {
    var role: ConsoleRole
    /// The name typed at sign-in, if any, recorded with every action.
    var name: String?
    var expires: Date
    /// Random per sign-in: the CSRF token is derived from it, so it changes with every session.
    var nonce: String

    enum CodingKeys: String, CodingKey {
        case role = "r"
        case name = "n"
        case expires = "e"
        case nonce = "i"
    }

    init(role: ConsoleRole, name: String?, expires: Date, nonce: String = ConsoleSession.randomNonce()) {
        self.role = role
        self.name = name
        self.expires = expires
        self.nonce = nonce
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let role = ConsoleRole(rawValue: try container.decode(String.self, forKey: .role)) else {
            throw DecodingError.dataCorruptedError(forKey: .role, in: container, debugDescription: "unknown role")
        }
        self.role = role
        self.name = try container.decodeIfPresent(String.self, forKey: .name)
        self.expires = Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .expires))
        self.nonce = try container.decode(String.self, forKey: .nonce)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(role.rawValue, forKey: .role)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode(expires.timeIntervalSince1970.rounded(.down), forKey: .expires)
        try container.encode(nonce, forKey: .nonce)
    }

    /// Who, for the record of actions and the page header: `operator (alice)` or `viewer`.
    var who: String { name.map { "\(role.rawValue) (\($0))" } ?? role.rawValue }

    /// The cookie's value: the session as JSON and its HMAC-SHA256 under the role's key, both base64url, joined by `.`.
    func seal(with key: SymmetricKey) -> String {
        let payload = (try? JSONEncoder().encode(self)) ?? Data()
        let mac = HMAC<SHA256>.authenticationCode(for: payload, using: key)
        return Self.base64url(payload) + "." + Self.base64url(Data(mac))
    }

    /// The session a cookie value holds, when its signature is good under its role's key and it has not expired.
    static func open(_ value: String, access: ConsoleAccess, now: Date) -> ConsoleSession? {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = data(base64url: parts[0]), let mac = data(base64url: parts[1]) else { return nil }
        guard let session = try? JSONDecoder().decode(ConsoleSession.self, from: payload),
            let key = access.sessionKey(for: session.role),
            HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: payload, using: key),
            session.expires > now
        else { return nil }
        return session
    }

    /// The token every form of this session carries (and every action checks): bound to the session's nonce
    /// and signed with the role's key, so another site can neither read nor make it.
    func csrfToken(with key: SymmetricKey) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("csrf\n\(nonce)".utf8), using: key)
        return Self.base64url(Data(mac))
    }

    /// Whether `token` is this session's CSRF token, compared without an early exit.
    func acceptsCSRF(_ token: String?, with key: SymmetricKey) -> Bool {
        guard let token, let given = Self.data(base64url: Substring(token)) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: Data("csrf\n\(nonce)".utf8), using: key)
    }

    static func randomNonce() -> String {
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
