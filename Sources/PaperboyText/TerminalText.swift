import Foundation

/// The formats every terminal report shares, so that a count, a duration or a clock time reads the same in
/// `paperboy broadcast status`, `cohorts plan` and the demo's report.
public enum TerminalText {
    /// `text` filled with spaces to `width`: on the right (left-aligned), or on the left with `right`.
    /// Text wider than `width` is left as it is.
    public static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - text.count))
        return right ? fill + text : text + fill
    }

    /// A left-aligned column of a listing: `text` padded to `width`, and at least one space before the next
    /// column even when `text` is wider.
    public static func column(_ text: String, _ width: Int) -> String {
        pad(text, width - 1) + " "
    }

    /// A row of a listing (`paperboy apps list`, …): each cell left-aligned in a column of its width and at
    /// least one space from the next, even when wider; then `last`, as it is.
    public static func row(_ cells: [(text: String, width: Int)], last: String) -> String {
        cells.map { column($0.text, $0.width) }.joined() + last
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

    /// `1h 30m`, `30m`, `1m 30s`, `0.5s`: a duration as operators write it in flags (`--window 30m`),
    /// rounded to the second; `-` for a value that is not a duration.
    public static func duration(_ seconds: TimeInterval) -> String {
        guard seconds.isFinite, seconds.magnitude < 1e9 else { return "-" }
        guard seconds >= 1 else { return String(format: "%.1fs", seconds) }
        let whole = Int(seconds.rounded())
        let parts = [(whole / 3600, "h"), (whole % 3600 / 60, "m"), (whole % 60, "s")].filter { $0.0 > 0 }
        return parts.map { "\($0.0)\($0.1)" }.joined(separator: " ")
    }

    /// `05:01:23` (or `05:01:23.4` with `fraction`) in `timeZone`, rounded down.
    public static func clock(_ date: Date, timeZone: TimeZone, fraction: Bool) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let tenths = Int((date.timeIntervalSince1970 * 10).rounded(.down))
        let whole = Date(timeIntervalSince1970: Double(tenths.floorDivided(by: 10)))
        let parts = calendar.dateComponents([.hour, .minute, .second], from: whole)
        let text = String(format: "%02d:%02d:%02d", parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
        return fraction ? text + ".\(tenths.floorModulo(10))" : text
    }

    /// `text` without its trailing spaces: table rows end at their last cell.
    public static func trimTrailing(_ text: String) -> String {
        String(text.reversed().drop(while: { $0 == " " }).reversed())
    }
}

extension Int {
    fileprivate func floorDivided(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    fileprivate func floorModulo(_ divisor: Int) -> Int { self - floorDivided(by: divisor) * divisor }
}
