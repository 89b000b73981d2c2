import Foundation
import PaperboyCore
import Testing

@Suite("Stagger plans")
struct StaggerPlanTests {
    static let five = Date(timeIntervalSince1970: 1_795_377_600)  // a round 05:00:00

    /// Cohort counts of real tokens: 100,000 generated devices split into `cohorts`.
    static func counts(devices: Int, cohorts: Int) -> [Int] {
        var counts = Array(repeating: 0, count: cohorts)
        for index in 0..<devices {
            var bytes = Array(repeating: UInt8(7), count: 32)
            withUnsafeBytes(of: UInt32(index).bigEndian) { bytes.replaceSubrange(28..<32, with: $0) }
            counts[DeviceToken(bytes: bytes).cohort(count: cohorts)] += 1
        }
        return counts
    }

    @Test("the per-second send rate is flat across the window (peak / mean ≤ 1.01)")
    func flatness() throws {
        let counts = Self.counts(devices: 100_000, cohorts: 12)
        #expect(counts.reduce(0, +) == 100_000, "every device is in exactly one cohort")
        let plan = try StaggerPlan(cohortCounts: counts, pace: .window(300), requestedStart: Self.five, seed: 42)
        let perSecond = plan.sendsPerSecond()
        #expect(perSecond.reduce(0, +) == 100_000)
        let full = perSecond.dropLast()  // the last second is partial
        let mean = Double(full.reduce(0, +)) / Double(full.count)
        #expect(Double(full.max()!) / mean <= 1.01)
        #expect(abs(plan.rate - 100_000.0 / 300) < 0.001)
    }

    @Test("cohort slots tile the window in order, each proportional to its devices")
    func slots() throws {
        let plan = try StaggerPlan(cohortCounts: [100, 300, 0, 600], pace: .window(100), requestedStart: Self.five, seed: 1)
        #expect(plan.cohorts.map(\.devices) == [100, 300, 0, 600])
        #expect(plan.cohorts[0].start == plan.start)
        for (previous, next) in zip(plan.cohorts, plan.cohorts.dropFirst()) { #expect(previous.end == next.start) }
        #expect(plan.cohorts[1].end.timeIntervalSince(plan.cohorts[1].start) == 30)
        #expect(plan.cohorts[2].rate == 0)
        #expect(plan.cohorts[3].end.timeIntervalSince(plan.start) == 100)
        #expect(plan.sendTime(cohort: 3, ordinal: 0) == plan.cohorts[3].start)
        #expect(plan.sendTime(cohort: 1, ordinal: 150).timeIntervalSince(plan.cohorts[1].start) == 15)
    }

    @Test("capacity gives the window and the window gives the rate")
    func capacityAndWindow() throws {
        let byCapacity = try StaggerPlan(cohortCounts: [6_000, 6_000], pace: .capacity(perSecond: 2_000), requestedStart: Self.five, seed: 3)
        #expect(byCapacity.window == 6)
        let byWindow = try StaggerPlan(cohortCounts: [6_000, 6_000], pace: .window(6), requestedStart: Self.five, seed: 3)
        #expect(byWindow.rate == 2_000)
        #expect(throws: StaggerPlanError.nonPositivePace) {
            try StaggerPlan(cohortCounts: [1], pace: .capacity(perSecond: 0), requestedStart: Self.five, seed: 3)
        }
        #expect(throws: StaggerPlanError.noCohorts) { try StaggerPlan(cohortCounts: [], pace: .window(60), requestedStart: Self.five, seed: 3) }
    }

    @Test("the start moves off the round minute, by the same amount for the same seed")
    func jitter() throws {
        var starts = Set<Date>()
        for seed in UInt64(0)..<500 {
            let plan = try StaggerPlan(cohortCounts: [10], pace: .window(60), requestedStart: Self.five, jitter: 90, seed: seed)
            let offset = plan.start.timeIntervalSince(Self.five)
            #expect(offset >= 1 && offset <= 91)
            #expect(plan.start.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) != 0)
            #expect(plan == (try StaggerPlan(cohortCounts: [10], pace: .window(60), requestedStart: Self.five, jitter: 90, seed: seed)))
            starts.insert(plan.start)
        }
        #expect(starts.count > 60, "seeds spread the start over the jitter")
    }

    @Test("adding devices never moves an existing device to another cohort")
    func stableCohorts() {
        let tokens = (0..<2_000).map { index -> DeviceToken in
            var bytes = Array(repeating: UInt8(9), count: 32)
            withUnsafeBytes(of: UInt32(index).bigEndian) { bytes.replaceSubrange(28..<32, with: $0) }
            return DeviceToken(bytes: bytes)
        }
        let before = tokens.prefix(1_000).map { $0.cohort(count: 8) }
        let after = tokens.map { $0.cohort(count: 8) }
        #expect(Array(after.prefix(1_000)) == before)
    }

    @Test("sends per bucket match sendsPerSecond and add up to every device")
    func buckets() throws {
        for (counts, pace) in [([100_000, 33_333, 7], StaggerPlan.Pace.window(300)), ([6_000, 0, 6_001], .capacity(perSecond: 2_000))] {
            let plan = try StaggerPlan(cohortCounts: counts, pace: pace, requestedStart: Self.five, seed: 9)
            #expect(plan.sends(perBucketOf: 1) == plan.sendsPerSecond())
            let perMinute = plan.sends(perBucketOf: 60)
            #expect(perMinute.reduce(0, +) == counts.reduce(0, +))
        }
        let empty = try StaggerPlan(cohortCounts: [0, 0], pace: .window(60), requestedStart: Self.five, seed: 9)
        #expect(empty.sends(perBucketOf: 60).isEmpty)
    }

