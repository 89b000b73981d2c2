import Foundation

extension StaggerPlan.Pace {
    /// Parses a window as operators write it: `30m`, `1h`, `90s`, `1h30m`, or plain seconds (`600`), from 1 second to
    /// ``BroadcastOptions/longestWindow``: bounded here, where it is read, so that no caller (the CLI, the console's
    /// plan page) plans with `1e300`.
    public init(window text: String) throws(StaggerPlanInputError) {
        let seconds = try StaggerPlan.seconds(parsing: text)
        guard seconds >= 1, seconds <= BroadcastOptions.longestWindow else { throw .windowOutOfRange(text) }
        self = .window(seconds)
    }

    /// Parses the content API's capacity in wake-ups per second: `2000/s`, `2000`, or `120000/m`, within
    /// ``BroadcastOptions/capacityRange``.
    public init(capacity text: String) throws(StaggerPlanInputError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        var number = Substring(trimmed)
        var divisor = 1.0
        if let slash = trimmed.firstIndex(of: "/") {
            number = trimmed[..<slash]
            switch trimmed[trimmed.index(after: slash)...] {
            case "s": divisor = 1
            case "m", "min": divisor = 60
            case "h": divisor = 3600
            default: throw .badCapacity(text)
            }
        }
        guard let value = Double(number), value.isFinite, value > 0 else { throw .badCapacity(text) }
        guard BroadcastOptions.capacityRange.contains(value / divisor) else { throw .capacityOutOfRange(text) }
        self = .capacity(perSecond: value / divisor)
    }
}

extension StaggerPlan {

    /// Seconds in a duration such as `1h30m`, `45s` or `600`.
    ///
    /// - Parameter allowingZero: whether `0s` (or `0`) is read as zero seconds, for settings where zero means
    ///   "none" or where the caller refuses it with its own reason; otherwise zero is not a duration here.
    public static func seconds(parsing text: String, allowingZero: Bool = false) throws(StaggerPlanInputError) -> TimeInterval {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if let plain = Double(trimmed) {
            guard plain.isFinite, plain > 0 || (allowingZero && plain == 0) else { throw .badDuration(text) }
            return plain
        }
        var total: TimeInterval = 0
        var digits = ""
        var sawUnit = false
        for character in trimmed {
            if character.isNumber || character == "." {
                digits.append(character)
                continue
            }
            let unit: TimeInterval
            switch character {
            case "h": unit = 3600
            case "m": unit = 60
            case "s": unit = 1
            default: throw .badDuration(text)
            }
            guard let value = Double(digits) else { throw .badDuration(text) }
            total += value * unit
            digits = ""
            sawUnit = true
        }
        guard sawUnit, digits.isEmpty, total > 0 || (allowingZero && total == 0), total.isFinite else { throw .badDuration(text) }
        return total
    }

    /// The requested start of a broadcast, from `05:00` (the next 05:00 at or after `now` in `timeZone`),
    /// `05:00:30`, or an ISO 8601 date-time (`2026-11-23T05:00:00+09:00`; without an offset it is read in
    /// `timeZone`).
    public static func requestedStart(parsing text: String, timeZone: TimeZone, now: Date) throws(StaggerPlanInputError) -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        if let clock = clockTime(trimmed) {
            if let today = calendar.date(bySettingHour: clock.hour, minute: clock.minute, second: clock.second, of: now), today >= now {
                return today
            }
            let match = DateComponents(hour: clock.hour, minute: clock.minute, second: clock.second)
            guard let next = calendar.nextDate(after: now, matching: match, matchingPolicy: .nextTime) else {
                throw .badStart(text)
            }
            return next
        }
        let withOffset = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds]] {
            withOffset.formatOptions = options
            if let date = withOffset.date(from: trimmed) { return date }
        }
        let local = DateFormatter()
        local.locale = Locale(identifier: "en_US_POSIX")
        local.calendar = calendar
        local.timeZone = timeZone
        for format in ["yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd HH:mm"] {
            local.dateFormat = format
            if let date = local.date(from: trimmed) { return date }
        }
        throw .badStart(text)
    }

    /// A repeatable jitter seed for a name, e.g. an edition id or a publication and day (FNV-1a 64; Swift's
    /// `Hasher` is seeded per process, so it would move the start on every run).
    public static func seed(for name: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    private static func clockTime(_ text: String) -> (hour: Int, minute: Int, second: Int)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }) else { return nil }
        let numbers = parts.compactMap { Int($0) }
        guard numbers.count == parts.count, (0...23).contains(numbers[0]), (0...59).contains(numbers[1]) else { return nil }
        let second = numbers.count == 3 ? numbers[2] : 0
        guard (0...59).contains(second) else { return nil }
        return (numbers[0], numbers[1], second)
    }
}

/// A plan input an operator wrote that cannot be read.
public enum StaggerPlanInputError: Error, Equatable, CustomStringConvertible {
    case badDuration(String)
    case badCapacity(String)
    case badStart(String)
    case windowOutOfRange(String)
    case capacityOutOfRange(String)

    public var description: String {
        switch self {
        case .windowOutOfRange(let text): "'\(text)' is outside the windows a broadcast can have: from 1 second to 24 hours"
        case .capacityOutOfRange(let text): "'\(text)' is outside the capacities a broadcast can have: from 0.01 to 10,000,000 wake-ups per second"
        case .badDuration(let text): "'\(text)' is not a duration; write it like 30m, 1h, 90s or 1h30m"
        case .badCapacity(let text): "'\(text)' is not a rate; write wake-ups per second like 2000/s or 2000 (or 120000/m)"
        case .badStart(let text): "'\(text)' is not a time; write 05:00, 05:00:30 or 2026-11-23T05:00:00+09:00"
        }
    }
}
