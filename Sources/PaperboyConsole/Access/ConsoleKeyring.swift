import Foundation
import Logging
import PaperboyStore
import Synchronization

/// The console's current keys (CSRF keys, token marks): derived once from a given secret, or from the database's
/// (`console_keys`), read again at most every ``refreshInterval`` so that a "sign out everyone" in another process,
/// which replaces it, reaches this one within seconds (the sessions it ended are gone at once anyway: they are rows,
/// read on every request).
final class ConsoleKeyring: Sendable {
    let access: ConsoleAccess
    let source: ConsoleSessionSecret
    let console: ConsoleRepository
    let now: @Sendable () -> Date
    let refreshInterval: TimeInterval = 5
    private let cached = Mutex<(keys: ConsoleKeys, read: Date)?>(nil)

    init(access: ConsoleAccess, source: ConsoleSessionSecret, console: ConsoleRepository, now: @escaping @Sendable () -> Date) {
        self.access = access
        self.source = source
        self.console = console
        self.now = now
        if case .given(let secret) = source {
            cached.withLock { $0 = (access.keys(secret: secret), .distantFuture) }
        }
    }

    func keys(logger: Logger) async throws -> ConsoleKeys {
        let now = self.now()
        if let hit = cached.withLock({ $0 }), hit.read == .distantFuture || abs(now.timeIntervalSince(hit.read)) < refreshInterval {
            return hit.keys
        }
        let row = try await console.keys(creatingWith: Self.randomSecret(), logger: logger)
        let keys = access.keys(secret: row.secret)
        cached.withLock { $0 = (keys, now) }
        return keys
    }

    /// Reads the secret again on next use (this process just replaced it).
    func forget() {
        cached.withLock { value in
            if value?.read != .distantFuture { value = nil }
        }
    }

    static func randomSecret() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
