import Foundation
import PaperboyText

/// A chart over time drawn by the server as SVG: lines (or steps) against a time axis, with ticks, labels and a
/// legend. Pure: the same series give the same text, which the tests read. Colours come from the stylesheet through
/// each series' class (a `Content-Security-Policy` without inline styles allows presentation classes only).
struct TimeChart: Sendable {
    struct Series: Sendable {
        var name: String
        /// `s-plan`, `s-sent`, …: the stylesheet's colour for the line.
        var cssClass: String
        var points: [(at: Date, value: Double)]
        /// Drawn as steps (a value holds until the next point), as a plan's rate is.
        var steps = false
    }

    var series: [Series]
    var from: Date
    var to: Date
    /// What the y axis counts, e.g. `sends/s`.
    var unit: String
    /// Values are shares (0…1), labelled as percentages, and the axis ends at 100 %.
    var percent = false
    /// A vertical line (now, while a broadcast runs).
    var marker: Date?
    var timeZone: TimeZone
    /// Bars, each from `at` for `width` seconds, drawn under the lines.
    var bars: [(at: Date, width: TimeInterval, value: Double)] = []
    /// The legend's name for the bars.
    var barName = ""

    static let width = 640.0
    static let height = 220.0
    static let left = 52.0
    static let right = 12.0
    static let top = 26.0
    static let bottom = 26.0

    /// The chart as an `<svg>` element, labelled `title` for screen readers.
    func svg(title: String) -> String {
        let span = max(1, to.timeIntervalSince(from))
        let plotWidth = Self.width - Self.left - Self.right
        let plotHeight = Self.height - Self.top - Self.bottom
        let highest = (series.flatMap { $0.points.map(\.value) } + bars.map(\.value)).filter(\.isFinite).max() ?? 0
        let yMax = percent ? 1 : Self.niceCeiling(max(highest, 1))
        func x(_ date: Date) -> Double { Self.left + min(1, max(0, date.timeIntervalSince(from) / span)) * plotWidth }
        func y(_ value: Double) -> Double { Self.top + plotHeight - min(1, max(0, value / yMax)) * plotHeight }

        var out = """
            <svg class="chart" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" role="img" aria-label="\(Self.escape(title))" \
            xmlns="http://www.w3.org/2000/svg"><title>\(Self.escape(title))</title>
            """
        // Horizontal grid and y labels.
        for step in 0...4 {
            let value = yMax * Double(step) / 4
            let lineY = Self.format(y(value))
            out +=
                "<line class=\"grid\" x1=\"\(Self.format(Self.left))\" x2=\"\(Self.format(Self.width - Self.right))\" y1=\"\(lineY)\" y2=\"\(lineY)\"/>"
            out += "<text class=\"tick\" x=\"\(Self.format(Self.left - 4))\" y=\"\(Self.format(y(value) + 4))\" text-anchor=\"end\">"
            out += Self.escape(percent ? "\(Int((value * 100).rounded()))%" : Self.short(value)) + "</text>"
        }
        // Time ticks.
        let stepSeconds = Self.timeStep(span: span)
        var tick = (from.timeIntervalSince1970 / stepSeconds).rounded(.up) * stepSeconds
        while tick <= to.timeIntervalSince1970 {
            let date = Date(timeIntervalSince1970: tick)
            let tickX = Self.format(x(date))
            out +=
                "<line class=\"grid\" x1=\"\(tickX)\" x2=\"\(tickX)\" y1=\"\(Self.format(Self.top))\" y2=\"\(Self.format(Self.height - Self.bottom))\"/>"
            let label = String(TerminalText.clock(date, timeZone: timeZone, fraction: false).prefix(stepSeconds < 60 ? 8 : 5))
            out += "<text class=\"tick\" x=\"\(tickX)\" y=\"\(Self.format(Self.height - 8))\" text-anchor=\"middle\">\(label)</text>"
            tick += stepSeconds
        }
        if let marker, marker >= from, marker <= to {
            let markerX = Self.format(x(marker))
            out +=
                "<line class=\"now\" x1=\"\(markerX)\" x2=\"\(markerX)\" y1=\"\(Self.format(Self.top))\" y2=\"\(Self.format(Self.height - Self.bottom))\"/>"
        }
        for bar in bars where bar.value > 0 {
            let barX = x(bar.at)
            let barWidth = max(0.5, x(bar.at.addingTimeInterval(bar.width)) - barX - 1)
            out += "<rect class=\"bar\" x=\"\(Self.format(barX + 0.5))\" y=\"\(Self.format(y(bar.value)))\" width=\"\(Self.format(barWidth))\" "
            out += "height=\"\(Self.format(y(0) - y(bar.value)))\"><title>"
            out +=
                "\(TerminalText.clock(bar.at, timeZone: timeZone, fraction: false)) \(TerminalText.grouped(Int(bar.value))) \(Self.escape(unit))</title></rect>"
        }
        for line in series where !line.points.isEmpty {
            var coordinates: [String] = []
            var previous: (at: Date, value: Double)?
            for point in line.points.sorted(by: { $0.at < $1.at }) where point.value.isFinite {
                if line.steps, let previous {
                    coordinates.append("\(Self.format(x(point.at))),\(Self.format(y(previous.value)))")
                }
                coordinates.append("\(Self.format(x(point.at))),\(Self.format(y(point.value)))")
                previous = point
            }
            out += "<polyline class=\"line \(Self.escape(line.cssClass))\" points=\"\(coordinates.joined(separator: " "))\"/>"
        }
        // The legend, along the top.
        var legendX = Self.left
        if !bars.isEmpty {
            out += "<rect class=\"key bar\" x=\"\(Self.format(legendX))\" y=\"6\" width=\"10\" height=\"10\"/>"
            out += "<text class=\"legend\" x=\"\(Self.format(legendX + 14))\" y=\"15\">\(Self.escape(barName))</text>"
            legendX += 22 + Double(barName.count) * 6.6
        }
        for line in series {
            out += "<rect class=\"key \(Self.escape(line.cssClass))\" x=\"\(Self.format(legendX))\" y=\"6\" width=\"10\" height=\"10\"/>"
            out += "<text class=\"legend\" x=\"\(Self.format(legendX + 14))\" y=\"15\">\(Self.escape(line.name))</text>"
            legendX += 22 + Double(line.name.count) * 6.6
        }
        out += "<text class=\"unit\" x=\"\(Self.format(Self.width - Self.right))\" y=\"15\" text-anchor=\"end\">\(Self.escape(unit))</text>"
        return out + "</svg>"
    }

