import Foundation
import PaperboyDemo
import Testing

/// The report splits a mixed fleet's results by platform: held share, pushes per device, time to hold.
@Suite struct PlatformSplitTests {
    /// 4 iOS devices (0–3, one swiped away) and 2 Android devices (4, 5).
    static func recording() -> DemoRecording {
        DemoRecording(
            strategy: .waves,
            devices: 6,
            deadline: 3600,
            window: 600,
            pushes: [
                .init(device: 0, at: 10, pushType: "background"), .init(device: 1, at: 20, pushType: "background"),
                .init(device: 2, at: 30, pushType: "background"), .init(device: 2, at: 1830, pushType: "background"),
                .init(device: 4, at: 40, pushType: "android"), .init(device: 5, at: 50, pushType: "android"),
                .init(device: 5, at: 1850, pushType: "android"),
            ],
            requests: [],
            receipts: [
                .init(device: 0, at: 100, result: "newData"), .init(device: 1, at: 300, result: "failed"),
                .init(device: 2, at: 1900, result: "newData"), .init(device: 4, at: 60, result: "newData"),
                .init(device: 5, at: 4000, result: "newData"),
            ],
            rejections: [:],
            wallSeconds: 1,
            androidDevices: 2
        )
    }

    static var result: StrategyResult { StrategyResult(recording(), reachable: 5) }

    @Test("each platform's devices, held share, pushes per device and time to hold")
    func platformFigures() throws {
        let result = Self.result
        let ios = try #require(result.platform(.ios))
        let android = try #require(result.platform(.android))
        #expect(ios.devices == 4 && ios.reachable == 3 && ios.pushes == 4 && ios.held == 2)
        #expect(ios.heldShare == 2.0 / 3.0)
        #expect(ios.pushesPerDevice == 1)
        #expect(ios.timeToHoldMedian == 1900)
        #expect(ios.timeToHoldP90 == 1900)
        // Device 5's receipt came after the deadline: it does not count.
        #expect(android.devices == 2 && android.reachable == 2 && android.pushes == 3 && android.held == 1)
        #expect(android.heldShare == 0.5 && android.pushesPerDevice == 1.5)
        #expect(android.timeToHoldMedian == 60 && android.timeToHoldP90 == 60)
        #expect(result.held == 3)
        #expect(StrategyResult(SyntheticRecording.make(.blast, model: FleetModel(seed: 1), devices: 50), reachable: 50).platform(.android) == nil)
    }

    @Test("terminal, HTML and JSON show the split; the Android parameters are marked as assumptions")
    func reportShowsSplit() throws {
        let report = DemoReport(
            results: [Self.result],
            devices: 6,
            seed: 1,
            timeCompression: [.waves: 60],
            parameters: FleetParameters(),
            window: 600,
            deadline: 3600
        )
        let text = report.terminal(width: 100)
        #expect(text.contains("by platform:"))
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("waves ") }
        #expect(rows.contains { $0.contains("iOS") && $0.contains("66.7%") && $0.contains("1.00") })
        #expect(rows.contains { $0.contains("Android") && $0.contains("50.0%") && $0.contains("1.50") })
        #expect(text.contains("Android model (assumptions, not measurements)"))
        #expect(text.contains("androidDozeShare 0.80"))
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= 100 })
        // The iOS goal is judged on iOS devices: Doze does not blur it.
        #expect(report.goals[2].title == "waves held ≥ 0.98 × ceiling (iOS)")
        let ceiling = report.ceiling.heldShare
        #expect(report.goals[2].value == String(format: "%.3f × %.1f%%", (2.0 / 3.0) / ceiling, ceiling * 100))
        #expect(report.results[0].heldShareOfCeiling == (2.0 / 3.0) / ceiling, "iOS held over the iOS ceiling")

        let html = report.html()
        #expect(html.contains("<h3>By platform</h3>"))
        #expect(html.contains("assumption: share of unplugged Android devices in Doze"))

        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode([Self.result])) as? [[String: Any]]
        let platforms = try #require(json?.first?["platforms"] as? [[String: Any]])
        #expect(platforms.map { $0["platform"] as? String } == ["ios", "android"])
        #expect(platforms[1]["heldShare"] as? Double == 0.5)
        // The JSON of the report's results carries the ceiling, the ratio and the assumptions.
        let compared = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report.results)) as? [[String: Any]]
        let first = try #require(compared?.first)
        let ceilingShare = try #require((first["ceiling"] as? [String: Any])?["heldShare"] as? Double)
        #expect(abs(ceilingShare - report.ceiling.heldShare) < 1e-12)
        let ratio = try #require(first["heldShareOfCeiling"] as? Double)
        #expect(abs(ratio - (2.0 / 3.0) / report.ceiling.heldShare) < 1e-12, "JSON keeps the ratio (to the last bit or so)")
        let assumptions = try #require(first["assumptions"] as? [String: Any])
        #expect((assumptions["note"] as? String)?.contains("assumptions, not measurements") == true)
        #expect((assumptions["parameters"] as? [String: Any])?["androidDozeShare"] as? Double == 0.8)
    }

    @Test("an iOS-only report looks as before: no platform table, no Android parameters")
    func iosOnly() {
        let report = SyntheticRecording.report()
        #expect(!report.terminal().contains("by platform:"))
        #expect(!report.html().contains("By platform"))
        #expect(report.goals[2].title == "waves held ≥ 0.98 × ceiling")
    }
}
