import Foundation
import PaperboyCore
import Testing

/// `maxPushesPerDevice`: `auto` or a fixed number, and the JSON stored before `auto` existed.
@Suite("Max pushes per device")
struct MaxPushesTests {
    static func decode(_ json: String) throws -> BroadcastOptions {
        try JSONDecoder().decode(BroadcastOptions.self, from: Data(json.utf8))
    }

    static func encoded(_ options: BroadcastOptions) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: JSONEncoder().encode(options)) as? [String: Any] ?? [:]
    }

    @Test("stored options written with an integer still read as that fixed cap; absent means auto")
    func storedIntegersStillDecode() throws {
        // As a broadcast's or a schedule's jsonb `options` looked before auto.
        let stored = try Self.decode(
            #"{"window": 1800, "cohorts": 16, "waveInterval": 1800, "maxPushesPerDevice": 3, "alertLastResort": false, "jitter": 90}"#
        )
        #expect(stored.maxPushesPerDevice == .fixed(3))
        #expect(try Self.decode(#"{"maxPushesPerDevice": 7}"#).maxPushesPerDevice == .fixed(7))
        #expect(try Self.decode("{}").maxPushesPerDevice == .auto)
        #expect(try Self.decode(#"{"maxPushesPerDevice": "auto"}"#).maxPushesPerDevice == .auto)
        #expect(BroadcastOptions().maxPushesPerDevice == .auto, "auto is the default")
    }

    @Test("auto is written as \"auto\", a fixed cap as its integer, and both read back the same")
    func roundTrip() throws {
        for cap: BroadcastOptions.MaxPushes in [.auto, .fixed(1), .fixed(10)] {
            let options = BroadcastOptions(maxPushesPerDevice: cap)
            #expect(try JSONDecoder().decode(BroadcastOptions.self, from: JSONEncoder().encode(options)) == options)
        }
        #expect(try Self.encoded(BroadcastOptions(maxPushesPerDevice: .auto))["maxPushesPerDevice"] as? String == "auto")
        #expect(try Self.encoded(BroadcastOptions(maxPushesPerDevice: 4))["maxPushesPerDevice"] as? Int == 4)
    }

    @Test("anything but auto or an integer is refused, naming the field; a fixed cap is 1 to 10")
    func refused() throws {
        for json in [#"{"maxPushesPerDevice": "many"}"#, #"{"maxPushesPerDevice": 2.5}"#, #"{"maxPushesPerDevice": true}"#] {
            #expect(throws: DecodingError.self, "\(json)") { try Self.decode(json) }
        }
        #expect(throws: BroadcastOptionsError(field: "maxPushesPerDevice", message: "maxPushesPerDevice must be auto or between 1 and 10")) {
            try BroadcastOptions(maxPushesPerDevice: 11).validate()
        }
        #expect(throws: BroadcastOptionsError.self) { try BroadcastOptions(maxPushesPerDevice: 0).validate() }
        try BroadcastOptions(maxPushesPerDevice: .auto).validate()
        try BroadcastOptions(maxPushesPerDevice: 10).validate()
    }

    @Test("the flag's text: auto in any case, or a number")
    func parsing() {
        #expect(BroadcastOptions.MaxPushes("auto") == .auto)
        #expect(BroadcastOptions.MaxPushes(" AUTO ") == .auto)
        #expect(BroadcastOptions.MaxPushes("4") == .fixed(4))
        #expect(BroadcastOptions.MaxPushes("four") == nil)
    }

    @Test("the audience cap: the fixed number, or with auto the wave's number (one push per earlier wave)")
    func audienceCap() {
        #expect(BroadcastOptions.MaxPushes.fixed(3).audienceCap(wave: 5) == 3)
        #expect(BroadcastOptions.MaxPushes.auto.audienceCap(wave: 5) == 5)
        #expect(BroadcastOptions.MaxPushes.auto.allowsWave(after: 42))
        #expect(!BroadcastOptions.MaxPushes.fixed(3).allowsWave(after: 3))
        #expect(BroadcastOptions.MaxPushes.fixed(3).allowsWave(after: 2))
    }
}
