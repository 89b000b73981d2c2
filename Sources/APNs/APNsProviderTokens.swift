import Foundation
import Synchronization

/// Where the client gets the provider token for a request, and tells of tokens APNs refused.
public protocol APNsProviderTokenSource: Sendable {
    /// The token to send now.
    func current() throws -> String
    /// APNs answered `ExpiredProviderToken` to `token`.
    func rejected(_ token: String)
    /// The signing key's id, for logs and metrics (never the key).
    var keyID: String { get }
}

/// The provider token (JWT) of one signing key, shared by every connection and task.
///
/// APNs answers `429 TooManyProviderTokenUpdates` to tokens refreshed more often than every 20 minutes and
/// `403 ExpiredProviderToken` to tokens older than 60 minutes. So a token is reused for
/// ``Configuration/refreshAfter`` (50 minutes), and after an `ExpiredProviderToken` it is replaced at once,
/// but never sooner than ``Configuration/minimumInterval`` (20 minutes) after it was made: a rejection of a
/// token younger than that means the clocks disagree, and refreshing would only add
/// `TooManyProviderTokenUpdates`. Many tasks asking at once get the same token: the state is behind a
/// mutex, held only to compare an age (signing, rare, happens under it so that two tasks never both sign).
///
/// The clock is injected so that tests step through an hour without sleeping.
public final class APNsProviderTokens<C: Clock>: APNsProviderTokenSource where C.Duration == Duration {
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

    private struct State {
        var issued: Issued?
        var refreshes = 0
    }

    private let key: APNsSigningKey
    private let clock: C
    private let wallTime: @Sendable () -> Date
    private let configuration: Configuration
    private let state = Mutex(State())
    /// Called after each new token, e.g. to count refreshes in metrics.
    private let onRefresh: @Sendable () -> Void

    /// How many tokens were made: for metrics and tests.
    public var refreshes: Int { state.withLock { $0.refreshes } }
    public var keyID: String { key.keyID }

    public init(
        key: APNsSigningKey,
        clock: C,
        configuration: Configuration = .init(),
        wallTime: @escaping @Sendable () -> Date = Date.init,
        onRefresh: @escaping @Sendable () -> Void = {}
    ) {
        self.key = key
        self.clock = clock
        self.configuration = configuration
        self.wallTime = wallTime
        self.onRefresh = onRefresh
    }

    /// The token to send now, made anew when the current one is due.
    public func current() throws -> String {
        let (token, refreshed) = try state.withLock { state -> (String, Bool) in
            let now = clock.now
            if let issued = state.issued {
                let age = issued.at.duration(to: now)
                let due = age >= configuration.refreshAfter || (issued.rejected && age >= configuration.minimumInterval)
                if !due { return (issued.token, false) }
            }
            let token = try key.providerToken(issuedAt: wallTime())
            state.issued = Issued(token: token, at: now)
            state.refreshes += 1
            return (token, true)
        }
        if refreshed { onRefresh() }
        return token
    }

    /// Records that APNs answered `ExpiredProviderToken` to `token`. Rejections of an older token (one
    /// already replaced) change nothing, so a burst of failures leads to one refresh.
    public func rejected(_ token: String) {
        state.withLock { state in
            guard state.issued?.token == token else { return }
            state.issued?.rejected = true
        }
    }
}
