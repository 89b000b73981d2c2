import Foundation
import PaperboyAPI
import PaperboyConsole

/// The console's tokens from the environment: `PAPERBOY_CONSOLE_OPERATOR_TOKEN` and `PAPERBOY_CONSOLE_VIEWER_TOKEN`,
/// or `…_FILE` naming a file that holds one (a Kubernetes or Docker secret mount). Neither: the console only says how
/// to enable it. Also the console's session key and the admin token, read the same way.
enum ConsoleTokens {
    /// - Throws: `CommandError` naming the variable: both a token and its file given, a file that cannot be read, a
    ///   token that is too short, the same token for both roles. Never quoting a token.
    static func access(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ConsoleAccess {
        let operatorToken = try token(ConsoleAccess.operatorVariable, environment: environment)
        let viewerToken = try token(ConsoleAccess.viewerVariable, environment: environment)
        do {
            return try ConsoleAccess(operatorToken: operatorToken, viewerToken: viewerToken)
        } catch {
            throw CommandError("\(error)")
        }
    }

    /// `PAPERBOY_CONSOLE_SESSION_KEY` (or its file), else a key kept in the database.
    static func sessionSecret(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ConsoleSessionSecret {
        guard let key = try token(ConsoleSessionSecret.variable, environment: environment) else { return .database }
        do {
            return try ConsoleSessionSecret.given(text: key)
        } catch {
            throw CommandError("\(error)")
        }
    }

    /// `PAPERBOY_ADMIN_TOKEN` (or `PAPERBOY_ADMIN_TOKEN_FILE`), refused when short or common; nil when unset.
    static func adminToken(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        let variable = "PAPERBOY_ADMIN_TOKEN"
        guard let token = try token(variable, environment: environment)?.trimmingCharacters(in: .whitespacesAndNewlines) else { return nil }
        if let weakness = TokenStrength.weakness(of: token) { throw CommandError("\(variable): \(weakness)") }
        return token
    }

    /// A secret from `variable`, or from the file `variable_FILE` names (its text, trimmed).
    static func token(_ variable: String, environment: [String: String]) throws -> String? {
        let direct = environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        let file = environment[variable + "_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        switch (direct, file) {
        case (nil, nil):
            return nil
        case (let token?, nil):
            return token
        case (nil, let path?):
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw CommandError("\(variable)_FILE: \(path) is not a readable text file")
            }
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else { throw CommandError("\(variable)_FILE: \(path) is empty") }
            return token
        case (.some, .some):
            throw CommandError("\(variable) and \(variable)_FILE: set only one")
        }
    }
}
