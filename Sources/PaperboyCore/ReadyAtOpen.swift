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

extension ReadyAtOpen {
    /// The openers' waits kept as counts per bucket (the ready-at-open tallies, migration 0041), so that a status
    /// reads a few dozen rows instead of every open: bucket `b` holds the waits `w` (seconds) with
    /// `floor(ln(1 + w) * 20) = b`: on the scale of `1 + w`, each bucket is 5.1 % wide, and a percentile read from them
    /// (the middle of the bucket holding it) is within 2.6 % of `1 s +` the waits' own. 228 buckets cover a day.
    public enum WaitBuckets {
        /// Buckets per e-fold of `1 + w`.
        public static let perEFold = 20.0

        /// The bucket of a wait in seconds (a negative wait, a receipt stored just before the open that did not see
        /// it, is 0), as ``sql(wait:)`` computes it in the database.
        public static func bucket(ofSeconds wait: Double) -> Int {
            Int((Foundation.log1p(max(0, wait)) * perEFold).rounded(.down))
        }

        /// The wait a bucket stands for: its middle on the buckets' scale.
        public static func seconds(ofBucket bucket: Int) -> Double {
            Foundation.expm1((Double(bucket) + 0.5) / perEFold)
        }

        /// ``bucket(ofSeconds:)`` in SQL, for a wait in seconds (`float8`).
        public static func sql(wait: String) -> String {
            "floor(ln(1 + greatest(0, \(wait))) * \(perEFold))::integer"
        }

        /// The nearest-rank percentile `p` of waits counted by bucket (buckets ascending, counts positive): the
        /// wait of the bucket holding the rank. nil without waits.
        public static func percentile(_ p: Double, buckets: [Int], counts: [Int]) -> Double? {
            let total = counts.reduce(0, +)
            guard total > 0 else { return nil }
            let rank = max(1, Int((p * Double(total)).rounded(.up)))
            var seen = 0
            for (bucket, count) in zip(buckets, counts) {
                seen += count
                if seen >= rank { return seconds(ofBucket: bucket) }
            }
            return buckets.last.map(seconds(ofBucket:))
        }
    }

    /// The figures from the tallies: opens that found the edition held, opens that did not, and the waits of those
    /// whose receipt came since, counted by ``WaitBuckets`` bucket (ascending).
    public init(ready: Int, notReady: Int, waitBuckets buckets: [Int], waitCounts counts: [Int]) {
        let waited = counts.reduce(0, +)
        self.init(
            opens: ready + notReady,
            ready: ready,
            waited: waited,
            medianWait: WaitBuckets.percentile(0.5, buckets: buckets, counts: counts),
            p90Wait: WaitBuckets.percentile(0.9, buckets: buckets, counts: counts),
            stillWaiting: max(0, notReady - waited)
        )
    }
}
