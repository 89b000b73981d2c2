import Foundation

extension StaggerPlan {
    /// Planned sends in consecutive buckets of `seconds`, from the plan's start, up to the last send.
    ///
    /// A device's send instant is `ordinal / rate` after the start (``sendTime(cohort:ordinal:)``), so a
    /// bucket's count is exact; with one-second buckets this is ``sendsPerSecond()`` without walking every
    /// device.
    public func sends(perBucketOf seconds: TimeInterval) -> [Int] {
        precondition(seconds > 0, "a bucket must be longer than zero")
        let total = cohorts.reduce(0) { $0 + $1.devices }
        guard total > 0, rate > 0 else { return [] }
        var buckets: [Int] = []
        var counted = 0
        while counted < total {
            let next = sentBefore(Double(buckets.count + 1) * seconds, total: total)
            buckets.append(next - counted)
            counted = next
        }
        return buckets
    }

    /// A text chart of the planned sends over time, one row per minute, or per several minutes when the
    /// window is longer than `maxRows` minutes; each row says which cohorts send in it.
    ///
    /// - Parameters:
    ///   - timeZone: the zone the row times are shown in.
    ///   - width: the widest a line may be, in characters.
    ///   - maxRows: the most rows before minutes are grouped.
    public func chart(timeZone: TimeZone, width: Int = 80, maxRows: Int = 30) -> String {
        let total = cohorts.reduce(0) { $0 + $1.devices }
        guard total > 0, rate > 0 else { return "no sends planned" }
        let minutesPerRow = max(1, Int((window / 60 / Double(maxRows)).rounded(.up)))
        let bucket = Double(minutesPerRow * 60)
        let counts = sends(perBucketOf: bucket)
        let firstOrdinals = cohorts.reduce(into: [0]) { $0.append($0.last! + $1.devices) }
        var rows: [(time: String, count: String, cohorts: String, sends: Int)] = []
        var counted = 0
        for (index, count) in counts.enumerated() {
            let sending = cohorts.indices.filter { cohort in
                cohorts[cohort].devices > 0 && firstOrdinals[cohort] < counted + count && firstOrdinals[cohort + 1] > counted
            }
            let label =
                if let first = sending.first, let last = sending.last { first == last ? "\(first)" : "\(first)-\(last)" } else { "" }
            let time = Self.clock(start.addingTimeInterval(Double(index) * bucket), timeZone: timeZone, fraction: false)
            rows.append((time, Self.grouped(count), label, count))
            counted += count
        }
        let countWidth = max("SENDS".count, rows.map(\.count.count).max() ?? 0)
        let cohortWidth = max("COHORTS".count, rows.map(\.cohorts.count).max() ?? 0)
        let barWidth = max(10, width - 8 - 2 - countWidth - 2 - 2 - cohortWidth)
        let peak = counts.max() ?? 1
        let unit = minutesPerRow == 1 ? "minute" : "\(minutesPerRow) minutes"
        var lines = [
            "planned sends per \(unit) (\(timeZone.identifier); # = \(Self.grouped(Int((Double(peak) / Double(barWidth)).rounded(.up)))) sends)"
        ]
        lines.append(Self.pad("TIME", 8) + "  " + Self.pad("SENDS", countWidth, right: true) + "  " + Self.pad("", barWidth) + "  COHORTS")
        for row in rows {
            let length = row.sends == 0 ? 0 : max(1, Int((Double(row.sends) / Double(peak) * Double(barWidth)).rounded()))
            let bar = String(repeating: "#", count: length)
            let line = row.time + "  " + Self.pad(row.count, countWidth, right: true) + "  " + Self.pad(bar, barWidth) + "  " + row.cohorts
            lines.append(String(line.reversed().drop(while: { $0 == " " }).reversed()))
        }
        return lines.joined(separator: "\n")
    }

    /// The cohorts as a table: index, devices, slot start and end (in `timeZone`), rate per second.
    public func table(timeZone: TimeZone) -> String {
        let devicesWidth = max("DEVICES".count, cohorts.map { Self.grouped($0.devices).count }.max() ?? 0)
        var lines = [Self.pad("COHORT", 6) + "  " + Self.pad("DEVICES", devicesWidth, right: true) + "  START       END         RATE/S"]
        for cohort in cohorts {
            lines.append(
                Self.pad("\(cohort.index)", 6, right: true) + "  " + Self.pad(Self.grouped(cohort.devices), devicesWidth, right: true) + "  "
                    + Self.pad(Self.clock(cohort.start, timeZone: timeZone, fraction: true), 10) + "  "
                    + Self.pad(Self.clock(cohort.end, timeZone: timeZone, fraction: true), 10) + "  "
                    + Self.pad(String(format: "%.1f", cohort.rate), 6, right: true)
            )
        }
        return lines.joined(separator: "\n")
    }

    /// `12,345,678`: counts as operators read them, the same in every locale.
    public static func grouped(_ count: Int) -> String {
        let digits = String(count.magnitude)
        var out = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0 && (digits.count - offset).isMultiple(of: 3) { out.append(",") }
            out.append(digit)
        }
        return (count < 0 ? "-" : "") + out
    }

    /// `1h 30m`, `30m`, `1m 30s`, `0.5s`: a window as operators write it.
    public static func duration(_ seconds: TimeInterval) -> String {
        guard seconds >= 1 else { return String(format: "%.1fs", seconds) }
        let whole = Int(seconds.rounded())
        let parts = [(whole / 3600, "h"), (whole % 3600 / 60, "m"), (whole % 60, "s")].filter { $0.0 > 0 }
        return parts.map { "\($0.0)\($0.1)" }.joined(separator: " ")
    }

    /// `05:01:23` (or `05:01:23.4` with `fraction`) in `timeZone`.
    public static func clock(_ date: Date, timeZone: TimeZone, fraction: Bool) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let tenths = Int((date.timeIntervalSince1970 * 10).rounded(.down))
        let whole = Date(timeIntervalSince1970: Double(tenths.floorDivided(by: 10)))
        let parts = calendar.dateComponents([.hour, .minute, .second], from: whole)
        let text = String(format: "%02d:%02d:%02d", parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
        return fraction ? text + ".\(tenths.floorModulo(10))" : text
    }

    /// How many sends happen strictly before `offset` seconds after the start: ordinals `k` with
    /// `k / rate < offset`, in the same arithmetic as ``sendsPerSecond()``.
    private func sentBefore(_ offset: Double, total: Int) -> Int {
        var count = min(total, max(0, Int((offset * rate).rounded(.up))))
        while count > 0 && Double(count - 1) / rate >= offset { count -= 1 }
        while count < total && Double(count) / rate < offset { count += 1 }
        return count
    }

    private static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - text.count))
        return right ? fill + text : text + fill
    }
}

extension Int {
    fileprivate func floorDivided(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    fileprivate func floorModulo(_ divisor: Int) -> Int { self - floorDivided(by: divisor) * divisor }
}
