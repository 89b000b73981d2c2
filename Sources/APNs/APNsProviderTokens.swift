import Foundation

/// The provider token (JWT) of one signing key, shared by every connection and task.
///
/// APNs answers `429 TooManyProviderTokenUpdates` to tokens refreshed more often than every 20 minutes and
/// `403 ExpiredProviderToken` to tokens older than 60 minutes. So a token is reused for
/// ``Configuration/refreshAfter`` (50 minutes), and after an `ExpiredProviderToken` it is replaced at once,
/// but never sooner than ``Configuration/minimumInterval`` (20 minutes) after it was made: a rejection of a
/// token younger than that means the clocks disagree, and refreshing would only add
/// `TooManyProviderTokenUpdates`. Many tasks asking at once get the same token: this is an actor.
///
/// The clock is injected so that tests step through an hour without sleeping.
public actor APNsProviderTokens<C: Clock> where C.Duration == Duration {
    public struct Configuration: Sendable {
        public var refreshAfter: Duration = .seconds(50 * 60)
        public var minimumInterval: Duration = .seconds(20 * 60)
        public init() {}
    }

    private struct Issued {
        var token: String
        var at: C.Instant
        var rejected = false
    }

    private let key: APNsSigningKey
    private let clock: C
    private let wallTime: @Sendable () -> Date
    private let configuration: Configuration
    private var issued: Issued?
    /// How many tokens were made: for metrics and tests.
    public private(set) var refreshes = 0

    public init(key: APNsSigningKey, clock: C, configuration: Configuration = .init(), wallTime: @escaping @Sendable () -> Date = Date.init) {
        self.key = key
        self.clock = clock
        self.configuration = configuration
        self.wallTime = wallTime
    }

    /// The token to send now, made anew when the current one is due.
    public func current() throws -> String {
        let now = clock.now
        if let issued {
            let age = issued.at.duration(to: now)
            let due = age >= configuration.refreshAfter || (issued.rejected && age >= configuration.minimumInterval)
            if !due { return issued.token }
        }
        let token = try key.providerToken(issuedAt: wallTime())
        issued = Issued(token: token, at: now)
        refreshes += 1
        return token
    }

    /// Records that APNs answered `ExpiredProviderToken` to `token`. Rejections of an older token (one
    /// already replaced) change nothing, so a burst of failures leads to one refresh.
    public func rejected(_ token: String) {
        guard issued?.token == token else { return }
        issued?.rejected = true
    }
}
