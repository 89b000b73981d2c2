import Foundation
import PaperboyCore
import PaperboyText
import Testing

@Suite("Wake rates text")
struct WakeRatesTextTests {
    static let tokyo = TimeZone(identifier: "Asia/Tokyo")!
    /// 2026-11-23 05:00:00 in Tokyo.
    static let five = Date(timeIntervalSince1970: 1_795_377_600)

    @Test("a table per dimension: counts grouped, rate and interval in percent, too small groups say so")
    func tables() {
        let rates = WakeRates(
            publication: "morning",
            days: 14,
            from: Self.five.addingTimeInterval(-14 * 86_400),
            to: Self.five,
            total: (12_500, 7_000),
            counts: [
                .init(.wave, "1", pushes: 10_000, wakes: 6_000),
                .init(.wave, "2", pushes: 2_400, wakes: 960),
                .init(.wave, "3", pushes: 100, wakes: 40),
                .init(.platform, "ios", pushes: 12_500, wakes: 7_000),
            ]
        )
        let text = rates.report(timeZone: Self.tokyo)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(
            lines[0]
                == "Wake rates: receipts per accepted background push, morning, broadcasts of 2026-11-09 05:00:00 Asia/Tokyo to 2026-11-23 05:00:00 Asia/Tokyo (14 days)"
        )
        #expect(lines[1] == "all: 12,500 pushes, 7,000 woke the app: 56.0% (55.1–56.9%)")
        let wave = lines.firstIndex { $0.hasPrefix("WAVE") } ?? 0
        #expect(lines[wave] == "WAVE             PUSHES  WAKES   RATE  95% INTERVAL")
        #expect(lines[wave + 1] == "1                10,000  6,000  60.0%  59.0–61.0%")
        #expect(lines[wave + 2] == "2                 2,400    960  40.0%  38.1–42.0%")
        #expect(lines[wave + 3] == "other (1 group)     100     40      -  too few pushes")
        #expect(text.contains("PLATFORM"))
        #expect(!text.contains("NETWORK"), "a dimension without pushes has no table")
    }

    @Test("an ended broadcast's report ends with its waves' table, or says no push was accepted")
    func broadcastWaves() {
        let waves = WakeRates.breakdown(
            .wave,
            [.init(.wave, "1", pushes: 1_000, wakes: 600), .init(.wave, "2", pushes: 400, wakes: 100)],
            minimumPushes: 200
        )
        let lines = WakeRates.broadcastReport(waves).split(separator: "\n").map(String.init)
        #expect(lines[0] == "Wake rates by wave (receipts per accepted background push; under 200 pushes: no rate):")
        #expect(lines[1].hasPrefix("WAVE") && lines.count == 4)
        #expect(lines[2].hasPrefix("1") && lines[2].contains("60.0%") && lines[3].contains("25.0%"))
        let none = WakeRates.broadcastReport(WakeRates.breakdown(.wave, [], minimumPushes: 200))
        #expect(none.hasSuffix("no accepted background pushes"))
    }

    @Test("a sampled report says so under the total: the share of devices, the ranges, the pushes read of the window's")
    func sampled() {
        let sample = WakeRates.Sample(fraction: 0.001_47, ranges: 1_024, windowPushes: 170_000_000)
        let rates = WakeRates(
            publication: nil,
            days: 7,
            from: Self.five.addingTimeInterval(-7 * 86_400),
            to: Self.five,
            total: (249_113, 149_000),
            counts: [.init(.wave, "1", pushes: 249_113, wakes: 149_000)],
            sample: sample
        )
        let lines = rates.report(timeZone: Self.tokyo).split(separator: "\n").map(String.init)
        #expect(
            lines[2]
                == "sampled: the pushes of 0.15% of devices (1,024 id ranges across all ids), 249,113 of 170,000,000; rates and intervals are the sample's"
        )
        let waves = WakeRates.broadcastReport(
            WakeRates.breakdown(
                .wave,
                [.init(.wave, "1", pushes: 30_000, wakes: 20_000), .init(.wave, "2", pushes: 9_000, wakes: 3_000)],
                minimumPushes: 200
            ),
            sample: WakeRates.Sample(fraction: 0.025, ranges: 1_024, windowPushes: 1_560_000)
        )
        #expect(
            waves.split(separator: "\n")[1]
                == "sampled: the pushes of 2.5% of devices (1,024 id ranges across all ids), 39,000 of 1,560,000; rates and intervals are the sample's"
        )
        #expect(
            !rates.report(timeZone: Self.tokyo).isEmpty
                && !WakeRates.broadcastReport(WakeRates.breakdown(.wave, [], minimumPushes: 200)).contains("sampled")
        )
    }

    @Test("an empty window says there is nothing to measure")
    func empty() {
        let rates = WakeRates(publication: nil, days: 1, from: Self.five.addingTimeInterval(-86_400), to: Self.five, total: (0, 0), counts: [])
        let text = rates.report(timeZone: Self.tokyo)
        #expect(text.contains("every publication"))
        #expect(text.contains("(1 day)"))
        #expect(text.hasSuffix("no accepted background pushes in the window: nothing to measure yet"))
    }
}
