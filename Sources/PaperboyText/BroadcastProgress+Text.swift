import Foundation
import PaperboyCore

/// The broadcast as `paperboy broadcast status` shows it: a live line, then a report.
extension BroadcastProgress {
    /// The fewest cells the progress bar of ``progressLine(width:now:)`` shrinks to.
    static let minimumBarCells = 10
    /// The most cells the progress bar of ``progressLine(width:now:)`` grows to.
    static let maximumBarCells = 40

    /// One line for a live terminal display, e.g.
    /// `running  wave 2/3  [#########.........]   50%  accepted 1,234  receipts 567  deadline in 2h 14m`.
    ///
    /// The bar and the percentage are the current wave's (the highest wave number present) done (sent
    /// or skipped) of its planned; `2/3` is that wave of the most the options allow. `accepted` counts
    /// the pushes APNs accepted over all waves; `receipts` counts the devices that reported the edition
    /// (`newData` and `noData`, from ``receipts``).
    ///
    /// The line fits in `width` characters: the bar shrinks, down to ``minimumBarCells``; below that the
    /// line is written tighter (single spaces, then `acc 1,234 rcpt 567 2h 14m left`), then receipts,
    /// accepted, the state and the deadline are left out in that order; a width too narrow even for the
    /// rest cuts the line.
    public func progressLine(width: Int = 80, now: Date) -> String {
        let wave = currentWave
        let counts = wave?.counts ?? Counts()
        let waveText = "wave \(wave?.wave ?? 0)/\(expectedWaves)"
        let percentText = TerminalText.pad(Self.percent(done: counts.done, of: counts.planned), 4, right: true)
        let left = deadline.timeIntervalSince(now)
        let accepted = TerminalText.grouped(totals.accepted)
        let received = TerminalText.grouped(Self.received(receipts))

        // From the roomiest to the tightest.
        let styles: [(separator: String, accepted: String, receipts: String, deadline: String)] = [
            ("  ", "accepted \(accepted)", "receipts \(received)", left > 0 ? "deadline in \(Self.remaining(left))" : "past deadline"),
            (" ", "accepted \(accepted)", "receipts \(received)", left > 0 ? "deadline in \(Self.remaining(left))" : "past deadline"),
            (" ", "acc \(accepted)", "rcpt \(received)", left > 0 ? "\(Self.remaining(left)) left" : "past deadline"),
        ]
        func assemble(_ parts: [String?], separator: String, cells: Int) -> String {
            let bar = "[" + Self.bar(done: counts.done, of: counts.planned, cells: cells) + "]"
            return parts.map { $0 ?? bar }.joined(separator: separator)
        }
        func fitted(_ parts: [String?], separator: String) -> String? {
            let room = width - assemble(parts, separator: separator, cells: 0).count
            guard room >= Self.minimumBarCells else { return nil }
            return assemble(parts, separator: separator, cells: min(Self.maximumBarCells, room))
        }
        // `nil` stands for the bar.
        for style in styles {
            let parts: [String?] = [state.rawValue, waveText, nil, percentText, style.accepted, style.receipts, style.deadline]
            if let line = fitted(parts, separator: style.separator) { return line }
        }
        // Then the tightest style, giving up parts.
        let tightest = styles[styles.count - 1]
        var kept: Set = ["state", "accepted", "receipts", "deadline"]
        for name in ["receipts", "accepted", "state", "deadline"] {
            kept.remove(name)
            var parts: [String?] = kept.contains("state") ? [state.rawValue] : []
            parts += [waveText, nil, percentText]
            if kept.contains("accepted") { parts.append(tightest.accepted) }
            if kept.contains("receipts") { parts.append(tightest.receipts) }
            if kept.contains("deadline") { parts.append(tightest.deadline) }
            if let line = fitted(parts, separator: tightest.separator) { return line }
        }
        let line = assemble([waveText, nil, percentText], separator: tightest.separator, cells: Self.minimumBarCells)
        return String(line.prefix(max(0, width)))
    }

