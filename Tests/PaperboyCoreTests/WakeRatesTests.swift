import Foundation
import PaperboyCore
import Testing

@Suite("Wake rates: grouping policy")
struct WakeRatesTests {
    static let to = Date(timeIntervalSince1970: 1_795_377_600)
    static let from = to.addingTimeInterval(-14 * 86_400)

    /// The report of `counts`; the total is the platform counts' sum unless given.
    static func rates(_ counts: [WakeRates.Count], total: (Int, Int)? = nil, minimum: Int = 200) -> WakeRates {
        let platforms = counts.filter { $0.dimension == .platform }
        let sum = total ?? (platforms.reduce(0) { $0 + $1.pushes }, platforms.reduce(0) { $0 + $1.wakes })
        return WakeRates(publication: "morning", days: 14, from: from, to: to, total: sum, counts: counts, minimumPushes: minimum)
    }

    static func groups(_ rates: WakeRates, _ dimension: WakeRates.Dimension) -> [WakeRates.Group] {
        rates.dimensions.first { $0.dimension == dimension }?.groups ?? []
    }

    @Test("groups under the minimum are merged into one other group, last; a large enough one has its rate and interval")
    func mergesSmallGroups() throws {
        let rates = Self.rates([
            .init(.modelFamily, "iPhone15", pushes: 5_000, wakes: 3_000),
            .init(.modelFamily, "iPhone14", pushes: 2_000, wakes: 1_000),
            .init(.modelFamily, "Pixel 8", pushes: 150, wakes: 100),
            .init(.modelFamily, "SM-S918B", pushes: 120, wakes: 10),
            .init(.platform, "ios", pushes: 7_000, wakes: 4_000),
            .init(.platform, "android", pushes: 270, wakes: 110),
        ])
        let families = Self.groups(rates, .modelFamily)
        #expect(families.map(\.key) == ["iPhone15", "iPhone14", "other"])
        let other = try #require(families.last)
        #expect(other.pushes == 270 && other.wakes == 110 && other.merged == 2)
        #expect(other.rate == 110.0 / 270)
        let first = families[0]
        #expect(first.rate == 0.6)
        let low = try #require(first.low)
        let high = try #require(first.high)
        #expect(low < 0.6 && 0.6 < high)
        #expect(families[0].merged == nil)
        #expect(rates.total.pushes == 7_270 && rates.total.rate == 4_110.0 / 7_270)
    }

    @Test("a merged group still under the minimum shows its counts and no rate, never a precise-looking one")
    func tooSmallOther() throws {
        let rates = Self.rates([
            .init(.network, "wifi", pushes: 400, wakes: 300),
            .init(.network, "cellular", pushes: 50, wakes: 50),
            .init(.network, "none", pushes: 10, wakes: 0),
            .init(.platform, "ios", pushes: 460, wakes: 350),
        ])
        let other = try #require(Self.groups(rates, .network).last)
        #expect(other.key == "other" && other.pushes == 60 && other.wakes == 50 && other.merged == 2)
        #expect(other.rate == nil && other.low == nil && other.high == nil && other.isTooSmall)
        let json = String(decoding: try JSONEncoder().encode(other), as: UTF8.self)
        #expect(!json.contains("rate") && !json.contains("low"))
    }

    @Test("equal keys are added up (two models of one family); waves and hours in numeric order, unknown last")
    func addsAndOrders() {
        let rates = Self.rates(
            [
                .init(.wave, "10", pushes: 300, wakes: 30),
                .init(.wave, "2", pushes: 900, wakes: 300),
                .init(.wave, "1", pushes: 1_000, wakes: 600),
                .init(.localHour, "unknown", pushes: 200, wakes: 20),
                .init(.localHour, "05", pushes: 1_000, wakes: 500),
                .init(.localHour, "21", pushes: 1_000, wakes: 410),
                .init(.modelFamily, WakeRates.modelFamily("iPhone15,2"), pushes: 150, wakes: 90),
                .init(.modelFamily, WakeRates.modelFamily("iPhone15,3"), pushes: 100, wakes: 60),
            ],
            total: (2_200, 930)
        )
        #expect(Self.groups(rates, .wave).map(\.key) == ["1", "2", "10"])
        #expect(Self.groups(rates, .localHour).map(\.key) == ["05", "21", "unknown"])
        let family = Self.groups(rates, .modelFamily)
        #expect(family.count == 1 && family[0].key == "iPhone15" && family[0].pushes == 250 && family[0].rate == 0.6)
    }

    @Test("no pushes: every dimension present and empty, the total without a rate")
    func emptyInput() {
        let rates = Self.rates([], total: (0, 0))
        #expect(rates.dimensions.map(\.dimension) == WakeRates.Dimension.allCases)
        #expect(rates.dimensions.allSatisfy { $0.groups.isEmpty })
        #expect(rates.total.pushes == 0 && rates.total.rate == nil)
    }

    @Test("Wilson 95% intervals: known values, inside 0…1 at the extremes, narrower with more pushes")
    func wilson() {
        // 50 of 100: 0.404 – 0.596 (the textbook value).
        let half = WakeRates.wilson(wakes: 50, pushes: 100)
        #expect(abs(half.low - 0.4038) < 0.0005 && abs(half.high - 0.5962) < 0.0005)
        // 0 of 200: from 0, not below; 200 of 200: up to 1, not above.
        let none = WakeRates.wilson(wakes: 0, pushes: 200)
        #expect(none.low >= 0 && none.low < 1e-9 && none.high > 0.015 && none.high < 0.02)
        let all = WakeRates.wilson(wakes: 200, pushes: 200)
        #expect(all.high <= 1 && all.high > 1 - 1e-9 && all.low > 0.98)
        let wide = WakeRates.wilson(wakes: 100, pushes: 200)
        let narrow = WakeRates.wilson(wakes: 10_000, pushes: 20_000)
        #expect(narrow.high - narrow.low < wide.high - wide.low)
    }

    @Test(
        "model family: an Apple identifier up to its comma, any other model as reported, unknown without one",
        arguments: [
            ("iPhone15,2", "iPhone15"), ("iPad13,1", "iPad13"), ("iPhone17,1", "iPhone17"), ("Pixel 8", "Pixel 8"),
            ("SM-S918B", "SM-S918B"), ("", "unknown"), (" ", "unknown"),
        ]
    )
    func modelFamily(model: String, family: String) {
        #expect(WakeRates.modelFamily(model) == family)
    }

    @Test("OS major version: the leading number with the platform's name")
    func osMajor() {
        #expect(WakeRates.modelFamily(nil) == "unknown")
        #expect(WakeRates.osMajor(platform: .ios, version: "17.4.1") == "iOS 17")
        #expect(WakeRates.osMajor(platform: .ios, version: "18") == "iOS 18")
        #expect(WakeRates.osMajor(platform: .android, version: "14") == "Android 14")
        #expect(WakeRates.osMajor(platform: .android, version: nil) == "Android unknown")
        #expect(WakeRates.osMajor(platform: .ios, version: "beta") == "iOS unknown")
        #expect(WakeRates.osMajor(platform: nil, version: "17.0") == "unknown")
        #expect(WakeRates.hourKey(5) == "05" && WakeRates.hourKey(23) == "23" && WakeRates.hourKey(nil) == "unknown")
        #expect(WakeRates.flagKey(true) == "true" && WakeRates.flagKey(nil) == "unknown")
    }
}
