import Crypto
import Foundation

/// Who may use the console: an operator starts and cancels broadcasts, a viewer only reads.
public enum ConsoleRole: String, Sendable, CaseIterable {
    case `operator`
    case viewer

    /// Whether the role may start and cancel broadcasts.
    public var mayAct: Bool { self == .operator }
}

/// The console's two tokens (`PAPERBOY_CONSOLE_OPERATOR_TOKEN`, `PAPERBOY_CONSOLE_VIEWER_TOKEN`), kept as their
/// SHA-256 and as the keys that sign each role's sessions; never the token itself, so it cannot reach a log.
///
/// A session is signed with a key derived from its role's token: every `paperboy serve` given the same tokens
/// accepts the others' sessions (behind a load balancer), nothing about sessions is stored, and changing a token
/// signs every session of that role out.
public struct ConsoleAccess: Sendable {
    /// The environment variables the tokens come from (each also as `…_FILE`, naming a file that holds it).
    public static let operatorVariable = "PAPERBOY_CONSOLE_OPERATOR_TOKEN"
    public static let viewerVariable = "PAPERBOY_CONSOLE_VIEWER_TOKEN"
    /// The shortest token accepted: a token is a password typed by people at 05:00, guessed only by trying.
    public static let minimumTokenLength = 16

    struct Credential: Sendable {
        var digest: [UInt8]
        var sessionKey: SymmetricKey
    }

    private let credentials: [ConsoleRole: Credential]

    /// - Throws: ``ConsoleAccessError`` naming the variable of a token that is too short, or when both are equal
    ///   (a viewer could then act).
    public init(operatorToken: String?, viewerToken: String?) throws(ConsoleAccessError) {
        var credentials: [ConsoleRole: Credential] = [:]
        for (role, token, variable) in [
            (ConsoleRole.operator, operatorToken, Self.operatorVariable), (.viewer, viewerToken, Self.viewerVariable),
        ] {
            guard let token = token?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else { continue }
            guard token.count >= Self.minimumTokenLength else {
                throw ConsoleAccessError(
                    variable: variable,
                    message: "the token must be at least \(Self.minimumTokenLength) characters (e.g. `openssl rand -hex 24`)"
                )
            }
            let digest = Array(SHA256.hash(data: Array(token.utf8)))
            let key = SymmetricKey(data: Array(SHA256.hash(data: Array("paperboy console session \(role.rawValue)\n\(token)".utf8))))
            credentials[role] = Credential(digest: digest, sessionKey: key)
        }
        if let op = credentials[.operator], let viewer = credentials[.viewer], op.digest == viewer.digest {
            throw ConsoleAccessError(variable: Self.viewerVariable, message: "the viewer's token must differ from the operator's")
        }
        self.credentials = credentials
    }

    /// No tokens: the console only says how to enable it.
    public static let disabled = try! ConsoleAccess(operatorToken: nil, viewerToken: nil)

    /// Whether any role can sign in.
    public var isEnabled: Bool { !credentials.isEmpty }

    /// The roles that can sign in.
    public var roles: [ConsoleRole] { ConsoleRole.allCases.filter { credentials[$0] != nil } }

    /// The role whose token `token` is, compared by digest without an early exit; nil for any other text.
    public func role(forToken token: String) -> ConsoleRole? {
        let given = Array(SHA256.hash(data: Array(token.trimmingCharacters(in: .whitespacesAndNewlines).utf8)))
        var found: ConsoleRole?
        for role in ConsoleRole.allCases {
            guard let credential = credentials[role] else { continue }
            var difference: UInt8 = 0
            for (a, b) in zip(given, credential.digest) { difference |= a ^ b }
            if difference == 0 { found = role }
        }
        return found
    }

    /// The key that signs `role`'s sessions; nil when the role cannot sign in.
    func sessionKey(for role: ConsoleRole) -> SymmetricKey? {
        credentials[role]?.sessionKey
    }
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
