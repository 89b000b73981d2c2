import Foundation
import PaperboyCore
import PaperboyText
import Testing

@Suite("Cohort plan chart and table")
struct CohortPlanChartTests {
    static let five = Date(timeIntervalSince1970: 1_795_377_600)  // 05:00:00 in Tokyo
    static let tokyo = TimeZone(identifier: "Asia/Tokyo")!

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
        #expect(rows[0].hasPrefix(TerminalText.clock(plan.start, timeZone: Self.tokyo, fraction: false)))
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
        let start = TerminalText.clock(plan.start, timeZone: Self.tokyo, fraction: true)
        let end = TerminalText.clock(plan.start.addingTimeInterval(20), timeZone: Self.tokyo, fraction: true)
        #expect(lines[1].split(separator: " ") == ["0", "1,200", Substring(start), Substring(end), "60.0"])
        #expect(lines[2].split(separator: " ").last == "0.0")
    }

    @Test("counts, durations and clock times are formatted the same everywhere")
    func formatting() {
        #expect(TerminalText.grouped(0) == "0")
        #expect(TerminalText.grouped(999) == "999")
        #expect(TerminalText.grouped(1_234_567) == "1,234,567")
        #expect(TerminalText.duration(1800) == "30m")
        #expect(TerminalText.duration(5430) == "1h 30m 30s")
        #expect(TerminalText.duration(0.5) == "0.5s")
        #expect(TerminalText.duration(.infinity) == "-")
        #expect(TerminalText.pad("7", 3, right: true) == "  7")
        #expect(TerminalText.pad("morning", 3) == "morning")
        #expect(TerminalText.column("morning", 3) == "morning ")
        #expect(TerminalText.column("ab", 5) == "ab   ")
        #expect(TerminalText.clock(Self.five.addingTimeInterval(83.46), timeZone: Self.tokyo, fraction: true) == "05:01:23.4")
    }
}
