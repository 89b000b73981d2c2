import Foundation
import PaperboyCore

/// Wake rates as `paperboy insights wake-rates` prints them: a header, then a table per dimension.
extension WakeRates {
    /// The report, e.g.
    ///
    /// ```
    /// Wake rates: receipts per accepted background push, morning, broadcasts of 2026-11-10 05:00:00 Asia/Tokyo to …
    /// all: 1,200,000 pushes, 780,000 woke the app: 65.0% (64.9–65.1%)
    /// groups under 200 pushes are merged into "other"; one still under it shows no rate
    ///
    /// WAVE          PUSHES    WAKES   RATE  95% INTERVAL
    /// 1            800,000  560,000  70.0%  69.9–70.1%
    /// 2            400,000  220,000  55.0%  54.8–55.2%
    /// other (1 group)   90       30      -  too few pushes
    /// ```
    ///
    /// A group with fewer than ``minimumPushes`` pushes shows its counts and `too few pushes` instead of a rate;
    /// `other` names how many groups it merges.
    public func report(timeZone: TimeZone) -> String {
        var lines: [String] = [
            "Wake rates: receipts per accepted background push, \(publication ?? "every publication"), broadcasts of "
                + "\(BroadcastProgress.dateTime(from, timeZone: timeZone)) to \(BroadcastProgress.dateTime(to, timeZone: timeZone)) (\(days == 1 ? "1 day" : "\(days) days"))",
            "all: \(TerminalText.grouped(total.pushes)) pushes, \(TerminalText.grouped(total.wakes)) woke the app"
                + (total.rate.map { ": \(Self.percent($0)) (\(Self.interval(total)))" } ?? ""),
        ]
        if let sample { lines.append(Self.sampleLine(sample, read: total.pushes)) }
        guard total.pushes > 0 else {
            lines.append("no accepted background pushes in the window: nothing to measure yet")
            return lines.joined(separator: "\n")
        }
        lines.append(
            "groups under \(TerminalText.grouped(minimumPushes)) pushes are merged into \"other\"; one still under it shows no rate"
        )
        for breakdown in dimensions where !breakdown.groups.isEmpty {
            lines.append("")
            lines += Self.table(breakdown, minimumPushes: minimumPushes)
        }
        return lines.joined(separator: "\n")
    }

    /// An ended broadcast's wake rates by wave, for the end of its report: a title, then the table (or a line
    /// saying no background push was accepted).
    /// - Parameter sample: how the pushes were sampled, when they were; its line follows the title.
    public static func broadcastReport(_ waves: Breakdown, sample: Sample? = nil, minimumPushes: Int = defaultMinimumPushes) -> String {
        let title = "Wake rates by wave (receipts per accepted background push; under \(TerminalText.grouped(minimumPushes)) pushes: no rate):"
        guard !waves.groups.isEmpty else { return title + " no accepted background pushes" }
        let read = waves.groups.reduce(0) { $0 + $1.pushes }
        return ([title] + (sample.map { [sampleLine($0, read: read)] } ?? []) + table(waves, minimumPushes: minimumPushes))
            .joined(separator: "\n")
    }

    /// `sampled: the pushes of 1.9% of devices (1,024 id ranges across all ids), 249,113 of the window's
    /// 13,468,221; rates and intervals are the sample's`.
    static func sampleLine(_ sample: Sample, read: Int) -> String {
        let share = sample.fraction >= 0.01 ? String(format: "%.1f%%", sample.fraction * 100) : String(format: "%.2f%%", sample.fraction * 100)
        return "sampled: the pushes of \(share) of devices (\(TerminalText.grouped(sample.ranges)) id ranges across all ids), "
            + "\(TerminalText.grouped(read)) of \(TerminalText.grouped(sample.windowPushes)); rates and intervals are the sample's"
    }

    /// A dimension's table: its name heads the key column.
    static func table(_ breakdown: Breakdown, minimumPushes: Int) -> [String] {
        let header = [breakdown.dimension.title.uppercased(), "PUSHES", "WAKES", "RATE", "95% INTERVAL"]
        let rows: [[String]] = breakdown.groups.map { group in
            let key = group.merged.map { "\(group.key) (\($0) group\($0 == 1 ? "" : "s"))" } ?? group.key
            guard let rate = group.rate else {
                return [key, TerminalText.grouped(group.pushes), TerminalText.grouped(group.wakes), "-", "too few pushes"]
            }
            return [key, TerminalText.grouped(group.pushes), TerminalText.grouped(group.wakes), percent(rate), interval(group)]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            let cells = row.indices.map { TerminalText.pad(row[$0], widths[$0], right: $0 == 1 || $0 == 2 || $0 == 3) }
            return TerminalText.trimTrailing(cells.joined(separator: "  "))
        }
    }

    /// `65.0%`.
    static func percent(_ rate: Double) -> String {
        String(format: "%.1f%%", rate * 100)
    }

    /// `64.9–65.1%`, or empty without a rate.
    static func interval(_ group: Group) -> String {
        guard let low = group.low, let high = group.high else { return "" }
        return String(format: "%.1f–%.1f%%", low * 100, high * 100)
    }
}

extension WakeRates.Dimension {
    /// How the report names it.
    public var title: String {
        switch self {
        case .wave: "wave"
        case .platform: "platform"
        case .modelFamily: "model family"
        case .osMajor: "OS"
        case .network: "network"
        case .charging: "charging"
        case .lowPowerMode: "low power mode"
        case .backgroundRefresh: "background refresh"
        case .localHour: "local hour"
        }
    }
}
