import Foundation

extension WakeRates {
    /// How many accepted background pushes a report reads before it samples devices instead. Counting costs
    /// about 6 µs per push (BENCHMARKS.md), so this keeps a report to seconds whatever the fleet: a week at
    /// 10,000,000 devices holds some 190,000,000 pushes, some 20 minutes of reading. A rate from 250,000 pushes has a
    /// 95 % interval of ±0.2 points; a group of 1 % of them, ±2 points.
    public static let defaultSamplePushes = 250_000

    /// The smallest sample a caller may ask for: below it most groups are merged or too small for a rate.
    public static let minimumSamplePushes = 1_000

    /// What a caller asks to count (`--sample`, `?sample=`): about so many pushes, or all of them.
    public enum SampleTarget: Equatable, Sendable, CustomStringConvertible {
        case pushes(Int)
        case all

        /// How a refusal states the rule.
        public static let rule = "a number of pushes from \(minimumSamplePushes), like 250000, or all"

        /// `all`, or a whole number of pushes from ``WakeRates/minimumSamplePushes``; nil for anything else.
        public init?(_ text: String) {
            if text == "all" {
                self = .all
            } else if let count = Int(text), count >= WakeRates.minimumSamplePushes {
                self = .pushes(count)
            } else {
                return nil
            }
        }

        /// The target to sample at; nil for every push.
        public var pushes: Int? {
            if case .pushes(let count) = self { return count }
            return nil
        }

        public var description: String {
            if case .pushes(let count) = self { return "\(count)" }
            return "all"
        }
    }

    /// How a report read a sample of the devices rather than every push.
    ///
    /// The sample is every push of the devices whose ids fall in ``ranges`` ranges spread evenly over all ids
    /// (one at the start of each of as many equal stretches): the ids follow registration order, so every
    /// period of registration is read in the same share, and nothing about a device (its model, its cohort's
    /// slot, its token) decides whether it is read. Rates and intervals are the sample's; a device's pushes
    /// are read together, so the interval, which counts pushes as independent, is if anything too narrow.
    public struct Sample: Codable, Equatable, Sendable {
        /// The share of device ids read, below 1.
        public var fraction: Double
        /// How many id ranges were read.
        public var ranges: Int
        /// The window's accepted background pushes, as the broadcasts' counters have them (the sample's own
        /// count is the report's `total.pushes`).
        public var windowPushes: Int

        public init(fraction: Double, ranges: Int, windowPushes: Int) {
            self.fraction = fraction
            self.ranges = ranges
            self.windowPushes = windowPushes
        }
    }

    /// The device ids a sampled report reads, and how it describes them.
    public struct SamplePlan: Equatable, Sendable {
        /// Disjoint, ascending id ranges within `1...maxDeviceID`.
        public var ranges: [ClosedRange<Int64>]
        public var sample: Sample
    }

    /// How many id ranges a sample is spread over (fewer when there are fewer than 16 ids for each).
    public static let sampleRangeCount = 1_024

    /// The ids to read so that about `target` of the window's `windowPushes` are counted, or nil to read every
    /// push (no target, or the window holds no more than it). The policy, without I/O.
    ///
    /// - Parameters:
    ///   - windowPushes: the window's accepted background pushes (the broadcasts' counters).
    ///   - target: the pushes to aim for; nil to read them all.
    ///   - maxDeviceID: the highest device id (ids start at 1).
    public static func samplePlan(
        windowPushes: Int,
        target: Int?,
        maxDeviceID: Int64,
        rangeCount: Int = sampleRangeCount
    ) -> SamplePlan? {
        guard let target, target > 0, windowPushes > target, maxDeviceID > 0, rangeCount > 0 else { return nil }
        let share = Double(target) / Double(windowPushes)
        // At least 16 ids to a stretch, so that a range's width can come near the share of it.
        let count = Int(min(Int64(rangeCount), max(1, maxDeviceID / 16)))
        let stretch = Double(maxDeviceID) / Double(count)
        let width = max(1, Int64((share * stretch).rounded()))
        var ranges: [ClosedRange<Int64>] = []
        ranges.reserveCapacity(count)
        var read: Int64 = 0
        for index in 0..<count {
            let first = 1 + Int64((Double(index) * stretch).rounded(.down))
            let next = index + 1 == count ? maxDeviceID + 1 : 1 + Int64((Double(index + 1) * stretch).rounded(.down))
            let last = min(first + width - 1, next - 1)
            guard first <= last else { continue }
            ranges.append(first...last)
            read += last - first + 1
        }
        guard read < maxDeviceID else { return nil }
        let sample = Sample(fraction: Double(read) / Double(maxDeviceID), ranges: ranges.count, windowPushes: windowPushes)
        return SamplePlan(ranges: ranges, sample: sample)
    }
}