    @Test("a follow-up wave sends each device of a smaller audience at least the shift after its wave-1 send, at most a cohort slot later")
    func followUpKeepsSpacing() throws {
        // Wave 1: 4 cohorts over 30 minutes. The follow-up's audience: about a third of each cohort, chosen
        // by a hash of the device, in the same key order.
        let counts = Self.counts(devices: 20_000, cohorts: 4)
        let first = try StaggerPlan(cohortCounts: counts, pace: .window(1800), requestedStart: Self.five, seed: 4)
        let kept = counts.enumerated().map { cohort, devices in (0..<devices).filter { ($0 &* 2_654_435_761 &+ cohort) % 3 == 0 } }
        let shift: TimeInterval = 3 * 1200
        let later = try StaggerPlan(cohortCounts: kept.map(\.count), rate: first.rate, following: first.cohorts, shift: shift)
        #expect(later.start == first.start.addingTimeInterval(shift))
        #expect(later.rate == first.rate)
        var earliestGap = TimeInterval.infinity
        var latestGap = -TimeInterval.infinity
        for (cohort, devices) in kept.enumerated() {
            for (ordinal, wave1Ordinal) in devices.enumerated() {
                let gap = later.sendTime(cohort: cohort, ordinal: ordinal).timeIntervalSince(first.sendTime(cohort: cohort, ordinal: wave1Ordinal))
                earliestGap = min(earliestGap, gap)
                latestGap = max(latestGap, gap)
            }
        }
        #expect(earliestGap >= shift - 1e-6, "no device sooner than the shift after its wave-1 send")
        let longestSlot = first.cohorts.map { $0.end.timeIntervalSince($0.start) }.max()!
        #expect(latestGap <= shift + longestSlot)
        // Slots do not overlap, so the wave never sends faster than wave 1's rate.
        for (previous, next) in zip(later.cohorts, later.cohorts.dropFirst()) { #expect(previous.end <= next.start) }
        #expect(later.sends(perBucketOf: 1) == later.sendsPerSecond())
        #expect(later.sends(perBucketOf: 60).reduce(0, +) == kept.map(\.count).reduce(0, +))
        #expect(later.sendsPerSecond().max()! <= Int(first.rate.rounded(.up)))

        // Started at the shifted start instead, at the same rate, the last device of wave 1 would go out
        // two thirds of the window sooner than the shift after it.
        let packed = try StaggerPlan(cohortCounts: kept.map(\.count), pace: .capacity(perSecond: first.rate), start: later.start)
        let lastDevice = packed.sendTime(cohort: 3, ordinal: kept[3].count - 1)
        #expect(lastDevice.timeIntervalSince(first.sendTime(cohort: 3, ordinal: kept[3].last!)) < shift - 1000)
    }

    @Test("a follow-up cohort larger than in wave 1 starts where the cohort before it ends; a different cohort count is refused")
    func followUpGrowsWithoutOverlap() throws {
        let first = try StaggerPlan(cohortCounts: [100, 100, 100], pace: .capacity(perSecond: 10), start: Self.five)
        let later = try StaggerPlan(cohortCounts: [50, 180, 0], rate: 10, following: first.cohorts, shift: 1200)
        let wave = Self.five.addingTimeInterval(1200)
        #expect(later.cohorts.map { $0.start.timeIntervalSince(wave) } == [5, 10, 30])
        #expect(later.cohorts.map { $0.end.timeIntervalSince(wave) } == [10, 28, 30])
        #expect(later.window == 28)
        #expect(later.sendsPerSecond().reduce(0, +) == 230)
        #expect(throws: StaggerPlanError.cohortsDiffer) { try StaggerPlan(cohortCounts: [1, 1], rate: 10, following: first.cohorts, shift: 1200) }
        #expect(throws: StaggerPlanError.nonPositivePace) {
            try StaggerPlan(cohortCounts: [1, 1, 1], rate: 0, following: first.cohorts, shift: 1200)
        }
    }
}

@Suite("Quarter-hour marks")
struct QuarterHourTests {
    static func at(_ hour: Int, _ minute: Int, _ second: Int) -> Date {
        Date(timeIntervalSince1970: TimeInterval(1_800_000_000 / 3600 * 3600 + hour * 3600 + minute * 60 + second))
    }

    @Test("a start within 2 minutes of :00, :15, :30 or :45 moves past the mark by 2 minutes; others stay")
    func avoidsMarks() {
        #expect(StaggerPlan.avoidingQuarterHours(Self.at(5, 0, 0)) == Self.at(5, 2, 1))
        #expect(StaggerPlan.avoidingQuarterHours(Self.at(5, 1, 31)) == Self.at(5, 2, 1))
        #expect(StaggerPlan.avoidingQuarterHours(Self.at(5, 13, 0)) == Self.at(5, 17, 1), "2 minutes before :15")
        #expect(StaggerPlan.avoidingQuarterHours(Self.at(5, 58, 30)) == Self.at(6, 2, 1))
        #expect(StaggerPlan.avoidingQuarterHours(Self.at(5, 2, 1)) == Self.at(5, 2, 1))
        #expect(StaggerPlan.avoidingQuarterHours(Self.at(5, 7, 30)) == Self.at(5, 7, 30))
        #expect(StaggerPlan.avoidingQuarterHours(Self.at(5, 12, 59)) == Self.at(5, 12, 59))
    }
}
