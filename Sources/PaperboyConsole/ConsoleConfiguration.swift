import Foundation
import PaperboyCore

/// How the console is served.
public struct ConsoleConfiguration: Sendable {
    /// The tokens; ``ConsoleAccess/disabled`` serves a page that says how to enable the console.
    public var access: ConsoleAccess
    /// Whether the session cookie is `Secure` (sent over HTTPS only): true unless the server listens on loopback
    /// alone (``servesLoopbackOnly(host:)``), where browsers treat plain HTTP as secure and no network sees it.
    public var secureCookies: Bool
    /// How long a sign-in lasts.
    public var sessionLifetime: TimeInterval = 12 * 3600
    /// How often the sampler records each running broadcast's counters (one process of the cluster does).
    public var sampleInterval: Duration = .seconds(5)
    /// How often a live page's stream asks whether a new sample is there (one primary-key probe).
    public var liveInterval: Duration = .seconds(2)
    /// How long a live stream lasts before the browser reconnects (so that a stop never waits for one).
    public var liveStreamLifetime: Duration = .seconds(300)
    /// Samples older than this are deleted by the sampler.
    public var sampleRetention: TimeInterval = 8 * 86_400
    /// The shortest wave interval the start form accepts: 20 minutes except where time is compressed (the demo).
    public var minimumWaveInterval: TimeInterval = BroadcastOptions.minimumWaveInterval
    /// The zone the pages show times in.
    public var timeZone: TimeZone = .current
    /// Failed sign-ins allowed per minute in this process before more answer 429: tokens are found only by trying.
    public var signInAttemptsPerMinute = 10
    /// The clock: tests and the demo pass their own.
    public var now: @Sendable () -> Date = { Date() }

    public init(access: ConsoleAccess, secureCookies: Bool) {
        self.access = access
        self.secureCookies = secureCookies
    }

    /// Whether `host` (the address the server listens on) is loopback only: `127.x.x.x`, `::1` or `localhost`.
    public static func servesLoopbackOnly(host: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
