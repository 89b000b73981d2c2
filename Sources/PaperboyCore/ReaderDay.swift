import Foundation

/// A reader's day as a reading habit counts it: it starts at 03:00 in the device's time zone, so that a late
/// night's reading (00:30) belongs to the day before and the first open of a day is the morning's, the one a
/// morning edition must beat. Weekdays and weekends are told apart by that day's date.
public struct ReaderDay: Sendable, Equatable {
    /// The hour a reader's day starts, local time.
    public static let startHour = 3

    /// Days since 1970-01-01 of the day's date (the date of its 03:00): a number that grows by one a day.
    public var number: Int
    /// Minutes from the day's start (03:00 local) to the instant, 0 ..< 1440 (a day of daylight saving's change
    /// may reach 1500 or stop at 1380; the minute is kept as the clock shows it).
    public var minute: Double
    /// Saturday or Sunday.
    public var isWeekend: Bool

    public init(number: Int, minute: Double, isWeekend: Bool) {
        self.number = number
        self.minute = minute
        self.isWeekend = isWeekend
    }

    /// The reader's day of `instant` in `timeZone`.
    public init(_ instant: Date, timeZone: TimeZone) {
        let offset = TimeInterval(timeZone.secondsFromGMT(for: instant))
        let local = instant.timeIntervalSince1970 + offset - TimeInterval(Self.startHour * 3600)
        let day = (local / 86_400).rounded(.down)
        number = Int(day)
        minute = (local - day * 86_400) / 60
        isWeekend = Self.isWeekend(day: number)
    }

    /// The day after this one, whether it is a weekend day.
    public var nextIsWeekend: Bool { Self.isWeekend(day: number + 1) }

    /// Whether the day numbered `day` (``number``) is a Saturday or a Sunday.
    public static func isWeekend(day: Int) -> Bool {
        // 1970-01-01 was a Thursday: day 0 is weekday 4 (Sunday 0 … Saturday 6).
        let weekday = ((day % 7) + 7 + 4) % 7
        return weekday == 0 || weekday == 6
    }

    /// The clock time of `minute` minutes after a reader's day starts, `HH:mm`.
    public static func clockTime(minute: Double) -> String {
        let total = (Int(minute.rounded(.down)) + startHour * 60) % 1440
        return String(format: "%02d:%02d", total / 60, total % 60)
    }

    /// The time zone of a device's stored identifier; UTC for one Foundation does not know (registrations are
    /// checked, so only a zone dropped from the system's database since).
    public static func timeZone(identifier: String) -> TimeZone {
        TimeZone(identifier: identifier) ?? TimeZone(secondsFromGMT: 0)!
    }
}
