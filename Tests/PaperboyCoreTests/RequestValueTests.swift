import Foundation
import PaperboyCore
import Testing

/// The one parser of values read from requests (issue 48, item 1): bounded where read, refused naming the field,
/// never a trap.
@Suite("Request values")
struct RequestValueTests {
    static let hostile = [
        "", " ", "0", "-1", "+1", "1e3", "1.0", "0x10", "2147483648", "9223372036854775807", "9223372036854775808",
        "99999999999999999999999", "NaN", "inf", "１２", "1\u{0}", "١٢٣", String(repeating: "9", count: 10_000), "abc",
    ]

    @Test("an id of an integer key is 1 to 2,147,483,647 in digits; anything else is refused naming the field")
    func ids() throws {
        #expect(try RequestValue.id("1", field: "app", what: "an app id") == 1)
        #expect(try RequestValue.id("2147483647", field: "app", what: "an app id") == 2_147_483_647)
        #expect(try RequestValue.id("007", field: "app", what: "an app id") == 7)
        for text in Self.hostile + [nil] {
            #expect(throws: RequestValue.Refusal(field: "app", message: "an app id"), "\(text ?? "nil")") {
                try RequestValue.id(text, field: "app", what: "an app id")
            }
        }
        #expect(try RequestValue.bigID("9223372036854775807", field: "id", what: "x") == .max)
        #expect(throws: RequestValue.Refusal.self) { try RequestValue.bigID("9223372036854775808", field: "id", what: "x") }
        #expect(throws: RequestValue.Refusal.self) { try RequestValue.bigID("-5", field: "id", what: "x") }
    }

    @Test("a UUID in its 36-character form; whole numbers in their range, quoting at most 40 code points of a refusal")
    func uuidsAndIntegers() throws {
        let id = UUID()
        #expect(try RequestValue.uuid(id.uuidString.lowercased(), field: "id", what: "a UUID") == id)
        for text in ["", id.uuidString + "0", String(id.uuidString.dropLast()), "{\(id.uuidString)}", String(repeating: "a", count: 100_000)] {
            #expect(throws: RequestValue.Refusal.self, "\(text.prefix(50))") { try RequestValue.uuid(text, field: "id", what: "a UUID") }
        }
        #expect(try RequestValue.integer(" 4 ", field: "cohorts", in: 1...1024) == 4)
        #expect(try RequestValue.integer("-3", field: "offset", in: -5...5) == -3)
        for text in Self.hostile {
            #expect(throws: RequestValue.Refusal.self, "\(text.prefix(50))") { try RequestValue.integer(text, field: "cohorts", in: 1...1024) }
        }
        do {
            _ = try RequestValue.integer(String(repeating: "9", count: 10_000), field: "cohorts", in: 1...1024)
            Issue.record("refused")
        } catch {
            #expect(error.field == "cohorts")
            #expect(error.message.count < 120, "a refusal does not echo the whole value: \(error.message.count)")
        }
    }

    @Test("publication ids as publications are made; choices by their raw values")
    func publicationsAndChoices() throws {
        #expect(try RequestValue.publication("morning") == "morning")
        #expect(try RequestValue.publication("evening_2-b") == "evening_2-b")
        for text in ["", "Morning", "-morning", "_m", "morning edition", "m\u{0}", String(repeating: "m", count: 64), "朝刊"] {
            #expect(throws: RequestValue.Refusal.self, "\(text)") { try RequestValue.publication(text) }
        }
        #expect(try RequestValue.choice(" Sandbox ", field: "environment", as: APNsEnvironment.self) == .sandbox)
        #expect(throws: RequestValue.Refusal(field: "environment", message: "production or sandbox, not \"staging\"")) {
            try RequestValue.choice("staging", field: "environment", as: APNsEnvironment.self)
        }
    }
}
