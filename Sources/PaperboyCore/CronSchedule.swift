import Foundation

/// A five-field cron expression — minute, hour, day of month, month, day of week — evaluated on the wall
/// clock of an IANA time zone: `0 5 * * *` in `Asia/Tokyo` is every day at 05:00 in Tokyo.
///
/// Fields take `*`, values, lists (`1,15`), ranges (`1-5`) and steps (`*/15`, `10-50/10`, `5/15`);
/// months and days of the week also take names (`JAN`…`DEC`, `SUN`…`SAT`), and day of week 0 and 7 are
/// both Sunday. As in Vixie cron, when both day of month and day of week are restricted (neither starts
/// with `*`), a day matching either one matches.
///
/// Daylight saving time: a local time that does not exist (the clock springs forward over it) fires at
/// the first instant after the gap; a local time that happens twice (the clock falls back) fires once,
/// the first time.
public struct CronSchedule: Sendable, Equatable, CustomStringConvertible {
    /// One of the five fields, for errors.
    public enum Field: String, Sendable, CaseIterable {
        case minute
        case hour
        case dayOfMonth = "day-of-month"
        case month
        case dayOfWeek = "day-of-week"

        var bounds: ClosedRange<Int> {
            switch self {
            case .minute: 0...59
            case .hour: 0...23
            case .dayOfMonth: 1...31
            case .month: 1...12
            case .dayOfWeek: 0...7
            }
        }

        var names: [String] {
            switch self {
            case .month: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
            case .dayOfWeek: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
            default: []
            }
        }

        /// The value of the first name (`JAN` is 1, `SUN` is 0).
        var firstNamed: Int { self == .month ? 1 : 0 }
    }

    /// The expression as given, with runs of blanks collapsed.
    public let expression: String
    let minutes: [Int]
    let hours: [Int]
    let daysOfMonth: Set<Int>
    let months: Set<Int>
    /// 0 (Sunday) to 6.
    let daysOfWeek: Set<Int>
    let dayOfMonthRestricted: Bool
    let dayOfWeekRestricted: Bool

    /// How far ``next(after:in:)`` and ``previous(atOrBefore:in:)`` look before giving up.
    public static let searchLimitDays = 5 * 366

    /// Parses an expression.
    /// - Throws: ``CronScheduleError`` naming the field at fault.
    public init(parsing text: String) throws(CronScheduleError) {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else {
            throw CronScheduleError(
                field: nil,
                text: text,
                message: "a cron expression has 5 fields (minute hour day-of-month month day-of-week), e.g. '0 5 * * *'; got \(fields.count)"
            )
        }
        expression = fields.joined(separator: " ")
        minutes = try Self.values(fields[0], .minute).sorted()
        hours = try Self.values(fields[1], .hour).sorted()
        daysOfMonth = try Self.values(fields[2], .dayOfMonth)
        months = try Self.values(fields[3], .month)
        daysOfWeek = Set(try Self.values(fields[4], .dayOfWeek).map { $0 % 7 })
        dayOfMonthRestricted = !fields[2].hasPrefix("*")
        dayOfWeekRestricted = !fields[4].hasPrefix("*")
        // `0 0 31 2 *` would never fire; say so now rather than never.
        if dayOfMonthRestricted && !dayOfWeekRestricted {
            let longest = [1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31]
            guard months.contains(where: { month in daysOfMonth.contains(where: { $0 <= longest[month, default: 31] }) }) else {
                throw CronScheduleError(field: .dayOfMonth, text: fields[2], message: "none of these days occurs in the months of the month field")
            }
        }
    }

    public var description: String { expression }

    // MARK: Evaluation

    /// The first scheduled instant after `date`, or nil when there is none within ``searchLimitDays``.
    public func next(after date: Date, in timeZone: TimeZone) -> Date? {
        let wall = WallClock(timeZone: timeZone)
        let start = wall.local(date)
        let limit = start + Self.searchLimitDays * 86_400
        var candidate = start - start.modulo(60)
        while candidate <= limit {
            guard let match = firstMatch(atOrAfter: candidate, limit: limit) else { return nil }
            let instant = wall.instant(match)
            // Wall times before `date`'s (and, after a fall back, repeated ones) map to earlier instants.
            if instant > date { return instant }
            candidate = match + 60
        }
        return nil
    }

