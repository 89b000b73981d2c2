import Foundation
import Synchronization

/// Wrong secrets (console tokens, the admin token) by client address, and how long an address must wait before
/// its next try is even checked: pure state, the clock passed in.
///
/// The rules, in order:
/// - An address may be wrong ``Policy/freeFailures`` times; after that each try waits a backoff that doubles from
///   ``Policy/firstBackoff`` up to ``Policy/maximumBackoff`` after every further failure. A try made during the
///   backoff is refused without looking at the secret (so it tells nothing), and does not count.
/// - An address is forgotten ``Policy/forgetAfter`` after its last failure. A success does not clear it: the
///   viewer's token must not reset the count of guesses at the operator's.
/// - Over ``Policy/globalCeiling`` failures in the last minute from all addresses together (guessing from many
///   addresses), every address gets ``Policy/freeFailuresOverCeiling`` free failures only.
/// - An address with no pending backoff is always checked, over the ceiling or not: a correct secret from an
///   address that has not been guessing is never refused. One address guessing cannot lock anyone else out.
public struct GuessThrottle: Sendable {
    public struct Policy: Sendable {
        public var freeFailures = 5
        public var firstBackoff: TimeInterval = 1
        public var maximumBackoff: TimeInterval = 300
        public var forgetAfter: TimeInterval = 3600
        public var globalCeiling = 100
        public var freeFailuresOverCeiling = 1
        /// Addresses remembered at most; the longest quiet are forgotten first.
        public var maxAddresses = 100_000

        public init() {}
    }

    /// What to do with a try.
    public enum Verdict: Sendable, Equatable {
        /// Check the secret.
        case check
        /// Refuse without checking; the address may try again after this many whole seconds.
        case wait(seconds: Int)
    }

    struct Record: Sendable {
        var failures: Int
        var last: TimeInterval
        /// When the next try is checked again.
        var until: TimeInterval
    }

    public let policy: Policy
    private var records: [String: Record] = [:]
    /// Times of recent failures from every address, oldest first, for the global ceiling.
    private var recent: [TimeInterval] = []

    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// Whether `address`'s try at `now` (seconds on any monotonic clock) is checked.
    public func verdict(address: String, now: TimeInterval) -> Verdict {
        guard let record = records[address], now - record.last < policy.forgetAfter, record.until > now else { return .check }
        return .wait(seconds: max(1, Int((record.until - now).rounded(.up))))
    }

    /// Records a wrong secret from `address` at `now`.
    public mutating func failed(address: String, now: TimeInterval) {
        recent.removeAll { now - $0 >= 60 }
        recent.append(now)
        let overCeiling = recent.count > policy.globalCeiling
        var record = records[address].flatMap { now - $0.last < policy.forgetAfter ? $0 : nil } ?? Record(failures: 0, last: now, until: now)
        record.failures += 1
        record.last = now
        let free = overCeiling ? min(policy.freeFailures, policy.freeFailuresOverCeiling) : policy.freeFailures
        if record.failures >= free {
            let doublings = Double(min(record.failures - free, 30))
            record.until = now + min(policy.maximumBackoff, policy.firstBackoff * pow(2, doublings))
        }
        if records[address] == nil, records.count >= policy.maxAddresses { forgetQuietest(now: now) }
        records[address] = record
    }

    /// Addresses remembered now.
    public var count: Int { records.count }

    private mutating func forgetQuietest(now: TimeInterval) {
        records = records.filter { now - $0.value.last < policy.forgetAfter }
        guard records.count >= policy.maxAddresses else { return }
        let quietest = records.sorted { $0.value.last < $1.value.last }.prefix(records.count - policy.maxAddresses + 1)
        for (address, _) in quietest { records[address] = nil }
    }
}

/// A ``GuessThrottle`` shared by the requests of one process, on a monotonic clock (tests pass their own).
public final class GuessGuard: Sendable {
    private let throttle: Mutex<GuessThrottle>
    private let now: @Sendable () -> TimeInterval

    public init(policy: GuessThrottle.Policy = .init(), now: (@Sendable () -> TimeInterval)? = nil) {
        self.throttle = Mutex(GuessThrottle(policy: policy))
        self.now = now ?? GuessGuard.monotonicSeconds
    }

    /// Whether a try from `address` is checked now; nil address (no stamp: an in-process test) counts as one address.
    public func verdict(address: String?) -> GuessThrottle.Verdict {
        let now = self.now()
        return throttle.withLock { $0.verdict(address: address ?? "unknown", now: now) }
    }

    public func failed(address: String?) {
        let now = self.now()
        throttle.withLock { $0.failed(address: address ?? "unknown", now: now) }
    }

    private static let origin = ContinuousClock.now
    static let monotonicSeconds: @Sendable () -> TimeInterval = {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
