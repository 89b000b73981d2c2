import Crypto
import Foundation
import PaperboyStore

/// A signed-in browser: its handle, role, the name typed at sign-in, when it signed in and when it ends. Kept on the
/// server (`console_sessions`, ``ConsoleRepository/session(_:idleTimeout:renewAfter:logger:)``); the browser's cookie
/// holds only a random secret (``newSecret()``) whose SHA-256 finds the row. Whether a session is still good (not past
/// its end, not idle, not signed out) is the database's to say, by its own clock, on every request.
struct ConsoleSession: Sendable, Equatable {
    /// The session's public handle (`console_sessions.id`): what the audit log and the session list name, what its
    /// CSRF token is bound to. Not the cookie's secret.
    var id: Int64
    var role: ConsoleRole
    /// The name typed at sign-in, if any, recorded with every action.
    var name: String?
    /// The client's address at sign-in.
    var address: String?
    var signedIn: Date
    /// When it ends, however much it is used.
    var expires: Date

    init(id: Int64, role: ConsoleRole, name: String?, address: String? = nil, signedIn: Date, expires: Date) {
        self.id = id
        self.role = role
        self.name = name
        self.address = address
        self.signedIn = signedIn
        self.expires = expires
    }

    /// The session a stored row is, when its role can sign in now and its token is the one it signed in with
    /// (`keys.tokenMark(for:)`): a changed token ends that role's sessions.
    init?(_ row: ConsoleSessionRow, keys: ConsoleKeys) {
        guard let role = ConsoleRole(rawValue: row.role), let mark = keys.tokenMark(for: role), mark == row.tokenMark else { return nil }
        self.init(id: row.id, role: role, name: row.name, address: row.address, signedIn: row.signedInAt, expires: row.expiresAt)
    }

    /// Who, for the record of actions and the page header: `operator (alice)` or `viewer`.
    var who: String { name.map { "\(role.rawValue) (\($0))" } ?? role.rawValue }

    /// The cookie's value for a new session: 32 random bytes, base64url (43 characters).
    static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return base64url(Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    /// The SHA-256 a cookie's value is stored by; nil for anything that is not 43 base64url characters (no session of
    /// ours), which is refused without asking the database.
    static func digest(ofCookie value: String) -> [UInt8]? {
        guard value.utf8.count == 43,
            value.utf8.allSatisfy({ byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
            })
        else { return nil }
        return Array(SHA256.hash(data: Array(value.utf8)))
    }

    /// The token every form of this session carries (and every action checks): bound to the session's handle and made
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
