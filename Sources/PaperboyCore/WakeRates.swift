import Foundation

/// Observed wake rates: receipts per accepted background push, over a window of broadcasts, by wave, platform,
/// device model family, OS major version, network, charging, Low Power Mode, Background App Refresh and the
/// device's local hour at the push.
///
/// No push service publishes how often a silent push actually runs the app; the receipts measure it for this
/// fleet. A rate from few pushes is noise, so groups under ``minimumPushes`` are merged into one `other`
/// group, and a group (`other` included) still under it shows its counts and no rate. Every rate comes with
/// its count and a Wilson 95 % interval.
public struct WakeRates: Codable, Equatable, Sendable {
    /// What a breakdown groups the pushes by.
    public enum Dimension: String, Codable, CaseIterable, Sendable {
        /// The push's wave: `1`, `2`, …
        case wave
        /// `ios` or `android` (`devices.platform`).
        case platform
        /// The device model's family: ``WakeRates/modelFamily(_:)``.
        case modelFamily
        /// The OS and its major version, `iOS 17` or `Android 14`: ``WakeRates/osMajor(platform:version:)``.
        case osMajor
        /// `wifi`, `cellular`, `none`, as the device reported them in its receipt for the publication's previous
        /// edition; `unknown` without one. The same for the three below.
        case network
        /// `true` or `false`: charging.
        case charging
        /// `true` or `false`: Low Power Mode on.
        case lowPowerMode
        /// `true` or `false`: Background App Refresh allowed.
        case backgroundRefresh
        /// `00` to `23`: the hour at the push in the device's time zone.
        case localHour

        /// Whether its groups are read in key order (waves, hours) rather than largest first.
        var isOrdinal: Bool { self == .wave || self == .localHour }
    }

    /// Pushes and wakes counted for one key of a dimension, as the ledger gives them; several counts with the
    /// same key (e.g. two models of one family) are added up.
    public struct Count: Equatable, Sendable {
        public var dimension: Dimension
        public var key: String
        public var pushes: Int
        public var wakes: Int

        public init(_ dimension: Dimension, _ key: String, pushes: Int, wakes: Int) {
            self.dimension = dimension
            self.key = key
            self.pushes = pushes
            self.wakes = wakes
        }
    }

    /// One group's rate: its counts always; the rate and its interval only when it has ``WakeRates/minimumPushes``.
    public struct Group: Codable, Equatable, Sendable {
        public var key: String
        /// Accepted background pushes.
        public var pushes: Int
        /// Of those, the pushes that ran the app (a receipt counted for them).
        public var wakes: Int
        /// `wakes / pushes`; nil when too few pushes to say.
        public var rate: Double?
        /// The Wilson 95 % interval of the rate; nil with it.
        public var low: Double?
        public var high: Double?
        /// For `other`: how many groups it merges.
        public var merged: Int?

        public init(key: String, pushes: Int, wakes: Int, minimumPushes: Int, merged: Int? = nil) {
            self.key = key
            self.pushes = pushes
            self.wakes = min(wakes, pushes)
            self.merged = merged
            if pushes >= max(1, minimumPushes) {
                let interval = WakeRates.wilson(wakes: self.wakes, pushes: pushes)
                rate = Double(self.wakes) / Double(pushes)
                low = interval.low
                high = interval.high
            }
        }

        /// Whether it has too few pushes for a rate.
        public var isTooSmall: Bool { rate == nil }
    }

    /// The groups of one dimension: ordered by key for waves and hours, largest first otherwise; `other` last.
    public struct Breakdown: Codable, Equatable, Sendable {
        public var dimension: Dimension
        public var groups: [Group]

        public init(dimension: Dimension, groups: [Group]) {
            self.dimension = dimension
            self.groups = groups
        }
    }

    /// The key of the group that merges the small ones.
    public static let otherKey = "other"
    /// The key for pushes whose value is not known (no model reported, no receipt with context, …).
    public static let unknownKey = "unknown"
    /// The default smallest group shown with a rate. At 200 pushes a 50 % rate's 95 % interval is ±7 points:
    /// enough to tell a group that wakes half the time from one that wakes a fifth of the time, no finer.
    public static let defaultMinimumPushes = 200