    /// The latest scheduled instant at or before `date`, or nil when there is none within
    /// ``searchLimitDays``. The scheduler uses it to catch up a firing it missed.
    public func previous(atOrBefore date: Date, in timeZone: TimeZone) -> Date? {
        let wall = WallClock(timeZone: timeZone)
        // After a fall back, wall times later than `date`'s may already have happened (the first time).
        let start = wall.local(date) + wall.largestOffsetChange(near: date)
        let limit = start - Self.searchLimitDays * 86_400
        var candidate = start - start.modulo(60)
        while candidate >= limit {
            guard let match = lastMatch(atOrBefore: candidate, limit: limit) else { return nil }
            let instant = wall.instant(match)
            if instant <= date { return instant }
            candidate = match - 60
        }
        return nil
    }

    /// The first matching wall-clock minute at or after `wallTime` (seconds, a multiple of 60).
    private func firstMatch(atOrAfter wallTime: Int, limit: Int) -> Int? {
        var day = wallTime - wallTime.modulo(86_400)
        var fromMinuteOfDay = (wallTime - day) / 60
        while day <= limit {
            if matches(day: day) {
                for hour in hours where hour >= fromMinuteOfDay / 60 {
                    let fromMinute = hour == fromMinuteOfDay / 60 ? fromMinuteOfDay % 60 : 0
                    if let minute = minutes.first(where: { $0 >= fromMinute }) {
                        return day + hour * 3600 + minute * 60
                    }
                }
            }
            day += 86_400
            fromMinuteOfDay = 0
        }
        return nil
    }

    /// The last matching wall-clock minute at or before `wallTime` (seconds, a multiple of 60).
    private func lastMatch(atOrBefore wallTime: Int, limit: Int) -> Int? {
        var day = wallTime - wallTime.modulo(86_400)
        var toMinuteOfDay = (wallTime - day) / 60
        while day >= limit {
            if matches(day: day) {
                for hour in hours.reversed() where hour <= toMinuteOfDay / 60 {
                    let toMinute = hour == toMinuteOfDay / 60 ? toMinuteOfDay % 60 : 59
                    if let minute = minutes.last(where: { $0 <= toMinute }) {
                        return day + hour * 3600 + minute * 60
                    }
                }
            }
            day -= 86_400
            toMinuteOfDay = 24 * 60 - 1
        }
        return nil
    }

    /// Whether the day starting at wall-clock second `day` is a scheduled day.
    private func matches(day: Int) -> Bool {
        let components = WallClock.calendar.dateComponents([.month, .day, .weekday], from: Date(timeIntervalSince1970: TimeInterval(day)))
        guard let month = components.month, let dayOfMonth = components.day, let weekday = components.weekday else { return false }
        guard months.contains(month) else { return false }
        let byDayOfMonth = daysOfMonth.contains(dayOfMonth)
        let byDayOfWeek = daysOfWeek.contains(weekday - 1)
        if dayOfMonthRestricted && dayOfWeekRestricted { return byDayOfMonth || byDayOfWeek }
        return byDayOfMonth && byDayOfWeek
    }

    // MARK: Parsing

