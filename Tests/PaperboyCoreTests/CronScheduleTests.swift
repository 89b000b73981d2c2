import Foundation
import PaperboyCore
import Testing

@Suite("Cron schedule")
struct CronScheduleTests {
    static func date(_ text: String) throws -> Date {
        try #require(ISO8601DateFormatter().date(from: text))
    }

    static func zone(_ identifier: String) throws -> TimeZone {
        try #require(TimeZone(identifier: identifier))
    }

    /// The next `count` instants after `start`, as ISO 8601 in UTC.
    static func upcoming(_ cron: String, _ zone: String, after start: String, count: Int) throws -> [String] {
        let schedule = try CronSchedule(parsing: cron)
        let timeZone = try Self.zone(zone)
        var instant = try date(start)
        var result: [String] = []
        for _ in 0..<count {
            instant = try #require(schedule.next(after: instant, in: timeZone))
            result.append(ISO8601DateFormatter().string(from: instant))
        }
        return result
    }

    @Test(
        "errors name the field and say what is allowed",
        arguments: [
            ("61 5 * * *", "minute field '61': values run 0-59"),
            ("0 24 * * *", "hour field '24': values run 0-23"),
            ("0 5 0 * *", "day-of-month field '0': values run 1-31"),
            ("0 5 * 13 *", "month field '13': values run 1-12"),
            ("0 5 * * 8", "day-of-week field '8': values run 0-7"),
            ("0 5 * FOO *", "month field 'FOO': 'FOO' is not a value; values run 1-12 or names JAN-DEC"),
            ("0 5 * * MON-XYZ", "day-of-week field 'MON-XYZ': 'XYZ' is not a value; values run 0-7 or names SUN-SAT"),
            ("*/0 5 * * *", "minute field '*/0': the step '0' must be a positive number, like */15"),
            ("50-10 5 * * *", "minute field '50-10': the range 50-10 runs backwards"),
            ("0 5,,6 * * *", "hour field '5,,6': an empty list item; separate values with single commas, like 1,15"),
            ("0 5 31 2 *", "day-of-month field '31': none of these days occurs in the months of the month field"),
            (
                "0 5 * *",
                "'0 5 * *': a cron expression has 5 fields (minute hour day-of-month month day-of-week), e.g. '0 5 * * *'; got 4"
            ),
        ]
    )
    func errors(expression: String, message: String) {
        #expect(throws: (any Error).self) { try CronSchedule(parsing: expression) }
        do {
            _ = try CronSchedule(parsing: expression)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test("the field of an error is reported")
    func errorField() {
        do {
            _ = try CronSchedule(parsing: "0 5 * * 9")
            Issue.record("accepted")
        } catch {
            #expect(error.field == .dayOfWeek)
        }
    }

    @Test("0 5 * * * in Asia/Tokyo is 20:00 UTC the day before")
    func tokyoMorning() throws {
        #expect(
            try Self.upcoming("0 5 * * *", "Asia/Tokyo", after: "2026-11-22T12:00:00Z", count: 2)
                == ["2026-11-22T20:00:00Z", "2026-11-23T20:00:00Z"]
        )
        // Exactly at an instant, next is the following one.
        #expect(
            try Self.upcoming("0 5 * * *", "Asia/Tokyo", after: "2026-11-22T20:00:00Z", count: 1) == ["2026-11-23T20:00:00Z"]
        )
    }

