import Foundation
import PaperboyCore

/// The plan as `paperboy cohorts plan` and `paperboy broadcast --dry-run` print it.
extension StaggerPlan {
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
            let time = TerminalText.clock(start.addingTimeInterval(Double(index) * bucket), timeZone: timeZone, fraction: false)
            rows.append((time, TerminalText.grouped(count), label, count))
            counted += count
        }
        let countWidth = max("SENDS".count, rows.map(\.count.count).max() ?? 0)
        let cohortWidth = max("COHORTS".count, rows.map(\.cohorts.count).max() ?? 0)
        let barWidth = max(10, width - 8 - 2 - countWidth - 2 - 2 - cohortWidth)
        let peak = counts.max() ?? 1
        let unit = minutesPerRow == 1 ? "minute" : "\(minutesPerRow) minutes"
        var lines = [
            "planned sends per \(unit) (\(timeZone.identifier); # = \(TerminalText.grouped(Int((Double(peak) / Double(barWidth)).rounded(.up)))) sends)"
        ]
        lines.append(
            TerminalText.pad("TIME", 8) + "  " + TerminalText.pad("SENDS", countWidth, right: true) + "  " + TerminalText.pad("", barWidth)
                + "  COHORTS"
        )
        for row in rows {
            let length = row.sends == 0 ? 0 : max(1, Int((Double(row.sends) / Double(peak) * Double(barWidth)).rounded()))
            let bar = String(repeating: "#", count: length)
            let line =
                row.time + "  " + TerminalText.pad(row.count, countWidth, right: true) + "  " + TerminalText.pad(bar, barWidth) + "  " + row.cohorts
            lines.append(TerminalText.trimTrailing(line))
        }
        return lines.joined(separator: "\n")
    }

    /// The cohorts as a table: index, devices, slot start and end (in `timeZone`), rate per second.
    public func table(timeZone: TimeZone) -> String {
        let devicesWidth = max("DEVICES".count, cohorts.map { TerminalText.grouped($0.devices).count }.max() ?? 0)
        var lines = [
            TerminalText.pad("COHORT", 6) + "  " + TerminalText.pad("DEVICES", devicesWidth, right: true) + "  START       END         RATE/S"
        ]
        for cohort in cohorts {
            lines.append(
                TerminalText.pad("\(cohort.index)", 6, right: true) + "  "
                    + TerminalText.pad(TerminalText.grouped(cohort.devices), devicesWidth, right: true) + "  "
                    + TerminalText.pad(TerminalText.clock(cohort.start, timeZone: timeZone, fraction: true), 10) + "  "
                    + TerminalText.pad(TerminalText.clock(cohort.end, timeZone: timeZone, fraction: true), 10) + "  "
                    + TerminalText.pad(String(format: "%.1f", cohort.rate), 6, right: true)
            )
        }
        return lines.joined(separator: "\n")
    }
}
