import PaperboyCore
import Testing

@Suite("FCM registration tokens and tokens of either provider")
struct FCMTokenTests {
    /// A token of today's shape (the instance id, `:`, `APA91b` and 134 characters), made up for the tests.
    static let real =
        "fPJq8hN2Tx0:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx5aVSzZl-eA9Hz5yVHqv7aQwzT3bSmQ9yX0l4s1d2F3g4H5j6K7l8Z9x0C1v2B3n4M5q6W7e8R9t0Y1u2I3o4P5a6S7d8F9g0H1j2K3l4"

    @Test("a token of today's shape parses, keeps its text, and is stored as its ASCII bytes")
    func parsesRealShape() throws {
        let token = try FCMToken(Self.real)
        #expect(token.text == Self.real)
        #expect(token.bytes == Array(Self.real.utf8))
        #expect(FCMToken(bytes: token.bytes) == token)
        #expect(Self.real.count == 152)
    }

    @Test("lengths: 32 to 2048 characters")
    func lengths() throws {
        #expect(throws: FCMToken.ParseError.badLength(31)) { try FCMToken(String(repeating: "a", count: 31)) }
        #expect(try FCMToken(String(repeating: "a", count: 32)).text.count == 32)
        #expect(try FCMToken(String(repeating: "a", count: 2048)).text.count == 2048)
        #expect(throws: FCMToken.ParseError.badLength(2049)) { try FCMToken(String(repeating: "a", count: 2049)) }
        #expect(throws: FCMToken.ParseError.badLength(0)) { try FCMToken("") }
    }

    @Test("only URL-safe characters: letters, digits, '-', '_' and ':'", arguments: [".", "/", "+", "=", " ", "%", "é", "\u{0}", "?", "#"])
    func characters(_ bad: String) {
        #expect(throws: FCMToken.ParseError.badCharacter) { try FCMToken(String(Self.real.dropLast()) + bad) }
    }

    @Test("cohort keys are stable: fixed vectors over the ASCII bytes, the same hash as APNs tokens'")
    func cohortKeyVectors() throws {
        #expect(try FCMToken(Self.real).cohortKey == 3_806_765_812)
        #expect(try FCMToken(String(repeating: "a", count: 32)).cohortKey == 1_587_629_342)
        #expect(try FCMToken(Self.real).cohortKey == DeviceToken.cohortKey(of: Array(Self.real.utf8)))
        #expect(try PushToken.fcm(FCMToken(Self.real)).cohortKey == 3_806_765_812)
        // The APNs vectors hold as before.
        #expect(try PushToken.apns(DeviceToken(hex: String(repeating: "ab", count: 32))).cohortKey == 631_466_742)
    }

    @Test("a path's text is looked up as every provider's token it can be")
    func candidates() throws {
        let hex = String(repeating: "ab", count: 32)
        #expect(try PushToken.candidates(hex) == [.apns(try DeviceToken(hex: hex)), .fcm(try FCMToken(hex))])
        #expect(try PushToken.candidates(Self.real) == [.fcm(try FCMToken(Self.real))])
        #expect(try PushToken.candidates(String(repeating: "ab", count: 20)) == [.fcm(try FCMToken(String(repeating: "ab", count: 20)))])
        #expect(throws: PushToken.InvalidToken.self) { try PushToken.candidates("short:token") }
    }

    @Test("a token parsed for a provider reads back from its provider and bytes; text is what the provider takes")
    func roundTrip() throws {
        let apns = try PushToken(String(repeating: "AB", count: 32), provider: .apns)
        #expect(apns.text == String(repeating: "ab", count: 32))
        #expect(PushToken(provider: .apns, bytes: apns.bytes) == apns)
        let fcm = try PushToken(Self.real, provider: .fcm)
        #expect(fcm.provider == .fcm)
        #expect(fcm.text == Self.real)
        #expect(PushToken(provider: .fcm, bytes: fcm.bytes) == fcm)
        #expect(throws: PushToken.InvalidToken.self) { try PushToken(Self.real, provider: .apns) }
    }

    @Test("valid pairs: APNs with iOS; FCM with iOS and Android")
    func pairs() {
        #expect(DevicePlatform.ios.isServed(by: .apns))
        #expect(!DevicePlatform.android.isServed(by: .apns))
        #expect(DevicePlatform.ios.isServed(by: .fcm))
        #expect(DevicePlatform.android.isServed(by: .fcm))
    }
}
