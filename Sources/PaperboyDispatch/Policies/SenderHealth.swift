import Foundation
import PaperboyCore

/// What one worker cannot send, and since when: the apps and providers whose credentials it cannot load or that a
/// provider refused from it. It leaves their batches to the other workers for a backoff (15 s, doubling up to a
/// minute), per provider: an FCM problem holds back none of the app's APNs devices. Pure; ``WorkerMachine`` keeps it,
/// the dispatcher shows it (`/health/ready` of a worker, `paperboy_worker_unable_to_send`).
public struct SenderHealth: Sendable, Equatable {
    /// The shortest and longest wait before a worker tries an app and provider it could not send through again.
    public static let initialBackoff: TimeInterval = 15
    public static let maximumBackoff: TimeInterval = 60

    /// One app and provider this worker cannot send through.
    public struct Problem: Sendable, Equatable {
        public var appID: Int
        public var provider: PushProvider
        /// `load` (the credentials cannot be loaded here) or `refused` (the provider refused them).
        public var code: String
        public var reason: String
        /// On the worker's monotonic clock.
        public var since: TimeInterval
        /// When the app's batches are taken for this provider again.
        public var retryAt: TimeInterval
        /// How many tries failed in a row.
        public var failures: Int
    }

    struct Key: Hashable, Sendable {
        var appID: Int
        var provider: PushProvider
    }

    var problems: [Key: Problem] = [:]
    /// The providers each app has credentials for, as last seen: an app is left to others only when every one fails.
    var appProviders: [Int: Set<PushProvider>] = [:]
    /// When this worker last told the database it sent for an app through a provider.
    var reportedSent: [Key: TimeInterval] = [:]

    public init() {}

    /// Remembers which providers `appID` has credentials for.
    public mutating func saw(appID: Int, providers: Set<PushProvider>) {
        appProviders[appID] = providers
    }

    /// A try failed: the app and provider wait out a backoff twice the last (``initialBackoff`` first). A failure
    /// within a backoff (a batch leased before the first failure was known) changes nothing.
    /// - Returns: the problem as it now stands, and whether it is news (a new backoff: log it, report it).
    public mutating func failed(appID: Int, provider: PushProvider, code: String, reason: String, now: TimeInterval) -> (Problem, news: Bool) {
        let key = Key(appID: appID, provider: provider)
        if let known = problems[key], known.retryAt > now { return (known, false) }
        let failures = (problems[key]?.failures ?? 0) + 1
        let backoff = min(Self.maximumBackoff, Self.initialBackoff * pow(2, Double(failures - 1)))
        let problem = Problem(
            appID: appID,
            provider: provider,
            code: code,
            reason: reason,
            since: problems[key]?.since ?? now,
            retryAt: now + backoff,
            failures: failures
        )
        problems[key] = problem
        return (problem, true)
    }

    /// Pushes of the app went out through the provider: its problem is over.
    /// - Returns: the problem that ended, if there was one.
    public mutating func sent(appID: Int, provider: PushProvider) -> Problem? {
        problems.removeValue(forKey: Key(appID: appID, provider: provider))
    }

    /// Forgets problems not confirmed for a whole ``maximumBackoff`` after their backoff ended: the worker had no
    /// batch of the app since, so it no longer knows that it cannot send (a worker's readiness must not stay down
    /// for an app it no longer sees).
    /// - Returns: the problems forgotten.
    public mutating func expire(now: TimeInterval) -> [Problem] {
        let old = problems.filter { $0.value.retryAt + Self.maximumBackoff <= now }
        for key in old.keys { problems[key] = nil }
        return Array(old.values)
    }

    /// Whether to tell the database that this worker sent for the app through the provider: at most every
    /// `interval` seconds, and at once after a problem.
    public mutating func shouldReportSent(appID: Int, provider: PushProvider, now: TimeInterval, interval: TimeInterval = 30) -> Bool {
        let key = Key(appID: appID, provider: provider)
        if let last = reportedSent[key], now - last < interval { return false }
        reportedSent[key] = now
        return true
    }

    /// The apps whose new batches this worker leaves to others now: every provider it knows the app has is in a backoff.
    public func excludedApps(now: TimeInterval) -> [Int] {
        let waiting = Dictionary(grouping: problems.values.filter { $0.retryAt > now }, by: \.appID).mapValues { Set($0.map(\.provider)) }
        return waiting.filter { app, providers in (appProviders[app] ?? providers).isSubset(of: providers) }.keys.sorted()
    }

    /// The apps and providers in a backoff now: batches given back for them are left to others.
    public func excludedProviders(now: TimeInterval) -> [AppProvider] {
        problems.values.filter { $0.retryAt > now }.map { AppProvider(appID: $0.appID, provider: $0.provider) }.sorted()
    }

    /// When the first backoff ends, if one runs.
    public func nextRetry(now: TimeInterval) -> TimeInterval? {
        problems.values.map(\.retryAt).filter { $0 > now }.min()
    }

    /// Every current problem, oldest first.
    public var all: [Problem] {
        problems.values.sorted { ($0.since, $0.appID, $0.provider.rawValue) < ($1.since, $1.appID, $1.provider.rawValue) }
    }
}

/// An app and one of its providers.
public struct AppProvider: Hashable, Sendable, Comparable {
    public var appID: Int
    public var provider: PushProvider

    public init(appID: Int, provider: PushProvider) {
        self.appID = appID
        self.provider = provider
    }

    public static func < (lhs: AppProvider, rhs: AppProvider) -> Bool {
        (lhs.appID, lhs.provider.rawValue) < (rhs.appID, rhs.provider.rawValue)
    }
}
