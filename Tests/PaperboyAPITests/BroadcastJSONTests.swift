import Foundation
import Testing

@testable import PaperboyAPI

@Suite("Broadcast JSON")
struct BroadcastJSONTests {
    struct Stamped: Encodable {
        var at: Date
        var times: [Date]
    }

    /// A broadcast response's body (`BroadcastRoutes.json`), as text.
    static func body(_ value: some Encodable) throws -> String {
        String(decoding: try BroadcastRoutes.encode(value), as: UTF8.self)
    }

    @Test("timestamps are RFC 3339 in UTC with milliseconds, cut (never rounded up past the instant)")
    func timestamps() throws {
        // 05:00:00.9996 in UTC: rounding would show 05:00:01.000, a second the event had not reached.
        let late = Date(timeIntervalSince1970: 1_795_928_400.9996)
        let whole = Date(timeIntervalSince1970: 1_795_928_400)
        let text = try Self.body(Stamped(at: late, times: [whole, Date(timeIntervalSince1970: 1_795_928_400.123_456)]))
        #expect(text == #"{"at":"2026-11-29T05:00:00.999Z","times":["2026-11-29T05:00:00.000Z","2026-11-29T05:00:00.123Z"]}"#)
    }
}
