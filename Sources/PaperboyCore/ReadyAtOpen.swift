import Foundation

/// Whether the edition was on the phone when the reader looked: of a broadcast's targets that opened the app
/// after the edition was published and before its deadline, the share whose first such open found it held (a
/// successful receipt stored before the open), and how long the others waited for it.
///
/// Small groups follow the wake rates' rule: no share from fewer than ``WakeRates/defaultMinimumPushes`` (200)
/// first opens, and no waiting times from fewer than that many waiters.
public struct ReadyAtOpen: Sendable, Equatable, Codable {
    /// First opens after the edition's publication, before its deadline, by the broadcast's targets.
    public var opens: Int
    /// Of those, the ones that found the edition held.
    public var ready: Int
    /// Openers who did not find it and whose receipt came afterwards: their waits.
    public var waited: Int
    /// Openers who did not find it and have no receipt yet (or never got it before the deadline).
    public var stillWaiting: Int
    /// ``ready`` / ``opens``; nil under ``minimum`` opens.
    public var share: Double?
    /// The median and the 90th percentile of the waits, in minutes; nil under ``minimum`` waiters.
    public var medianWaitMinutes: Double?
    public var p90WaitMinutes: Double?

    /// The smallest group with a share or waiting times.
    public static let minimum = WakeRates.defaultMinimumPushes

    /// The figures from the counts: the small-group rule, without I/O.
    /// - Parameters:
    ///   - waited: openers who did not find the edition and whose receipt came afterwards;
    ///   - medianWait, p90Wait: their waits' median and 90th percentile, in seconds.
    public init(
        opens: Int,
        ready: Int,
        waited: Int,
        medianWait: Double?,
        p90Wait: Double?,
        stillWaiting: Int
    ) {
        self.opens = opens
        self.ready = ready
        self.waited = waited
        self.stillWaiting = stillWaiting
        share = opens >= Self.minimum ? Double(ready) / Double(opens) : nil
        if waited >= Self.minimum {
            medianWaitMinutes = medianWait.map { $0 / 60 }
            p90WaitMinutes = p90Wait.map { $0 / 60 }
        }
    }

    /// The figures from every opener's wait: ``init(opens:ready:waited:medianWait:p90Wait:stillWaiting:)`` with
    /// the nearest-rank percentiles of `waits` (seconds, any order).
    public init(opens: Int, ready: Int, waits: [Double], stillWaiting: Int) {
        let sorted = waits.sorted()
        self.init(
            opens: opens,
            ready: ready,
            waited: sorted.count,
            medianWait: sorted.isEmpty ? nil : Self.percentile(sorted, 0.5),
            p90Wait: sorted.isEmpty ? nil : Self.percentile(sorted, 0.9),
            stillWaiting: stillWaiting
        )
    }

    /// The nearest-rank percentile of sorted values.
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[max(0, min(sorted.count - 1, rank - 1))]
    }
}
