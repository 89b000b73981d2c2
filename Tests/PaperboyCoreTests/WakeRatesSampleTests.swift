import PaperboyCore
import Testing

@Suite("Wake rates: which devices a sampled report reads")
struct WakeRatesSampleTests {
    @Test("no target, or a window within it, reads every push")
    func readsAll() {
        #expect(WakeRates.samplePlan(windowPushes: 10_000_000, target: nil, maxDeviceID: 5_000_000) == nil)
        #expect(WakeRates.samplePlan(windowPushes: 250_000, target: 250_000, maxDeviceID: 150_000) == nil)
        #expect(WakeRates.samplePlan(windowPushes: 1_000, target: 250_000, maxDeviceID: 600) == nil)
        #expect(WakeRates.samplePlan(windowPushes: 1_000, target: 500, maxDeviceID: 0) == nil)
    }

    @Test("the sample is the target's share of ids, in 1,024 disjoint ranges spread evenly from the first id to the last")
    func spreadsRanges() throws {
        // A week at 10 million devices: 170 million pushes, 250,000 of them read.
        let plan = try #require(WakeRates.samplePlan(windowPushes: 170_000_000, target: 250_000, maxDeviceID: 10_400_000))
        let share = 250_000.0 / 170_000_000
        #expect(plan.ranges.count == 1_024 && plan.sample.ranges == 1_024)
        #expect(abs(plan.sample.fraction - share) / share < 0.05, "\(plan.sample.fraction) against \(share)")
        #expect(plan.sample.windowPushes == 170_000_000)
        let read = plan.ranges.reduce(Int64(0)) { $0 + Int64($1.count) }
        #expect(Double(read) / 10_400_000 == plan.sample.fraction)
        // Disjoint and ascending, within the ids, one range at the start of each 1/1,024 of them: the first id
        // is read, and the last range starts in the last stretch.
        #expect(plan.ranges.first?.lowerBound == 1)
        #expect(zip(plan.ranges, plan.ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound })
        #expect(plan.ranges.allSatisfy { $0.lowerBound >= 1 && $0.upperBound <= 10_400_000 })
        #expect(try #require(plan.ranges.last).lowerBound >= 10_400_000 - 10_400_000 / 1_024)
        // Each stretch of ids is read in the same share: the ranges are equally wide (to the rounding of one id).
        let widths = Set(plan.ranges.map(\.count))
        #expect(widths.count == 1)
    }

    @Test("few ids: fewer ranges, 16 ids or more to a stretch; a range at least one id wide; the share read is what the ranges hold")
    func fewIDs() throws {
        let plan = try #require(WakeRates.samplePlan(windowPushes: 9_000, target: 3_000, maxDeviceID: 600))
        #expect(plan.ranges.count == 37 && plan.ranges.allSatisfy { $0.count == 5 })
        let read = plan.ranges.reduce(0) { $0 + $1.count }
        #expect(read == 185 && plan.sample.fraction == 185.0 / 600)
        #expect(zip(plan.ranges, plan.ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound })

        // A target just under the window: nearly every id, still a sample.
        let most = try #require(WakeRates.samplePlan(windowPushes: 100_000, target: 90_000, maxDeviceID: 50_000))
        #expect(most.sample.fraction > 0.85 && most.sample.fraction < 1)
        // A share so small that a range would be under one id: one id per stretch.
        let least = try #require(WakeRates.samplePlan(windowPushes: 1_000_000_000, target: 1_000, maxDeviceID: 100_000))
        #expect(least.ranges.count == 1_024 && least.ranges.allSatisfy { $0.count == 1 })
    }

    @Test("what a caller may ask for: all, or a whole number of pushes from 1,000")
    func targets() {
        #expect(WakeRates.SampleTarget("all") == .all && WakeRates.SampleTarget("all")?.pushes == nil)
        #expect(WakeRates.SampleTarget("1000")?.pushes == 1_000 && WakeRates.SampleTarget("250000")?.description == "250000")
        for refused in ["999", "0", "-5", "", "ALL", "some", "1e6", "2.5"] {
            #expect(WakeRates.SampleTarget(refused) == nil, "\(refused)")
        }
    }
}
