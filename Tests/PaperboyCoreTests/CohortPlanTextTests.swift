import Foundation
import PaperboyCore
import Testing

@Suite("Cohort plan inputs")
struct CohortPlanInputTests {
    static let tokyo = TimeZone(identifier: "Asia/Tokyo")!
    /// 2026-11-22 23:30:00 in Tokyo.
    static let lateEvening = Date(timeIntervalSince1970: 1_795_357_800)

    @Test("windows are read as operators write them")
    func windows() throws {
        #expect(try StaggerPlan.Pace(window: "30m") == .window(1800))
        #expect(try StaggerPlan.Pace(window: "1h") == .window(3600))
        #expect(try StaggerPlan.Pace(window: "90s") == .window(90))
        #expect(try StaggerPlan.Pace(window: "1h30m") == .window(5400))
        #expect(try StaggerPlan.Pace(window: "600") == .window(600))
        for bad in ["", "m", "30x", "-5m", "0", "0m", "30m5", "1.5.2h"] {
            #expect(throws: StaggerPlanInputError.badDuration(bad)) { try StaggerPlan.Pace(window: bad) }
        }
    }

    @Test("capacities are wake-ups per second")
    func capacities() throws {
        #expect(try StaggerPlan.Pace(capacity: "2000/s") == .capacity(perSecond: 2000))
        #expect(try StaggerPlan.Pace(capacity: "2000") == .capacity(perSecond: 2000))
        #expect(try StaggerPlan.Pace(capacity: "120000/m") == .capacity(perSecond: 2000))
        for bad in ["", "/s", "2000/d", "0/s", "-1", "fast"] {
            #expect(throws: StaggerPlanInputError.badCapacity(bad)) { try StaggerPlan.Pace(capacity: bad) }
        }
    }

    @Test("a clock time is its next occurrence in the time zone; an ISO 8601 time is itself")
    func starts() throws {
        let five = try StaggerPlan.requestedStart(parsing: "05:00", timeZone: Self.tokyo, now: Self.lateEvening)
        #expect(five == Self.lateEvening.addingTimeInterval(5.5 * 3600), "tomorrow 05:00 in Tokyo")
        let soon = try StaggerPlan.requestedStart(parsing: "23:45:30", timeZone: Self.tokyo, now: Self.lateEvening)
        #expect(soon == Self.lateEvening.addingTimeInterval(15 * 60 + 30), "later today")
        let iso = try StaggerPlan.requestedStart(parsing: "2026-11-23T05:00:00+09:00", timeZone: .gmt, now: Self.lateEvening)
        #expect(iso == five)
        let local = try StaggerPlan.requestedStart(parsing: "2026-11-23T05:00", timeZone: Self.tokyo, now: Self.lateEvening)
        #expect(local == five)
        for bad in ["5", "25:00", "05:60", "tomorrow", "2026-13-01T05:00"] {
            #expect(throws: StaggerPlanInputError.badStart(bad)) {
                try StaggerPlan.requestedStart(parsing: bad, timeZone: Self.tokyo, now: Self.lateEvening)
            }
        }
    }

    @Test("the default seed is the same on every run and differs between names")
    func seeds() {
        #expect(StaggerPlan.seed(for: "1/morning") == StaggerPlan.seed(for: "1/morning"))
        #expect(StaggerPlan.seed(for: "1/morning") != StaggerPlan.seed(for: "1/evening"))
        #expect(StaggerPlan.seed(for: "") == 0xcbf2_9ce4_8422_2325)
    }
}

@Suite("Cohort plan chart and table")
struct CohortPlanChartTests {
    static let five = Date(timeIntervalSince1970: 1_795_377_600)  // 05:00:00 in Tokyo
    static let tokyo = TimeZone(identifier: "Asia/Tokyo")!

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

    @Test("a 10-minute window charts one row per minute, equal bars, cohorts named, within 80 columns")
    func perMinute() throws {
        let plan = try StaggerPlan(cohortCounts: [3_000, 3_000, 6_000], pace: .window(600), requestedStart: Self.five, seed: 9)
        let lines = plan.chart(timeZone: Self.tokyo).split(separator: "\n").map(String.init)
        let rows = Array(lines.dropFirst(2))
        #expect(lines[0].hasPrefix("planned sends per minute (Asia/Tokyo"))
        #expect(rows.count == 10)
        #expect(lines.allSatisfy { $0.count <= 80 })
        #expect(rows.allSatisfy { $0.contains(" 1,200  ") })
        let bars = Set(rows.map { $0.filter { $0 == "#" }.count })
        #expect(bars.count == 1 && bars.first! > 40)
        #expect(rows[0].hasPrefix(StaggerPlan.clock(plan.start, timeZone: Self.tokyo, fraction: false)))
        #expect(rows[0].hasSuffix("  0"))
        #expect(rows[2].hasSuffix("  0-1"), "cohort 0 ends and cohort 1 begins in the third minute")
        #expect(rows[9].hasSuffix("  2"))
    }

    @Test("a long window is grouped into at most 30 rows; the last partial bucket is shorter")
    func grouped() throws {
        let plan = try StaggerPlan(cohortCounts: [1_000_000], pace: .capacity(perSecond: 300), requestedStart: Self.five, seed: 9)
        #expect(plan.window > 55 * 60)
        let lines = plan.chart(timeZone: Self.tokyo).split(separator: "\n").map(String.init)
        #expect(lines[0].hasPrefix("planned sends per 2 minutes"))
        let rows = Array(lines.dropFirst(2))
        #expect(rows.count <= 30)
        #expect(rows.allSatisfy { $0.count <= 80 })
        #expect(rows.first!.contains(" 36,000  "))
        #expect(rows.last!.filter { $0 == "#" }.count < rows.first!.filter { $0 == "#" }.count)
    }

    @Test("an empty plan says nothing is sent")
    func empty() throws {
        let plan = try StaggerPlan(cohortCounts: [0, 0], pace: .window(60), requestedStart: Self.five, seed: 9)
        #expect(plan.chart(timeZone: Self.tokyo) == "no sends planned")
    }

    @Test("the table lists every cohort with its devices, slot and rate")
    func table() throws {
        let plan = try StaggerPlan(cohortCounts: [1_200, 0, 2_400], pace: .window(60), requestedStart: Self.five, seed: 9)
        let lines = plan.table(timeZone: Self.tokyo).split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        let start = StaggerPlan.clock(plan.start, timeZone: Self.tokyo, fraction: true)
        let end = StaggerPlan.clock(plan.start.addingTimeInterval(20), timeZone: Self.tokyo, fraction: true)
        #expect(lines[1].split(separator: " ") == ["0", "1,200", Substring(start), Substring(end), "60.0"])
        #expect(lines[2].split(separator: " ").last == "0.0")
    }

    @Test("counts, durations and clock times are formatted the same everywhere")
    func formatting() {
        #expect(StaggerPlan.grouped(0) == "0")
        #expect(StaggerPlan.grouped(999) == "999")
        #expect(StaggerPlan.grouped(1_234_567) == "1,234,567")
        #expect(StaggerPlan.duration(1800) == "30m")
        #expect(StaggerPlan.duration(5430) == "1h 30m 30s")
        #expect(StaggerPlan.duration(0.5) == "0.5s")
        #expect(StaggerPlan.clock(Self.five.addingTimeInterval(83.46), timeZone: Self.tokyo, fraction: true) == "05:01:23.4")
    }
}
