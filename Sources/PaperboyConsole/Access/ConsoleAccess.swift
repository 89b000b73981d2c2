import Crypto
import Foundation
import PaperboyAPI

/// Who may use the console: an operator starts and cancels broadcasts, a viewer only reads.
public enum ConsoleRole: String, Sendable, CaseIterable {
    case `operator`
    case viewer

    /// Whether the role may start and cancel broadcasts.
    public var mayAct: Bool { self == .operator }
}

/// The console's two tokens (`PAPERBOY_CONSOLE_OPERATOR_TOKEN`, `PAPERBOY_CONSOLE_VIEWER_TOKEN`), kept as their
/// SHA-256; never the token itself, so it cannot reach a log.
///
/// Sessions are kept on the server and a cookie holds only a random secret, so a leaked cookie lets nobody test
/// token guesses offline. The token's digest is mixed into its role's keys (``ConsoleKeys``), so changing a token
/// still signs that role out.
public struct ConsoleAccess: Sendable {
    /// The environment variables the tokens come from (each also as `…_FILE`, naming a file that holds it).
    public static let operatorVariable = "PAPERBOY_CONSOLE_OPERATOR_TOKEN"
    public static let viewerVariable = "PAPERBOY_CONSOLE_VIEWER_TOKEN"
    /// The shortest token accepted: a token is a password typed by people at 05:00, guessed only by trying.
    public static let minimumTokenLength = TokenStrength.minimumLength

    private let digests: [ConsoleRole: [UInt8]]

    /// - Throws: ``ConsoleAccessError`` naming the variable of a token that is too short or too common, or when both
    ///   are equal (a viewer could then act).
    public init(operatorToken: String?, viewerToken: String?) throws(ConsoleAccessError) {
        var digests: [ConsoleRole: [UInt8]] = [:]
        for (role, token, variable) in [
            (ConsoleRole.operator, operatorToken, Self.operatorVariable), (.viewer, viewerToken, Self.viewerVariable),
        ] {
            guard let token = token?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else { continue }
            if let weakness = TokenStrength.weakness(of: token) {
                throw ConsoleAccessError(variable: variable, message: weakness)
            }
            digests[role] = Array(SHA256.hash(data: Array(token.utf8)))
        }
        if let op = digests[.operator], let viewer = digests[.viewer], op == viewer {
            throw ConsoleAccessError(variable: Self.viewerVariable, message: "the viewer's token must differ from the operator's")
        }
        self.digests = digests
    }

    /// No tokens: the console only says how to enable it.
    public static let disabled = try! ConsoleAccess(operatorToken: nil, viewerToken: nil)

    /// Whether any role can sign in.
    public var isEnabled: Bool { !digests.isEmpty }

    /// The roles that can sign in.
    public var roles: [ConsoleRole] { ConsoleRole.allCases.filter { digests[$0] != nil } }

    /// The role whose token `token` is, compared by digest without an early exit; nil for any other text.
    public func role(forToken token: String) -> ConsoleRole? {
        let given = Array(SHA256.hash(data: Array(token.trimmingCharacters(in: .whitespacesAndNewlines).utf8)))
        var found: ConsoleRole?
        for role in ConsoleRole.allCases {
            guard let digest = digests[role] else { continue }
            var difference: UInt8 = 0
            for (a, b) in zip(given, digest) { difference |= a ^ b }
            if difference == 0 { found = role }
        }
        return found
    }

    /// The keys that sign sessions and CSRF tokens, derived from `secret`.
    func keys(secret: [UInt8]) -> ConsoleKeys {
        ConsoleKeys(secret: secret, digests: digests)
    }
}

/// The keys of one secret: per role, a mark of its token that its sessions are stored with (a changed token ends
/// them) and a key that makes CSRF tokens, each derived with HKDF (SHA-256) from the secret and the role's token
/// digest.
struct ConsoleKeys: Sendable {
    private let marks: [ConsoleRole: [UInt8]]
    private let csrf: [ConsoleRole: SymmetricKey]

    init(secret: [UInt8], digests: [ConsoleRole: [UInt8]]) {
        let material = SymmetricKey(data: secret)
        func derive(_ purpose: String, _ role: ConsoleRole, _ digest: [UInt8], bytes: Int) -> SymmetricKey {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: material,
                salt: Array("paperboy console".utf8),
                info: Array("\(purpose) \(role.rawValue)\n".utf8) + digest,
                outputByteCount: bytes
            )
        }
        marks = digests.reduce(into: [:]) { marks, entry in
            marks[entry.key] = derive("session", entry.key, entry.value, bytes: 16).withUnsafeBytes { Array($0) }
        }
        csrf = digests.reduce(into: [:]) { $0[$1.key] = derive("csrf", $1.key, $1.value, bytes: 32) }
    }

    /// What `role`'s sessions are stored with (16 bytes); nil when the role cannot sign in.
    func tokenMark(for role: ConsoleRole) -> [UInt8]? { marks[role] }

    /// The key of `role`'s CSRF tokens; nil when the role cannot sign in.
    func csrfKey(for role: ConsoleRole) -> SymmetricKey? { csrf[role] }
}

/// A console token that cannot be used, naming its environment variable; never quoting the token.
public struct ConsoleAccessError: Error, Equatable, CustomStringConvertible {
    public var variable: String
    public var message: String

    public init(variable: String, message: String) {
        self.variable = variable
        self.message = message
    }

    public var description: String { "\(variable): \(message)" }
}