    /// A round number at or above `value` for the axis' top: 1, 2, 2.5 or 5 times a power of ten.
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        let power = pow(10, (log10(value)).rounded(.down))
        for factor in [1.0, 2.0, 2.5, 5.0, 10.0] where factor * power >= value { return factor * power }
        return 10 * power
    }

    /// Seconds between time ticks: at most about 6 ticks over `span`.
    static func timeStep(span: TimeInterval) -> TimeInterval {
        let steps: [TimeInterval] = [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
        if let step = steps.first(where: { span / $0 <= 6 }) { return step }
        // Longer than six days: whole days, still at most about six ticks, whatever the span (a fixed day for any span
        // drew 11.5 million ticks for a 1e12 s window, issue 48).
        guard span.isFinite else { return .infinity }
        return (span / 6 / 86400).rounded(.up) * 86400
    }

    /// `1.2k`, `35`, `0.5`: an axis label.
    static func short(_ value: Double) -> String {
        if value >= 1_000_000 { return trimmed(value / 1_000_000) + "M" }
        if value >= 1000 { return trimmed(value / 1000) + "k" }
        return trimmed(value)
    }

    private static func trimmed(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

extension TimeChart {
    /// Bars over time, e.g. the plan's sends per minute as `paperboy cohorts plan` charts them in a terminal: one
    /// bar per `bucket` seconds from `start`.
    static func bars(counts: [Int], start: Date, bucket: TimeInterval, unit: String, name: String, timeZone: TimeZone) -> TimeChart {
        var chart = TimeChart(
            series: [],
            from: start,
            to: start.addingTimeInterval(bucket * Double(max(1, counts.count))),
            unit: unit,
            timeZone: timeZone
        )
        chart.bars = counts.enumerated().map { (start.addingTimeInterval(Double($0.offset) * bucket), bucket, Double($0.element)) }
        chart.barName = name
        return chart
    }
}
