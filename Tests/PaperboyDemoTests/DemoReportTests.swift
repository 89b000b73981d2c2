import Foundation
import PaperboyCore
import PaperboyDemo
import Testing

@Suite struct DemoReportTests {
    static let report = SyntheticRecording.report()

    @Test(arguments: [80, 60, 100])
    func terminalFitsTheWidth(width: Int) {
        let text = Self.report.terminal(width: width)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            #expect(line.count <= width, "too wide: \(line)")
        }
    }

    @Test func terminalHasTheTableValuesDefinitionsAndGoals() {
        let text = Self.report.terminal()
        for result in Self.report.results {
            let row = text.split(separator: "\n").first { $0.hasPrefix(result.strategy.rawValue + " ") && !$0.contains(":") }
            #expect(row != nil, "no table row for \(result.strategy)")
            guard let row else { continue }
            #expect(row.contains(String(format: "%.1f", result.peakPerSecond)))
            #expect(row.contains(String(format: "%.1f", result.meanPerSecond)))
            #expect(row.contains(String(format: "%.1f", result.peakToMean)))
            #expect(row.contains(String(format: "%.1f%%", result.heldShare * 100)))
            #expect(row.contains(String(format: "%.2f", result.pushesPerDevice)))
        }
        #expect(text.contains("PEAK/MEAN"))
        #expect(text.contains("peak = edition GETs in the busiest demo minute / 60"))
        #expect(text.contains("staggered peak/mean ≤ 1.2"))
        #expect(text.contains("blast peak/mean"))
        #expect(!text.split(separator: "\n").contains { $0.contains("blast peak/mean") && $0.contains("missed") })
        #expect(text.contains("waves held ≥ 0.98 × ceiling"))
        #expect(text.contains("waves pushes/device ≤ 1.8"))
        #expect(text.contains(" met") || text.contains(" missed"))
        // One chart per strategy, all to one scale: the top label is the same busiest minute.
        let top = String(format: "%.1f", Self.report.results.map(\.peakPerSecond).max() ?? 0)
        #expect(text.split(separator: "\n").filter { $0.hasPrefix(top + " ┤") }.count == 3)
    }

    @Test(
        "the report ends the waves strategy with Paperboy's wake rates by wave: in the terminal within the width, and in the HTML",
        arguments: [60, 80]
    )
    func wakeRatesByWave(width: Int) throws {
        var results = Self.report.results
        let waves = try #require(results.firstIndex { $0.strategy == .waves })
        results[waves].wakeRatesByWave = WakeRates.breakdown(
            .wave,
            [
                .init(.wave, "1", pushes: 25_000, wakes: 17_349), .init(.wave, "2", pushes: 8_029, wakes: 3_495),
                .init(.wave, "3", pushes: 150, wakes: 20),
            ],
            minimumPushes: 200
        )
        var report = Self.report
        report.results = results
        let lines = report.terminal(width: width).split(separator: "\n", omittingEmptySubsequences: false)
        let title = try #require(lines.firstIndex { $0.hasPrefix("waves: Wake rates by wave") })
        let table = lines[title...].drop { !$0.hasPrefix("  WAVE") }
        #expect(
            table.dropFirst().prefix(3).map { $0.split(separator: " ").prefix(4).joined(separator: " ") } == [
                "1 25,000 17,349 69.4%", "2 8,029 3,495 43.5%", "other (1 group) 150",
            ]
        )
        #expect(lines.allSatisfy { $0.count <= width })
        // The HTML page has the same table.
        let html = report.html()
        #expect(html.contains("<h3>Wake rates by wave (waves)</h3>"))
        #expect(html.contains("<td>1</td><td class=\"num\">25,000</td><td class=\"num\">17,349</td><td class=\"num\">69.4%</td>"))
        // Without a measurement (a recording made without a database) there is no such table.
        #expect(!Self.report.terminal(width: width).contains("Wake rates by wave"))
        #expect(!Self.report.html().contains("Wake rates by wave"))
    }

    @Test func goalsAreJudged() {
        let goals = Self.report.goals
        #expect(goals.count == 4)
        let blast = Self.report.results.first { $0.strategy == .blast }!
        #expect(goals[1].met == nil && goals[1].verdict == "for contrast, not a goal", "the blast's peak measures the machine: \(blast.peakToMean)")
        let partial = DemoReport(
            results: [Self.report.results[0]],
            devices: 10,
            seed: 1,
            timeCompression: [:],
            parameters: .init(),
            window: 60,
            deadline: 120
        )
        #expect(partial.goals[0].met == nil)
        #expect(partial.goals[0].verdict == "not run")
    }

    @Test func htmlIsSelfContainedAndEscaped() {
        var results = Self.report.results
        results[0].rejections["<script>alert(\"x\")</script> & more"] = 1
        let report = DemoReport(
            results: results,
            devices: 4000,
            seed: 42,
            timeCompression: [.blast: 60],
            parameters: .init(),
            window: 1800,
            deadline: 7200
        )
        let html = report.html()
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<svg"))
        #expect(html.components(separatedBy: "<svg").count - 1 == 5)  // three strategies, the overlay and its zoom
        #expect(html.components(separatedBy: "<svg").count == html.components(separatedBy: "</svg>").count)
        #expect(!html.lowercased().contains("<script"))
        #expect(!html.contains("http://"))
        #expect(!html.contains("https://"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more"))
        #expect(html.contains("</html>"))
        #expect(html.contains("<table"))
        #expect(html.contains("peak = edition GETs in the busiest demo minute / 60"))
        #expect(html.contains("medianDelay"))
    }

    @Test("the ceiling is printed beside the results, and each strategy's held share as a ratio of it")
    func ceilingBesideResults() throws {
        let report = Self.report
        let text = report.terminal(width: 100)
        #expect(text.contains("OF CEIL"))
        #expect(text.contains("ceiling (iOS, computed from the model, not measured): \(String(format: "%.1f%%", report.ceiling.heldShare * 100))"))
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        #expect(flat.contains(String(format: "%.2f pushes per reachable device", report.ceiling.pushesPerReachableDevice)))
        for result in report.results {
            let ratio = try #require(result.heldShareOfCeiling)
            #expect(abs(ratio - result.heldShare / report.ceiling.heldShare) < 1e-12, "an iOS-only fleet: held / ceiling")
            let row = text.split(separator: "\n").first { $0.hasPrefix(result.strategy.rawValue + " ") && !$0.contains(":") }
            #expect(row?.contains(String(format: "%.3f", ratio)) == true)
        }
        let html = report.html()
        #expect(html.contains("of ceiling (iOS)"))
        #expect(html.contains("ceiling (iOS, computed from the model, not measured)"))
        // The goal is judged against the ceiling.
        let waves = try #require(report.results.first { $0.strategy == .waves })
        #expect(report.goals[2].met == ((waves.heldShareOfCeiling ?? 0) >= 0.98))
    }

    @Test("the fleet parameters are stated as assumptions, with --fleet as the way to try others, in the terminal and HTML")
    func parametersAreAssumptions() {
        let text = Self.report.terminal(width: 100)
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        #expect(flat.contains("iOS model (assumptions, not measurements; try others with --fleet FILE.json"))
        #expect(flat.contains("runOnCellular 0.30 / 0.10"))
        let html = Self.report.html()
        #expect(html.contains("are assumptions, not measurements"))
        #expect(html.contains("--fleet FILE.json"))
        #expect(html.contains("assumption: background run probability"))
    }

    @Test func escapesText() {
        #expect(DemoReport.escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;")
    }

    /// Writes a sample report for `scripts/check-demo-report.sh` when PAPERBOY_DEMO_REPORT_SAMPLE names a file.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PAPERBOY_DEMO_REPORT_SAMPLE"] != nil))
    func writeSample() throws {
        let path = try #require(ProcessInfo.processInfo.environment["PAPERBOY_DEMO_REPORT_SAMPLE"])
        let report = SyntheticRecording.report(devices: 20_000)
        try report.html().write(toFile: path, atomically: true, encoding: .utf8)
        try report.terminal().write(toFile: path + ".txt", atomically: true, encoding: .utf8)
    }
}

