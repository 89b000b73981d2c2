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

    @Test(
        "a window or capacity is bounded where it is parsed (1 s to 24 h; 0.01 to 10,000,000 a second): no plan from 1e300 or 1e-300 (issue 48: one such GET stopped serve)"
    )
    func bounds() throws {
        #expect(try StaggerPlan.Pace(window: "24h") == .window(BroadcastOptions.longestWindow))
        #expect(try StaggerPlan.Pace(window: "1") == .window(1))
        for far in ["1e300", "24h1s", "25h", "86401", "0.5", "1e12"] {
            #expect(throws: StaggerPlanInputError.windowOutOfRange(far)) { try StaggerPlan.Pace(window: far) }
        }
        #expect(try StaggerPlan.Pace(capacity: "0.01") == .capacity(perSecond: 0.01))
        #expect(try StaggerPlan.Pace(capacity: "10000000/s") == .capacity(perSecond: 10_000_000))
        for far in ["1e-300", "1e300", "0.001/s", "10000001", "1/h"] {
            #expect(throws: StaggerPlanInputError.capacityOutOfRange(far)) { try StaggerPlan.Pace(capacity: far) }
        }
        #expect("\(StaggerPlanInputError.windowOutOfRange("1e300"))".contains("24 hours"))
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
