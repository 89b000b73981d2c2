import Foundation
import PaperboyAPI
import PaperboyCore

/// How the console is served.
public struct ConsoleConfiguration: Sendable {
    /// The tokens; ``ConsoleAccess/disabled`` serves a page that says how to enable the console.
    public var access: ConsoleAccess
    /// Where the secret the CSRF keys and the sessions' token marks are derived from comes from.
    public var sessionSecret: ConsoleSessionSecret = .database
    /// Where browsers reach the console (`--public-url`): decides the cookie's `Secure` and `__Host-`, the origin
    /// forms must come from, `Strict-Transport-Security` and absolute links. Nil: read from each request (its
    /// `Host`, and `X-Forwarded-Proto` from a proxy).
    public var publicURL: ConsolePublicURL?
    /// Whether the listener serves HTTPS itself (`--tls-cert`).
    public var servesTLS = false
    /// How long a sign-in lasts at most.
    public var sessionLifetime: TimeInterval = 12 * 3600
    /// A session unused for this long ends (an open live page keeps its session in use).
    public var idleTimeout: TimeInterval = 30 * 60
    /// How often the sampler records each running broadcast's counters (one process of the cluster does).
    public var sampleInterval: Duration = .seconds(5)
    /// How often a live page's stream asks whether a new sample is there (one primary-key probe).
    public var liveInterval: Duration = .seconds(2)
    /// How long a live stream lasts before the browser reconnects (so that a stop never waits for one).
    public var liveStreamLifetime: Duration = .seconds(300)
    /// How often a live stream checks that its session was not signed out meanwhile.
    public var liveSessionCheck: Duration = .seconds(10)
    /// Live streams one session may hold open at once in this process; more answer 429.
    public var liveStreamsPerSession = 4
    /// Live streams one client address may hold open at once in this process, all its sessions together (an office
    /// behind one address: several operators); more answer 429.
    public var liveStreamsPerAddress = 20
    /// Live streams open at once in this process, every session's together; more answer 503 (a viewer who signs in
    /// again and again gets new sessions, but not more than these). 200 streams probe the database 100 times a second.
    public var liveStreamsInAll = 200
    /// How long the plan page's audience counts are kept, per publication, environment and cohorts.
    public var planCountsTimeToLive: TimeInterval = 60
    /// Samples older than this are deleted by the sampler.
    public var sampleRetention: TimeInterval = 8 * 86_400
    /// The shortest wave interval the start form accepts: 20 minutes except where time is compressed (the demo).
    public var minimumWaveInterval: TimeInterval = BroadcastOptions.minimumWaveInterval
    /// The zone the pages show times in.
    public var timeZone: TimeZone = .current
    /// Wrong tokens per client address before it waits, and the backoff (see ``GuessThrottle``).
    public var signInPolicy = GuessThrottle.Policy()
    /// The clock: tests and the demo pass their own.
    public var now: @Sendable () -> Date = { Date() }
    /// The sign-in limiter's clock, in seconds: nil is the process's monotonic clock (a step of the wall clock, by
    /// NTP or by hand, neither frees a guesser early nor keeps an operator waiting). Tests pass their own.
    public var limiterClock: (@Sendable () -> TimeInterval)? = nil

    public init(access: ConsoleAccess, publicURL: ConsolePublicURL? = nil, sessionSecret: ConsoleSessionSecret = .database) {
        self.access = access
        self.publicURL = publicURL
        self.sessionSecret = sessionSecret
    }
}

/// Where the secret the console's keys are derived from comes from.
public enum ConsoleSessionSecret: Sendable {
    /// `PAPERBOY_CONSOLE_SESSION_KEY` (or `…_FILE`): the same for every process given it; changing it signs everyone
    /// out.
    case given([UInt8])
    /// Made by the first `paperboy serve` and kept in the database (`console_keys`), so that replicas share it;
    /// "sign out everyone" replaces it.
    case database

    /// The variable of ``given(_:)``.
    public static let variable = "PAPERBOY_CONSOLE_SESSION_KEY"
    /// The shortest key accepted, in characters: `openssl rand -hex 32` makes 64.
    public static let minimumLength = 32

    /// The secret of a key's text.
    /// - Throws: ``ConsoleAccessError`` naming the variable when it is too short.
    public static func given(text: String) throws(ConsoleAccessError) -> ConsoleSessionSecret {
        let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard key.count >= minimumLength, Set(key).count >= 8 else {
            throw ConsoleAccessError(
                variable: variable,
                message: "the key must be at least \(minimumLength) random characters (e.g. `openssl rand -hex 32`)"
            )
        }
        return .given(Array(key.utf8))
    }
}
