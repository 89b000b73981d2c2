import Foundation

/// When each cohort of a broadcast is woken, so that the content API sees a flat rate of wake-ups.
///
/// Cohorts are sent one after another; each gets a slot in the window proportional to its device count,
/// and within the whole window sends are evenly spaced at ``rate`` per second. The send instant of every
/// device follows from its cohort and its position in the cohort (``sendTime(cohort:ordinal:)``), so any
/// number of workers pacing against the plan keep the total rate, not a rate each.
public struct StaggerPlan: Codable, Sendable, Equatable {
    /// How fast to send: spread over a window, or at the content API's capacity.
    public enum Pace: Sendable, Equatable {
        /// Send every device within this many seconds.
        case window(TimeInterval)
        /// Send this many wake-ups per second; the window follows from the device count.
        case capacity(perSecond: Double)
    }

    public struct Cohort: Codable, Sendable, Equatable {
        public var index: Int
        public var devices: Int
        public var start: Date
        public var end: Date
        /// Sends per second within the cohort's slot (the plan's rate, for a non-empty cohort).
        public var rate: Double

        public init(index: Int, devices: Int, start: Date, end: Date, rate: Double) {
            self.index = index
            self.devices = devices
            self.start = start
            self.end = end
            self.rate = rate
        }
    }

    /// The first send: the requested start moved off the round minute.
    public var start: Date
    /// Seconds from the first send to the last.
    public var window: TimeInterval
    /// Sends per second across the whole window.
    public var rate: Double
    public var cohorts: [Cohort]
    /// Why the plan starts later or runs slower than asked (a shared content origin was busy); nil when it does not.
    public var note: String?

    /// Plans a broadcast.
    ///
    /// - Parameters:
    ///   - cohortCounts: devices per cohort, in cohort order (cohort `i` is ``DeviceToken/cohortKeyRange(index:count:)``).
    ///   - pace: the window or the capacity.
    ///   - requestedStart: when the broadcast should begin.
    ///   - jitter: the start moves later by up to this many seconds (at least one), chosen from `seed`, and
    ///     never lands on second :00, when every other app's scheduled jobs wake devices too.
    ///   - seed: makes the jitter repeatable, e.g. a hash of the edition id.
    ///   - avoidingQuarterHours: also keep the start 2 minutes away from :00, :15, :30 and :45
    ///     (``avoidingQuarterHours(_:margin:)``), as Firebase asks of senders to FCM.
    public init(
        cohortCounts: [Int],
        pace: Pace,
        requestedStart: Date,
        jitter: TimeInterval = 90,
        seed: UInt64,
        avoidingQuarterHours: Bool = false
    ) throws(StaggerPlanError) {
        guard jitter >= 1 else { throw .jitterTooSmall }
        let jittered = Self.jittered(requestedStart, jitter: jitter, seed: seed)
        try self.init(cohortCounts: cohortCounts, pace: pace, start: avoidingQuarterHours ? Self.avoidingQuarterHours(jittered) : jittered)
    }

    /// Plans a broadcast that starts exactly at `start`, e.g. a later wave of one whose start was jittered.
    public init(cohortCounts: [Int], pace: Pace, start: Date) throws(StaggerPlanError) {
        guard !cohortCounts.isEmpty else { throw .noCohorts }
        guard cohortCounts.allSatisfy({ $0 >= 0 }) else { throw .negativeCount }
        let total = cohortCounts.reduce(0, +)
        switch pace {
        case .window(let seconds):
            guard seconds > 0 else { throw .nonPositivePace }
            window = seconds
            rate = total == 0 ? 0 : Double(total) / seconds
        case .capacity(let perSecond):
            guard perSecond > 0 else { throw .nonPositivePace }
            rate = perSecond
            window = Double(total) / perSecond
        }
        self.start = start
        var cohorts: [Cohort] = []
        var before = 0
        for (index, count) in cohortCounts.enumerated() {
            let slotStart = rate == 0 ? start : start.addingTimeInterval(Double(before) / rate)
            let slotEnd = rate == 0 ? start : start.addingTimeInterval(Double(before + count) / rate)
            cohorts.append(Cohort(index: index, devices: count, start: slotStart, end: slotEnd, rate: count == 0 ? 0 : rate))
            before += count
        }
        self.cohorts = cohorts
    }