@Suite("Demo report: the three orders")
struct DemoReportOrderTests {
    static func result(_ strategy: DemoStrategy, ready: Int, held: Double = 0.96, pushes: Double = 1.7) -> StrategyResult {
        var result = StrategyResult(SyntheticRecording.make(.waves, model: FleetModel(seed: 1), devices: 1_000), reachable: 950)
        result.strategy = strategy
        result.readyAtOpen = ReadyAtOpen(opens: 1_000, ready: ready, waited: 0, medianWait: nil, p90Wait: nil, stillWaiting: 0)
        result.heldShare = held
        result.pushesPerDevice = pushes
        return result
    }

    @Test("habit order is judged against the oracle (≥ 0.95 ×) and against hash order for held, pushes and peak/mean; its gain is shown")
    func goals() {
        let results = [Self.result(.hash, ready: 800), Self.result(.waves, ready: 880), Self.result(.oracle, ready: 900)]
        let report = DemoReport(
            results: results,
            devices: 1_000,
            seed: 1,
            timeCompression: [.waves: 60],
            parameters: .init(),
            window: 1800,
            deadline: 7200
        )
        let goals = Dictionary(report.goals.map { ($0.title, $0) }, uniquingKeysWith: { $1 })
        #expect(goals["habit ready at open ≥ 0.95 × oracle"]?.met == true)
        #expect(goals["habit ready at open ≥ 0.95 × oracle"]?.value == "88.0% / 90.0% = 0.978")
        #expect(goals["habit ready at open over hash order"]?.illustration == true)
        #expect(goals["habit ready at open over hash order"]?.value.contains("+8.0 pp") == true)
        #expect(goals["habit held ≥ 0.99 × hash order's"]?.met == true)
        let text = report.terminal()
        #expect(text.contains("READY@OPEN"))
        #expect(text.contains("88.0%"))

        let worse = DemoReport(
            results: [Self.result(.hash, ready: 800), Self.result(.waves, ready: 800, held: 0.90), Self.result(.oracle, ready: 900)],
            devices: 1_000,
            seed: 1,
            timeCompression: [:],
            parameters: .init(),
            window: 1800,
            deadline: 7200
        )
        let missed = Dictionary(worse.goals.map { ($0.title, $0) }, uniquingKeysWith: { $1 })
        #expect(missed["habit ready at open ≥ 0.95 × oracle"]?.met == false)
        #expect(missed["habit held ≥ 0.99 × hash order's"]?.met == false)
        #expect(missed["habit pushes/device ≤ 1.01 × hash's"]?.met == true, "the same pushes: no cost")
    }
}
