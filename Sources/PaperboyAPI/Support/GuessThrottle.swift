import Foundation
import Synchronization

/// Wrong secrets (console tokens, the admin token) by client address, and how long an address must wait before
/// its next try is even checked: pure state, the clock passed in.
///
/// The rules, in order:
/// - An address may be wrong ``Policy/freeFailures`` times; after that each try waits a backoff that doubles from
///   ``Policy/firstBackoff`` up to ``Policy/maximumBackoff`` after every further failure. A try made during the
///   backoff is refused without looking at the secret (so it tells nothing), and does not count.
/// - A try is decided, checked and (when wrong) counted in one step (``attempt(address:now:isRight:)``, under one
///   lock in ``GuessGuard``): tries sent in parallel the moment a backoff ends get one check, not one each. A
///   success does not clear the count: the viewer's token must not reset the guesses at the operator's.
/// - An address is forgotten ``Policy/forgetAfter`` after its last failure.
/// - Over ``Policy/globalCeiling`` failures in the last minute from all addresses together (guessing from many
///   addresses), every address gets ``Policy/freeFailuresOverCeiling`` free failures only.
/// - An address with no pending backoff is always checked, over the ceiling or not: a correct secret from an
///   address that has not been guessing is never refused. One address guessing cannot lock anyone else out.
///
/// Every decision costs O(1) and the memory is bounded: at most ``Policy/maxAddresses`` addresses are remembered,
/// in two generations (an address is found in the newer or the older, and moved to the newer when it fails again;
/// when the newer holds half the maximum, the older is forgotten and the newer becomes it), so that the addresses
/// quiet longest are forgotten first without sorting anything; the last minute's failures are 60 counters of a
/// second each. Before, a new address at the maximum filtered and sorted all 100,000, and every failure scanned the
/// minute's list.
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
    /// The newer and the older generation of remembered addresses.
    private var newer: [String: Record] = [:]
    private var older: [String: Record] = [:]
    /// Failures from every address per second of the last minute: `perSecond[s % 60]` counts second `seconds[s % 60]`.
    private var perSecond = [Int](repeating: 0, count: 60)
    private var seconds = [Int](repeating: Int.min, count: 60)

    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// Whether `address`'s try at `now` (seconds on any monotonic clock) is checked.
    public func verdict(address: String, now: TimeInterval) -> Verdict {
        guard let record = record(address, now: now), record.until > now else { return .check }
        return .wait(seconds: max(1, Int((record.until - now).rounded(.up))))
    }

    /// What became of a try.
    public enum Outcome: Sendable, Equatable {
        /// Refused without checking: the address may try again after this many whole seconds.
        case wait(seconds: Int)
        /// Checked and right.
        case right
        /// Checked, wrong, and counted.
        case wrong
    }

    /// A try from `address` at `now`, decided, checked (`isRight`, the secret's comparison) and counted in one step.
    /// - Returns: what became of it, and the addresses its failure forgot (let go of them outside any lock).
    public mutating func attempt(address: String, now: TimeInterval, isRight: () -> Bool) -> (Outcome, Forgotten) {
        if case .wait(let seconds) = verdict(address: address, now: now) { return (.wait(seconds: seconds), Forgotten()) }
        if isRight() { return (.right, Forgotten()) }
        return (.wrong, failed(address: address, now: now))
    }

    /// Addresses a failure forgot (the older generation, when the newer was full): let go of them after the lock, so
    /// that freeing tens of thousands of records keeps no other request waiting.
    public struct Forgotten: Sendable {
        fileprivate var records: [String: Record] = [:]
        public var count: Int { records.count }
    }

    /// Records a wrong secret from `address` at `now`.
    /// - Returns: the addresses it forgot, to be let go of outside any lock.
    @discardableResult
    public mutating func failed(address: String, now: TimeInterval) -> Forgotten {
        let second = Int(now.rounded(.down))
        let slot = ((second % 60) + 60) % 60
        if seconds[slot] != second {
            seconds[slot] = second
            perSecond[slot] = 0
        }
        perSecond[slot] += 1
        var record = self.record(address, now: now) ?? Record(failures: 0, last: now, until: now)
        record.failures += 1
        record.last = now
        record.until = backoffEnd(failures: record.failures, now: now)
        return store(record, for: address)
    }

    /// Failures from every address in the minute up to `now`.
    func failuresInTheLastMinute(now: TimeInterval) -> Int {
        let second = Int(now.rounded(.down))
        var total = 0
        for slot in 0..<60 where seconds[slot] > second - 60 && seconds[slot] <= second { total += perSecond[slot] }
        return total
    }

    /// When the backoff after `failures` failures at `now` ends (`now` when they are still free).
    private func backoffEnd(failures: Int, now: TimeInterval) -> TimeInterval {
        let overCeiling = failuresInTheLastMinute(now: now) > policy.globalCeiling
        let free = overCeiling ? min(policy.freeFailures, policy.freeFailuresOverCeiling) : policy.freeFailures
        guard failures >= free else { return now }
        let doublings = Double(min(failures - free, 30))
        return now + min(policy.maximumBackoff, policy.firstBackoff * pow(2, doublings))
    }

    /// The address's record, unless forgotten.
    private func record(_ address: String, now: TimeInterval) -> Record? {
        guard let record = newer[address] ?? older[address], now - record.last < policy.forgetAfter else { return nil }
        return record
    }

    /// Keeps `record` in the newer generation; when that holds half the maximum, the older is forgotten (returned).
    private mutating func store(_ record: Record, for address: String) -> Forgotten {
        var forgotten = Forgotten()
        if newer[address] == nil {
            older[address] = nil
            if newer.count >= max(1, policy.maxAddresses / 2) {
                forgotten.records = older
                older = newer
                newer = [:]
                newer.reserveCapacity(max(1, policy.maxAddresses / 2))
            }
        }
        newer[address] = record
        return forgotten
    }

    /// Addresses remembered now.
    public var count: Int { newer.count + older.count }
}

/// A ``GuessThrottle`` shared by the requests of one process, on a monotonic clock (tests pass their own).
public final class GuessGuard: Sendable {
    private let throttle: Mutex<GuessThrottle>
    private let now: @Sendable () -> TimeInterval

    public init(policy: GuessThrottle.Policy = .init(), now: (@Sendable () -> TimeInterval)? = nil) {
        self.throttle = Mutex(GuessThrottle(policy: policy))
        self.now = now ?? GuessGuard.monotonicSeconds
    }

    /// A try from `address` (nil, no stamp: an in-process test, counts as one address), decided, checked with
    /// `isRight` (the secret's comparison: a few microseconds) and counted under one lock, so that no try slips in
    /// between another's check and its count.
    public func attempt(address: String?, isRight: () -> Bool) -> GuessThrottle.Outcome {
        let now = self.now()
        let (outcome, forgotten) = throttle.withLock { $0.attempt(address: address ?? "unknown", now: now, isRight: isRight) }
        // Freed here, after the lock (tens of thousands of records once every 50,000 new addresses).
        withExtendedLifetime(forgotten) {}
        return outcome
    }

    private static let origin = ContinuousClock.now
    static let monotonicSeconds: @Sendable () -> TimeInterval = {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