    /// Plans a follow-up wave `shift` seconds after the wave whose cohort slots are `previous` (wave 1's),
    /// at `rate`, so that no device is pushed sooner than `shift` after its send in that wave.
    ///
    /// Each cohort's slot ends where its slot in `previous` ended, moved by `shift`, and lasts
    /// `devices / rate`: a follow-up's audience is a subset of the earlier wave's (devices that answered
    /// drop out), so the devices after a given one in its cohort are no more than they were, and aligned at
    /// the end each device goes out no earlier than its earlier send plus `shift` (and at most a cohort slot
    /// later). Started at the shifted wave start instead, a smaller audience at the same rate is pushed
    /// sooner in the wave than before: a device late in wave 1 would get wave 4 within the hour of its
    /// first push, past iOS's 3 background pushes an hour. A cohort with more devices than before starts
    /// where the cohort before it ends, so that slots never overlap and the wave never sends faster than
    /// `rate`. Slots may leave gaps; ``start`` is the shifted start of `previous`.
    ///
    /// - Parameters:
    ///   - cohortCounts: devices per cohort, in cohort order, as many as `previous` has.
    ///   - previous: the cohorts of the wave this one follows, as planned.
    ///   - shift: seconds from that wave's start to this one's.
    public init(cohortCounts: [Int], rate: Double, following previous: [Cohort], shift: TimeInterval) throws(StaggerPlanError) {
        guard !cohortCounts.isEmpty else { throw .noCohorts }
        guard cohortCounts.count == previous.count else { throw .cohortsDiffer }
        guard cohortCounts.allSatisfy({ $0 >= 0 }) else { throw .negativeCount }
        guard rate > 0 else { throw .nonPositivePace }
        start = previous[0].start.addingTimeInterval(shift)
        self.rate = rate
        var cohorts: [Cohort] = []
        var free = start
        for (index, count) in cohortCounts.enumerated() {
            let length = Double(count) / rate
            let slotStart = max(free, previous[index].end.addingTimeInterval(shift - length))
            let slotEnd = slotStart.addingTimeInterval(length)
            cohorts.append(Cohort(index: index, devices: count, start: slotStart, end: slotEnd, rate: count == 0 ? 0 : rate))
            if count > 0 { free = slotEnd }
        }
        self.cohorts = cohorts
        window = free.timeIntervalSince(start)
    }

    /// When the `ordinal`-th device (from 0) of `cohort` is sent.
    public func sendTime(cohort: Int, ordinal: Int) -> Date {
        guard rate > 0 else { return start }
        return cohorts[cohort].start.addingTimeInterval(Double(ordinal) / rate)
    }

    /// Planned sends in each second of the window, from the first: the series a chart shows.
    public func sendsPerSecond() -> [Int] {
        let total = cohorts.reduce(0) { $0 + $1.devices }
        guard total > 0 else { return [] }
        var buckets = Array(repeating: 0, count: Int(window.rounded(.up)) + 1)
        for (offset, devices) in sendOffsets() {
            for ordinal in 0..<devices {
                buckets[min(Int((offset + Double(ordinal)) / rate), buckets.count - 1)] += 1
            }
        }
        while buckets.last == 0 { buckets.removeLast() }
        return buckets
    }

    /// Each cohort's first send as an offset from ``start`` in sends (seconds times ``rate``), with its
    /// devices. Where the cohorts tile the window (every plan but a follow-up with gaps) the offsets are the
    /// whole numbers of devices before each cohort, so a send's second is computed as `ordinal / rate`
    /// exactly as the plan was made.
    private func sendOffsets() -> [(offset: Double, devices: Int)] {
        var before = 0
        return cohorts.map { cohort in
            defer { before += cohort.devices }
            let tiled = rate == 0 || cohort.start == start.addingTimeInterval(Double(before) / rate)
            return (tiled ? Double(before) : cohort.start.timeIntervalSince(start) * rate, cohort.devices)
        }
    }

