import Foundation
import Metrics
import PaperboyCore
import Synchronization

/// What this worker cannot send, and since when: the apps whose credentials it cannot load or that a provider
/// refused from it. It leaves their batches to the other workers for a backoff (15 s, doubling up to a minute),
/// reports itself unready (`/health/ready` answers 503 with the reasons), counts them in
/// `paperboy_worker_unable_to_send{app, provider, reason}`, and logs once per backoff, not once per send.
///
/// The decisions are ``State``'s, pure; this class holds it under a lock and keeps the gauge.
public final class SenderHealth: Sendable {
    /// The shortest and longest wait before a worker tries an app it could not send for again.
    public static let initialBackoff: TimeInterval = 15
    public static let maximumBackoff: TimeInterval = 60

    /// One app and provider this worker cannot send through.
    public struct Problem: Sendable, Equatable {
        public var appID: Int
        public var provider: PushProvider
        /// `load` (the credentials cannot be loaded here) or `refused` (the provider refused them).
        public var code: String
        public var reason: String
        /// On the worker's monotonic clock (``BroadcastClock/monotonic``).
        public var since: TimeInterval
        /// When the app's batches are leased again.
        public var retryAt: TimeInterval
        /// How many tries failed in a row.
        public var failures: Int
    }

    public struct State: Sendable, Equatable {
        struct Key: Hashable, Sendable {
            var appID: Int
            var provider: PushProvider
        }

        var problems: [Key: Problem] = [:]
        /// When this worker last told the database it sent for an app through a provider.
        var reportedSent: [Key: TimeInterval] = [:]

        public init() {}

        /// A try failed: the app waits out a backoff twice the last (``initialBackoff`` first). A failure within a
        /// backoff (a batch leased before the first failure was known) changes nothing.
        /// - Returns: the problem as it now stands, and whether it is news (a new backoff: log it, report it).
        public mutating func failed(appID: Int, provider: PushProvider, code: String, reason: String, now: TimeInterval) -> (Problem, news: Bool) {
            let key = Key(appID: appID, provider: provider)
            if let known = problems[key], known.retryAt > now { return (known, false) }
            let failures = (problems[key]?.failures ?? 0) + 1
            let backoff = min(SenderHealth.maximumBackoff, SenderHealth.initialBackoff * pow(2, Double(failures - 1)))
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

        /// A batch of the app went out through the provider: its problem is over.
        /// - Returns: the problem that ended, if there was one.
        public mutating func sent(appID: Int, provider: PushProvider) -> Problem? {
            problems.removeValue(forKey: Key(appID: appID, provider: provider))
        }

        /// Whether to tell the database that this worker sent for the app through the provider: at most every
        /// `interval` seconds, and at once after a problem.
        public mutating func shouldReportSent(appID: Int, provider: PushProvider, now: TimeInterval, interval: TimeInterval = 30) -> Bool {
            let key = Key(appID: appID, provider: provider)
            if let last = reportedSent[key], now - last < interval { return false }
            reportedSent[key] = now
            return true
        }

        /// The apps whose batches this worker leaves to others now.
        public func excludedApps(now: TimeInterval) -> [Int] {
            Array(Set(problems.values.filter { $0.retryAt > now }.map(\.appID))).sorted()
        }

        /// Every current problem, oldest first.
        public var all: [Problem] {
            problems.values.sorted { ($0.since, $0.appID, $0.provider.rawValue) < ($1.since, $1.appID, $1.provider.rawValue) }
        }
    }

    private let state = Mutex(State())

    public init() {}

    func failed(appID: Int, provider: PushProvider, code: String, reason: String, now: TimeInterval) -> (Problem, news: Bool) {
        let (problem, news) = state.withLock { $0.failed(appID: appID, provider: provider, code: code, reason: reason, now: now) }
        gauge(problem).record(1)
        return (problem, news)
    }

    func sent(appID: Int, provider: PushProvider) -> Problem? {
        let ended = state.withLock { $0.sent(appID: appID, provider: provider) }
        if let ended { gauge(ended).record(0) }
        return ended
    }

    func shouldReportSent(appID: Int, provider: PushProvider, now: TimeInterval) -> Bool {
        state.withLock { $0.shouldReportSent(appID: appID, provider: provider, now: now) }
    }

    func excludedApps(now: TimeInterval) -> [Int] {
        state.withLock { $0.excludedApps(now: now) }
    }

    /// When the first app left to others is tried again, if one is.
    func nextRetry(now: TimeInterval) -> TimeInterval? {
        state.withLock { $0.all.map(\.retryAt).filter { $0 > now }.min() }
    }

    /// Why this worker is not ready, one line per app and provider it cannot send through; empty when it is ready.
    public var problems: [String] {
        state.withLock { $0.all }.map { "app \($0.appID) \($0.provider.displayName): \($0.reason)" }
    }

    private func gauge(_ problem: Problem) -> Gauge {
        Gauge(
            label: "paperboy_worker_unable_to_send",
            dimensions: [("app", "\(problem.appID)"), ("provider", problem.provider.rawValue), ("reason", problem.code)]
        )
    }
}