    /// The broadcast as a report for `paperboy broadcast status`: a header, a table of waves, the
    /// rejections and skips of all waves by reason, and the edition's receipts by result; with
    /// `showCohorts`, a table of cohorts after each wave.
    ///
    /// - Parameters:
    ///   - timeZone: the zone times are shown in.
    ///   - width: the widest the free-text lines (options, reasons) may be before they wrap; the tables
    ///     are as wide as their content.
    ///   - showCohorts: adds each wave's cohorts.
    public func report(timeZone: TimeZone, width: Int = 100, showCohorts: Bool = false) -> String {
        let labelWidth = 12
        func field(_ label: String, _ value: String) -> String { TerminalText.pad(label, labelWidth) + value }

        var lines: [String] = [
            field("broadcast", id.uuidString.lowercased()),
            field("edition", "\(publication) \(issueDate) (\(editionID.uuidString.lowercased()))"),
            field("environment", environment.rawValue),
            field("state", state.rawValue),
            field("origin", origin),
            field("created", Self.dateTime(createdAt, timeZone: timeZone)),
            field("deadline", Self.dateTime(deadline, timeZone: timeZone)),
        ]
        if let finishedAt { lines.append(field("finished", Self.dateTime(finishedAt, timeZone: timeZone))) }
        if state == .expired {
            // The deadline ended it: no error, and the devices it did not reach are said, not hidden.
            let notSent = waves.reduce(0) { $0 + max(0, $1.counts.planned - $1.counts.done) }
            lines.append(
                field(
                    "expired",
                    "the deadline came with \(TerminalText.grouped(notSent)) planned device\(notSent == 1 ? "" : "s") not sent"
                        + " (the last wave sent what it could, earliest-due first); not a failure"
                )
            )
        }
        if let failure { lines.append(field("failure", failure)) }
        if let note { lines.append(field("planned", note)) }
        for hold in held ?? [] {
            lines.append(
                field(
                    "held",
                    "\(hold.provider.displayName) since \(Self.dateTime(hold.since, timeZone: timeZone)): \(hold.reason); "
                        + "\(TerminalText.grouped(hold.heldDeactivations)) deactivations held, none applied. Fix the configuration "
                        + "(paperboy apps set-apns, set-fcm, set-bundle-id or release), or paperboy apps confirm-deactivations"
                )
            )
        }
        for pause in paused ?? [] {
            lines.append(
                field(
                    "paused",
                    "\(pause.provider.displayName) since \(Self.dateTime(pause.since, timeZone: timeZone)) by \(pause.workers) of "
                        + "\(pause.ofWorkers) worker\(pause.ofWorkers == 1 ? "" : "s"): the provider answers that it is unavailable, or cannot be "
                        + "reached; its devices wait, none is recorded, a probe goes out with backoff, and sending resumes at the plan's rate "
                        + "when it answers"
                )
            )
        }
        lines += Self.wrap(label: TerminalText.pad("options", labelWidth), items: optionsSummary, width: width)

        lines.append("")
        let sorted = waves.sorted { $0.wave < $1.wave }
        if sorted.isEmpty {
            lines.append("no waves yet")
        } else {
            lines += waveTable(sorted, timeZone: timeZone)
            for wave in sorted where wave.finishedAt == nil && (wave.behindSeconds ?? 0) >= 1 {
                lines.append(
                    "wave \(wave.wave) is \(TerminalText.duration(wave.behindSeconds ?? 0)) behind its plan (catching up at the plan's rate)"
                )
            }
        }

        let all = totals
        let reasonLines: [(String, [String: Int])] = [("Rejected by reason:", all.rejected), ("Skipped by why:", all.skipped)]
        var wroteReasons = false
        for (label, counts) in reasonLines where counts.values.contains(where: { $0 != 0 }) {
            if !wroteReasons { lines.append("") }
            wroteReasons = true
            lines += Self.wrap(label: label + " ", items: Self.tally(counts), width: width)
        }
        if all.dormant > 0 {
            lines.append("")
            lines += Self.wrap(
                label: "Dormant: ",
                items: [
                    "\(TerminalText.grouped(all.dormant)) device\(all.dormant == 1 ? "" : "s") got wave 1's push and no follow-ups",
                    "no receipt for their last \(options.dormantAfter) edition\(options.dormantAfter == 1 ? "" : "s")",
                    "a receipt or a new registration revives a device",
                ],
                width: width
            )
        }
        if all.byProvider.keys.contains(where: { $0 != "apns" }) {
            // A mixed fleet: what each provider was handed and said.
            let items = all.byProvider.keys.sorted().map { provider -> String in
                let counts = all.byProvider[provider]!
                let name = provider == "apns" ? "APNs" : provider.uppercased()
                let rejected = Self.tally(counts.rejected)
                let received = Self.received(counts.receipts)
                return "\(name): \(TerminalText.grouped(counts.sent)) sent / \(TerminalText.grouped(counts.accepted)) accepted"
                    + (rejected.isEmpty ? "" : " (\(rejected.joined(separator: " / ")))")
                    + (counts.receipts.isEmpty ? "" : " / \(TerminalText.grouped(received)) received")
            }
            lines.append("")
            lines += Self.wrap(label: "By provider: ", items: items, width: width)
        }
        lines.append("")
        var receiptItems = Self.tally(receipts)
        if receiptItems.isEmpty { receiptItems = ["none yet"] }
        // The tallies are a few seconds behind while workers run: say as of when.
        if let receiptsCountedThrough { receiptItems.append("counted through \(Self.dateTime(receiptsCountedThrough, timeZone: timeZone))") }
        lines += Self.wrap(label: "Receipts by result (edition): ", items: receiptItems, width: width)
        if let readyAtOpen {
            lines.append("")
            lines += Self.wrap(label: "Ready at open: ", items: readyAtOpen.textItems, width: width)
        }

        if showCohorts {
            for wave in sorted {
                lines.append("")
                lines.append("wave \(wave.wave) (\(wave.kind.rawValue)) cohorts:")
                if wave.cohorts.isEmpty {
                    lines.append("no cohorts")
                } else {
                    lines += cohortTable(wave.cohorts.sorted { $0.cohort < $1.cohort }, timeZone: timeZone)
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `window 30m`, `16 cohorts`, …: the options as operators write them.
    var optionsSummary: [String] {
        let pace =
            switch options.pace {
            case .window(let seconds): "window \(TerminalText.duration(seconds))"
            case .capacity(let perSecond): "capacity \(Self.rate(perSecond))/s"
            }
        return [
            pace,
            options.cohorts == 1 ? "1 cohort" : "\(options.cohorts) cohorts",
            "waves every \(TerminalText.duration(options.waveInterval))",
            options.maxPushesPerDevice == .auto
                ? "pushes per device: auto (until the deadline)" : "max \(options.maxPushesPerDevice) pushes per device",
            "alert last resort \(options.alertLastResort ? "yes" : "no")",
            options.dormantAfter == 0
                ? "dormant devices: not spared"
                : "dormant after \(options.dormantAfter) unanswered edition\(options.dormantAfter == 1 ? "" : "s")",
        ]
    }

    private func waveTable(_ waves: [Wave], timeZone: TimeZone) -> [String] {
        var rows: [[String]] = waves.map { wave in
            [
                "\(wave.wave)", wave.kind.rawValue, TerminalText.clock(wave.startsAt, timeZone: timeZone, fraction: false),
            ] + Self.countColumns(wave.counts) + [Self.percent(done: wave.counts.done, of: wave.counts.planned)]
        }
        if waves.count > 1 {
            let all = totals
            rows.append(["total", "", ""] + Self.countColumns(all) + [Self.percent(done: all.done, of: all.planned)])
        }
        let header = ["WAVE", "KIND", "STARTS", "PLANNED", "SENT", "ACCEPTED", "REJECTED", "SKIPPED", "RECEIPTS", "DONE"]
        return Self.table(header: header, rows: rows, leftAligned: [0, 1, 2])
    }

    private func cohortTable(_ cohorts: [Cohort], timeZone: TimeZone) -> [String] {
        let rows: [[String]] = cohorts.map { cohort in
            let slot =
                TerminalText.clock(cohort.startsAt, timeZone: timeZone, fraction: true) + "–"
                + TerminalText.clock(cohort.endsAt, timeZone: timeZone, fraction: true)
            return ["\(cohort.cohort)", slot] + Self.countColumns(cohort.counts)
        }
        let header = ["COHORT", "SLOT", "PLANNED", "SENT", "ACCEPTED", "REJECTED", "SKIPPED", "RECEIPTS"]
        return Self.table(header: header, rows: rows, leftAligned: [1])
    }

    /// Planned, sent, accepted, rejected, skipped and receipts (`newData` + `noData`), grouped.
    private static func countColumns(_ counts: Counts) -> [String] {
        [
            counts.planned, counts.sent, counts.accepted, counts.rejected.values.reduce(0, +),
            counts.skipped.values.reduce(0, +), received(counts.receipts),
        ].map(TerminalText.grouped)
    }

    /// Columns two spaces apart, as wide as their widest cell; numbers right-aligned, the columns in
    /// `leftAligned` left-aligned; no trailing spaces.
    private static func table(header: [String], rows: [[String]], leftAligned: Set<Int>) -> [String] {
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            let line = row.indices.map { TerminalText.pad(row[$0], widths[$0], right: !leftAligned.contains($0)) }.joined(separator: "  ")
            return TerminalText.trimTrailing(line)
        }
    }

    /// `label item, item, …`, wrapped before `width` at the commas, continuation lines indented under
    /// the first item. An item longer than a line stands alone on its line.
    private static func wrap(label: String, items: [String], width: Int) -> [String] {
        let indent = String(repeating: " ", count: label.count)
        var lines: [String] = []
        var line = label
        for (index, item) in items.enumerated() {
            let text = index < items.count - 1 ? item + "," : item
            if line.count > label.count && line.count + 1 + text.count > width {
                lines.append(line)
                line = indent + text
            } else {
                line += (line.count > label.count ? " " : "") + text
            }
        }
        lines.append(line)
        return lines.map(TerminalText.trimTrailing)
    }

    /// `Unregistered 1,200` items, the largest count first, equal counts by name.
    static func tally(_ counts: [String: Int]) -> [String] {
        counts.filter { $0.value != 0 }
            .sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\($0.key) \(TerminalText.grouped($0.value))" }
    }

    /// `45%`, rounded down so that 100% means all done; `-` when nothing was planned.
    static func percent(done: Int, of planned: Int) -> String {
        guard planned > 0 else { return "-" }
        let value = min(100, max(0, Int((Double(done) / Double(planned) * 100).rounded(.down))))
        return "\(value)%"
    }

    /// `#` for the done part of `cells`, `.` for the rest, rounded down so a full bar means all done.
    static func bar(done: Int, of planned: Int, cells: Int) -> String {
        let filled = planned > 0 ? min(cells, max(0, Int((Double(done) / Double(planned) * Double(cells)).rounded(.down)))) : 0
        return String(repeating: "#", count: filled) + String(repeating: ".", count: max(0, cells - filled))
    }

    /// `2h 14m`, `14m`, `45s`: time left, rounded down.
    static func remaining(_ seconds: TimeInterval) -> String {
        let whole = max(0, Int(seconds.rounded(.down)))
        let hours = whole / 3600
        let minutes = whole % 3600 / 60
        if hours > 0 { return "\(hours)h \(minutes)m" }
        if minutes > 0 { return "\(minutes)m" }
        return "\(whole)s"
    }

    /// `2,000` or `12.5`: a rate without needless decimals.
    private static func rate(_ perSecond: Double) -> String {
        perSecond.rounded() == perSecond && perSecond.magnitude < 1e15 ? TerminalText.grouped(Int(perSecond)) : String(format: "%.1f", perSecond)
    }

    /// `2026-11-23 05:00:00 Asia/Tokyo`: a date and time in `timeZone`, seconds rounded down.
    static func dateTime(_ date: Date, timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let whole = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        let parts = calendar.dateComponents([.year, .month, .day], from: whole)
        let day = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
        return "\(day) \(TerminalText.clock(whole, timeZone: timeZone, fraction: false)) \(timeZone.identifier)"
    }
}