    @Test("steps, lists, ranges and names")
    func stepsListsRanges() throws {
        #expect(
            try Self.upcoming("*/15 5 * * *", "UTC", after: "2026-11-23T04:50:00Z", count: 5)
                == ["2026-11-23T05:00:00Z", "2026-11-23T05:15:00Z", "2026-11-23T05:30:00Z", "2026-11-23T05:45:00Z", "2026-11-24T05:00:00Z"]
        )
        #expect(
            try Self.upcoming("10-50/20 6,18 * * *", "UTC", after: "2026-11-23T06:15:00Z", count: 4)
                == ["2026-11-23T06:30:00Z", "2026-11-23T06:50:00Z", "2026-11-23T18:10:00Z", "2026-11-23T18:30:00Z"]
        )
        // 2026-11-23 is a Monday; weekdays only, by number and by name.
        let weekdays = ["2026-11-27T07:00:00Z", "2026-11-30T07:00:00Z"]
        #expect(try Self.upcoming("0 7 * * 1-5", "UTC", after: "2026-11-26T08:00:00Z", count: 2) == weekdays)
        #expect(try Self.upcoming("0 7 * * mon-FRI", "UTC", after: "2026-11-26T08:00:00Z", count: 2) == weekdays)
        // 0 and 7 are both Sunday.
        let sundays = ["2026-11-29T07:00:00Z", "2026-12-06T07:00:00Z"]
        #expect(try Self.upcoming("0 7 * * 7", "UTC", after: "2026-11-23T00:00:00Z", count: 2) == sundays)
        #expect(try Self.upcoming("0 7 * * 0", "UTC", after: "2026-11-23T00:00:00Z", count: 2) == sundays)
        #expect(try Self.upcoming("0 7 * * SUN", "UTC", after: "2026-11-23T00:00:00Z", count: 2) == sundays)
        // Months by name; a schedule once a year is found far ahead.
        #expect(
            try Self.upcoming("30 4 1 JAN,jul *", "UTC", after: "2026-11-23T00:00:00Z", count: 2)
                == ["2027-01-01T04:30:00Z", "2027-07-01T04:30:00Z"]
        )
        #expect(try Self.upcoming("0 0 29 2 *", "UTC", after: "2026-11-23T00:00:00Z", count: 1) == ["2028-02-29T00:00:00Z"])
    }

    @Test("when day of month and day of week are both restricted, either matches")
    func dayOfMonthOrDayOfWeek() throws {
        // The 1st and the 15th, or any Friday (2026-11-27 is a Friday).
        #expect(
            try Self.upcoming("0 6 1,15 * FRI", "UTC", after: "2026-11-23T00:00:00Z", count: 4)
                == ["2026-11-27T06:00:00Z", "2026-12-01T06:00:00Z", "2026-12-04T06:00:00Z", "2026-12-11T06:00:00Z"]
        )
        // With a star in one of them, only the other restricts.
        #expect(
            try Self.upcoming("0 6 1,15 * *", "UTC", after: "2026-11-23T00:00:00Z", count: 2)
                == ["2026-12-01T06:00:00Z", "2026-12-15T06:00:00Z"]
        )
        #expect(
            try Self.upcoming("0 6 */1 * FRI", "UTC", after: "2026-11-23T00:00:00Z", count: 2)
                == ["2026-11-27T06:00:00Z", "2026-12-04T06:00:00Z"]
        )
    }

    @Test("a local time skipped by the spring-forward gap fires at the end of the gap")
    func springForward() throws {
        // Europe/Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC).
        #expect(
            try Self.upcoming("30 2 * * *", "Europe/Berlin", after: "2026-03-27T12:00:00Z", count: 3)
                == ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]
        )
        // Every 30 minutes through the gap: the skipped times fire once, at 03:00 CEST.
        #expect(
            try Self.upcoming("*/30 1-3 * * *", "Europe/Berlin", after: "2026-03-28T23:59:00Z", count: 4)
                == ["2026-03-29T00:00:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"]
        )
        // America/New_York, 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00 UTC).
        #expect(
            try Self.upcoming("15 2 * * *", "America/New_York", after: "2026-03-08T00:00:00Z", count: 2)
                == ["2026-03-08T07:00:00Z", "2026-03-09T06:15:00Z"]
        )
    }

    @Test("a local time repeated by the fall-back fires once, the first time")
    func fallBack() throws {
        // Europe/Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens at 00:30 and 01:30 UTC.
        #expect(
            try Self.upcoming("30 2 * * *", "Europe/Berlin", after: "2026-10-24T12:00:00Z", count: 2)
                == ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
        )
        // Asked during the second 02:00-03:00 (02:10 CET), the repeated times are not fired again.
        #expect(
            try Self.upcoming("*/20 * * * *", "Europe/Berlin", after: "2026-10-25T01:10:00Z", count: 3)
                == ["2026-10-25T02:00:00Z", "2026-10-25T02:20:00Z", "2026-10-25T02:40:00Z"]
        )
        // America/New_York, 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 happens at 05:30 and 06:30 UTC.
        #expect(
            try Self.upcoming("30 1 * * *", "America/New_York", after: "2026-10-31T12:00:00Z", count: 2)
                == ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
        )
    }

    @Test("previous(atOrBefore:) is the latest instant at or before a time")
    func previous() throws {
        let schedule = try CronSchedule(parsing: "0 5 * * *")
        let tokyo = try Self.zone("Asia/Tokyo")
        // 05:40 in Tokyo: the 05:00 firing was 40 minutes ago.
        #expect(schedule.previous(atOrBefore: try Self.date("2026-11-22T20:40:00Z"), in: tokyo) == (try Self.date("2026-11-22T20:00:00Z")))
        #expect(schedule.previous(atOrBefore: try Self.date("2026-11-22T20:00:00Z"), in: tokyo) == (try Self.date("2026-11-22T20:00:00Z")))
        #expect(schedule.previous(atOrBefore: try Self.date("2026-11-22T19:59:59Z"), in: tokyo) == (try Self.date("2026-11-21T20:00:00Z")))

        let berlin = try Self.zone("Europe/Berlin")
        // The gap: 02:30 on 2026-03-29 fired at 01:00 UTC.
        let gap = try CronSchedule(parsing: "30 2 * * *")
        #expect(gap.previous(atOrBefore: try Self.date("2026-03-29T01:10:00Z"), in: berlin) == (try Self.date("2026-03-29T01:00:00Z")))
        #expect(gap.previous(atOrBefore: try Self.date("2026-03-29T00:59:00Z"), in: berlin) == (try Self.date("2026-03-28T01:30:00Z")))
        // The overlap: during the second 02:30 the latest firing is the first 02:30.
        #expect(gap.previous(atOrBefore: try Self.date("2026-10-25T01:40:00Z"), in: berlin) == (try Self.date("2026-10-25T00:30:00Z")))
        #expect(gap.previous(atOrBefore: try Self.date("2026-10-25T00:40:00Z"), in: berlin) == (try Self.date("2026-10-25T00:30:00Z")))

        // previous and next agree.
        let start = try Self.date("2026-01-01T00:00:00Z")
        let weekly = try CronSchedule(parsing: "45 */5 * * MON,THU")
        var instant = start
        for _ in 0..<50 {
            let next = try #require(weekly.next(after: instant, in: berlin))
            #expect(weekly.previous(atOrBefore: next, in: berlin) == next)
            #expect(weekly.previous(atOrBefore: next.addingTimeInterval(-1), in: berlin).map { $0 <= instant } == true)
            instant = next
        }
    }

    @Test("searches are bounded")
    func bounded() throws {
        // 29 February comes every four years, except in 2100: from 2097 the next is 2104, beyond the limit.
        let leapDay = try CronSchedule(parsing: "0 0 29 2 *")
        let utc = try Self.zone("UTC")
        #expect(leapDay.next(after: try Self.date("2026-11-23T00:00:00Z"), in: utc) == (try Self.date("2028-02-29T00:00:00Z")))
        #expect(leapDay.previous(atOrBefore: try Self.date("2026-11-23T00:00:00Z"), in: utc) == (try Self.date("2024-02-29T00:00:00Z")))
        #expect(leapDay.next(after: try Self.date("2097-03-01T00:00:00Z"), in: utc) == nil)
    }

    @Test("time zones must be IANA identifiers")
    func timeZones() throws {
        #expect(try CronSchedule.timeZone(identifier: "Asia/Tokyo").identifier == "Asia/Tokyo")
        #expect(throws: CronScheduleError.self) { try CronSchedule.timeZone(identifier: "Mars/Olympus") }
        #expect(throws: CronScheduleError.self) { try CronSchedule.timeZone(identifier: "") }
    }
}
