import Foundation
import PaperboyClient
import Testing

/// Numbers from a push are bounded where the push is decoded: `wave` (echoed in the receipt, which the API refuses
/// outside 1...32767, so the edition's receipt would be dropped) and the extension's `seconds` and `megabytes` (its
/// time budget: more than iOS gives would let the extension work until iOS kills it, with no receipt).
@Suite("EditionWakeUp: numbers from the network, bounded where decoded")
struct WakeUpBoundsTests {
    static let data: [String: String] = [
        "edition": "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
        "manifest": "/v1/editions/0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
        "tier": "large",
        "deadline": "2026-11-23T09:00:00+09:00",
        "fetch": #"["https://cdn.example.com/2026-11-23/morning/large-1.zip"]"#,
        "wave": "1",
        "sentAt": "2026-11-22T20:05:09Z",
    ]

    @Test("a wave outside 1...32767 is refused, naming wave (FCM's digits and APNs' numbers alike)")
    func waveBounded() throws {
        for wave in ["0", "-1", "32768", "40000", "9223372036854775807"] {
            var data = Self.data
            data["wave"] = wave
            let error = #expect(throws: WakeUpError.self, "wave \(wave)") { try EditionWakeUp.decode(data: data) }
            #expect(error?.key == "wave")
        }
        for wave: Any in [0, 40_000, -3, 1e9] {
            var userInfo: [AnyHashable: Any] = Self.data
            userInfo["fetch"] = ["https://cdn.example.com/a.zip"]
            userInfo["wave"] = wave
            let error = #expect(throws: WakeUpError.self, "wave \(wave)") { try EditionWakeUp.decode(userInfo: userInfo) }
            #expect(error?.key == "wave")
        }
        var data = Self.data
        data["wave"] = "32767"
        #expect(try EditionWakeUp.decode(data: data)?.wave == 32_767)
    }

    @Test("the extension's seconds and megabytes are cut to what iOS gives (30 s, 24 MB), never below 0")
    func extensionBounded() throws {
        var data = Self.data
        data["extension"] = #"{"seconds": 86400, "megabytes": 4096}"#
        let limits = try #require(try EditionWakeUp.decode(data: data)?.extensionLimits)
        #expect(limits == .init(seconds: 30, megabytes: 24))
        var userInfo: [AnyHashable: Any] = Self.data
        userInfo["fetch"] = ["https://cdn.example.com/a.zip"]
        userInfo["extension"] = ["seconds": -5, "megabytes": 1e12]
        let negative = try #require(try EditionWakeUp.decode(userInfo: userInfo)?.extensionLimits)
        #expect(negative == .init(seconds: 0, megabytes: 24))
        let budget = WakeBudget.forExtension(limits, start: Date(timeIntervalSince1970: 0), editionDeadline: nil)
        #expect(budget.remaining(at: Date(timeIntervalSince1970: 0)) <= 30)
    }
}