    private static func values(_ text: String, _ field: Field) throws(CronScheduleError) -> Set<Int> {
        func fail(_ message: String) -> CronScheduleError {
            CronScheduleError(field: field, text: text, message: message)
        }
        let bounds = field.bounds
        var result = Set<Int>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !item.isEmpty else { throw fail("an empty list item; separate values with single commas, like 1,15") }
            let parts = item.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw fail("one step per item, like */15") }
            var step = 1
            if parts.count == 2 {
                guard let parsed = Int(parts[1]), parsed > 0 else { throw fail("the step '\(parts[1])' must be a positive number, like */15") }
                step = parsed
            }
            let range: ClosedRange<Int>
            if parts[0] == "*" {
                range = field == .dayOfWeek ? 0...6 : bounds
            } else if let dash = parts[0].firstIndex(of: "-") {
                let low = try value(parts[0][..<dash], field, text)
                let high = try value(parts[0][parts[0].index(after: dash)...], field, text)
                guard low <= high else { throw fail("the range \(parts[0]) runs backwards") }
                range = low...high
            } else {
                let single = try value(parts[0], field, text)
                // `5/15` means from 5 to the end, every 15.
                range = parts.count == 2 ? single...bounds.upperBound : single...single
            }
            result.formUnion(stride(from: range.lowerBound, through: range.upperBound, by: step))
        }
        return result
    }

    private static func value(_ text: Substring, _ field: Field, _ fieldText: String) throws(CronScheduleError) -> Int {
        let names = field.names
        let range = "values run \(field.bounds.lowerBound)-\(field.bounds.upperBound)"
        if let number = Int(text), text.allSatisfy(\.isASCII) {
            guard field.bounds.contains(number) else { throw CronScheduleError(field: field, text: fieldText, message: range) }
            return number
        }
        if let index = names.firstIndex(of: text.uppercased()) {
            return index + field.firstNamed
        }
        let named = names.isEmpty ? "" : " or names \(names[0])-\(names[names.count - 1])"
        throw CronScheduleError(field: field, text: fieldText, message: "'\(text)' is not a value; \(range)\(named)")
    }

    // MARK: Time zones

    /// The time zone with this IANA identifier, e.g. `Asia/Tokyo`.
    /// - Throws: ``CronScheduleError`` (with no field) when the identifier is not known.
    public static func timeZone(identifier: String) throws(CronScheduleError) -> TimeZone {
        guard !identifier.isEmpty, let zone = TimeZone(identifier: identifier) else {
            throw CronScheduleError(field: nil, text: identifier, message: "not an IANA time zone, e.g. Asia/Tokyo or Europe/Berlin")
        }
        return zone
    }
}

/// A cron expression that cannot be read. The description names the field:
/// `minute field '61': values run 0-59`.
public struct CronScheduleError: Error, Equatable, CustomStringConvertible {
    /// The field at fault; nil when the expression as a whole (or a time zone) is at fault.
    public var field: CronSchedule.Field?
    /// The text at fault: the field, or the whole expression.
    public var text: String
    public var message: String

    public init(field: CronSchedule.Field?, text: String, message: String) {
        self.field = field
        self.text = text
        self.message = message
    }

    public var description: String {
        if let field { return "\(field.rawValue) field '\(text)': \(message)" }
        return "'\(text)': \(message)"
    }
}

/// Wall-clock times of a zone as whole seconds "as if UTC": 05:00 local on a day is that day's
/// midnight UTC plus 5 hours, whatever the zone's offset.
private struct WallClock {
    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        return calendar
    }()

    let timeZone: TimeZone

    /// The wall-clock time at an instant, in whole seconds (rounded down).
    func local(_ date: Date) -> Int {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        return seconds + timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// How far the zone's offset grows or shrinks within a day around `date`: wall times up to this much
    /// later than `date`'s may map to instants before it.
    func largestOffsetChange(near date: Date) -> Int {
        let offsets = offsets(near: date.timeIntervalSince1970)
        let here = timeZone.secondsFromGMT(for: date)
        return max(0, (offsets.max() ?? here) - here, here - (offsets.min() ?? here))
    }

    /// The instant a wall-clock time happens: the first of two after a fall back, and the end of the gap
    /// when the clock sprang forward over it.
    func instant(_ wallTime: Int) -> Date {
        let offsets = offsets(near: TimeInterval(wallTime))
        let valid = offsets.map { wallTime - $0 }.filter { offset(at: $0) == wallTime - $0 }
        if let first = valid.min() { return Date(timeIntervalSince1970: TimeInterval(first)) }
        // In a gap: the transition lies between the instant with the larger offset (before it) and the one
        // with the smaller offset (after it).
        var before = wallTime - (offsets.max() ?? 0)
        var after = wallTime - (offsets.min() ?? 0)
        let offsetBefore = offset(at: before)
        while after - before > 1 {
            let middle = before + (after - before) / 2
            if offset(at: middle) == offsetBefore { before = middle } else { after = middle }
        }
        return Date(timeIntervalSince1970: TimeInterval(after))
    }

    private func offsets(near seconds: TimeInterval) -> Set<Int> {
        Set([-86_400.0, 0, 86_400].map { timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: seconds + $0)) })
    }

    private func offset(at seconds: Int) -> Int {
        timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}

extension Int {
    /// The remainder towards negative infinity: `(-1).modulo(60) == 59`.
    fileprivate func modulo(_ divisor: Int) -> Int {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
