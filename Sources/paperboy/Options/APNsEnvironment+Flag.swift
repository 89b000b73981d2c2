import ArgumentParser
import PaperboyCore

extension APNsEnvironment {
    /// The environment an `--environment` flag names.
    /// - Throws: `ValidationError` naming the flag and the values it takes.
    init(flag text: String) throws {
        guard let environment = APNsEnvironment(rawValue: text) else {
            throw ValidationError("--environment: \(APNsEnvironment.allCases.map(\.rawValue).joined(separator: " or ")), got '\(text)'")
        }
        self = environment
    }
}