    /// The publication's slug, or nil for every publication.
    public var publication: String?
    public var days: Int
    /// The window: broadcasts created from `from` until `to`.
    public var from: Date
    public var to: Date
    public var minimumPushes: Int
    /// Every push of the window.
    public var total: Group
    /// One breakdown per dimension, in ``Dimension`` order.
    public var dimensions: [Breakdown]
    /// How the devices were sampled, when the window held more pushes than the report reads; nil when every
    /// push was counted.
    public var sample: Sample?

    /// The report from the ledger's counts: the policy, without I/O.
    ///
    /// - Parameters:
    ///   - total: all accepted background pushes of the window, and how many of them woke the app.
    ///   - counts: per dimension and key; every dimension's counts add up to `total` (a push has one key in
    ///     each), which this does not check.
    ///   - minimumPushes: groups with fewer pushes are merged into `other`; a group (or `other`) still below
    ///     it has no rate.
    ///   - sample: how the counted pushes were sampled; nil for all of the window's.
    public init(
        publication: String?,
        days: Int,
        from: Date,
        to: Date,
        total: (pushes: Int, wakes: Int),
        counts: [Count],
        minimumPushes: Int = WakeRates.defaultMinimumPushes,
        sample: Sample? = nil
    ) {
        self.sample = sample
        self.publication = publication
        self.days = days
        self.from = from
        self.to = to
        self.minimumPushes = minimumPushes
        self.total = Group(key: "all", pushes: total.pushes, wakes: total.wakes, minimumPushes: minimumPushes)
        self.dimensions = Dimension.allCases.map { dimension in
            Self.breakdown(dimension, counts.filter { $0.dimension == dimension }, minimumPushes: minimumPushes)
        }
    }

    /// One dimension's groups: equal keys added up, the small ones merged into `other`, then ordered.
    public static func breakdown(_ dimension: Dimension, _ counts: [Count], minimumPushes: Int) -> Breakdown {
        var sums: [String: (pushes: Int, wakes: Int)] = [:]
        for count in counts where count.pushes > 0 {
            sums[count.key, default: (0, 0)].pushes += count.pushes
            sums[count.key, default: (0, 0)].wakes += count.wakes
        }
        var groups: [Group] = []
        var other = (pushes: 0, wakes: 0, merged: 0)
        for (key, sum) in sums {
            if sum.pushes >= minimumPushes && key != otherKey {
                groups.append(Group(key: key, pushes: sum.pushes, wakes: sum.wakes, minimumPushes: minimumPushes))
            } else {
                other.pushes += sum.pushes
                other.wakes += sum.wakes
                other.merged += 1
            }
        }
        groups.sort { a, b in
            if dimension.isOrdinal { return ordinalOrder(a.key, b.key) }
            return a.pushes != b.pushes ? a.pushes > b.pushes : a.key < b.key
        }
        if other.merged > 0 {
            groups.append(Group(key: otherKey, pushes: other.pushes, wakes: other.wakes, minimumPushes: minimumPushes, merged: other.merged))
        }
        return Breakdown(dimension: dimension, groups: groups)
    }

    /// Numbers in numeric order, then any other key (`unknown`).
    static func ordinalOrder(_ a: String, _ b: String) -> Bool {
        switch (Int(a), Int(b)) {
        case let (x?, y?): x < y
        case (.some, nil): true
        case (nil, .some): false
        case (nil, nil): a < b
        }
    }

    /// The Wilson score interval at 95 % (z = 1.96) for `wakes` of `pushes`: unlike the normal approximation it
    /// stays within 0…1 and is honest near 0 % and 100 %, where wake rates of later waves and of dormant
    /// devices sit.
    public static func wilson(wakes: Int, pushes: Int) -> (low: Double, high: Double) {
        guard pushes > 0 else { return (0, 1) }
        let z = 1.959_963_984_540_054
        let n = Double(pushes)
        let p = Double(min(max(wakes, 0), pushes)) / n
        let denominator = 1 + z * z / n
        let center = (p + z * z / (2 * n)) / denominator
        let half = z * ((p * (1 - p) / n + z * z / (4 * n * n)).squareRoot()) / denominator
        return (max(0, center - half), min(1, center + half))
    }
}