    /// Planned sends in consecutive buckets of `seconds`, from the plan's start, up to the last send.
    ///
    /// A device's send instant is its cohort's start plus `ordinal / rate` (``sendTime(cohort:ordinal:)``),
    /// so a bucket's count is exact; with one-second buckets this is ``sendsPerSecond()`` without walking every
    /// device.
    public func sends(perBucketOf seconds: TimeInterval) -> [Int] {
        precondition(seconds > 0, "a bucket must be longer than zero")
        let total = cohorts.reduce(0) { $0 + $1.devices }
        guard total > 0, rate > 0 else { return [] }
        let offsets = sendOffsets()
        var buckets: [Int] = []
        var counted = 0
        while counted < total {
            let next = Self.sent(before: Double(buckets.count + 1) * seconds, offsets: offsets, rate: rate)
            buckets.append(next - counted)
            counted = next
        }
        return buckets
    }

    /// How many sends happen strictly before `offset` seconds after the start: in each cohort, ordinals `k`
    /// with `(first + k) / rate < offset`, in the same arithmetic as ``sendsPerSecond()``.
    private static func sent(before offset: Double, offsets: [(offset: Double, devices: Int)], rate: Double) -> Int {
        offsets.reduce(0) { sent, cohort in
            let (first, devices) = cohort
            var count = min(devices, max(0, Int((offset * rate - first).rounded(.up))))
            while count > 0 && (first + Double(count - 1)) / rate >= offset { count -= 1 }
            while count < devices && (first + Double(count)) / rate < offset { count += 1 }
            return sent + count
        }
    }

    /// Firebase's scaling advice: no sending within 2 minutes of :00, :15, :30 and :45, when everyone's
    /// scheduled jobs send. A start closer than that to a quarter-hour mark moves to the mark plus the margin
    /// (and a second, off the round minute); any other start stays.
    public static func avoidingQuarterHours(_ start: Date, margin: TimeInterval = 120) -> Date {
        let seconds = start.timeIntervalSince1970
        let intoQuarter = seconds.truncatingRemainder(dividingBy: 900)
        let quarter = seconds - intoQuarter
        if intoQuarter < margin {
            return Date(timeIntervalSince1970: quarter + margin + 1)
        }
        if 900 - intoQuarter <= margin {
            return Date(timeIntervalSince1970: quarter + 900 + margin + 1)
        }
        return start
    }

    static func jittered(_ requested: Date, jitter: TimeInterval, seed: UInt64) -> Date {
        // SplitMix64: a good spread from consecutive seeds, the same on every machine.
        var z = seed &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        z ^= z >> 31
        let fraction = Double(z >> 11) / Double(1 << 53)
        var moved = requested.addingTimeInterval(1 + fraction * (jitter - 1)).timeIntervalSince1970.rounded(.down)
        if moved.truncatingRemainder(dividingBy: 60) == 0 { moved += 1 }
        return Date(timeIntervalSince1970: moved)
    }
}

/// A plan that cannot be made.
public enum StaggerPlanError: Error, Equatable, CustomStringConvertible {
    case noCohorts
    case negativeCount
    case nonPositivePace
    case jitterTooSmall
    case cohortsDiffer

    public var description: String {
        switch self {
        case .cohortsDiffer: "a follow-up wave needs as many cohorts as the wave it follows"
        case .noCohorts: "a plan needs at least one cohort"
        case .negativeCount: "a cohort cannot have a negative device count"
        case .nonPositivePace: "the window and the capacity must be positive"
        case .jitterTooSmall: "the jitter must be at least one second, to move the start off the round minute"
        }
    }
}
