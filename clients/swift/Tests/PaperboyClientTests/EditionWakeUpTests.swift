import Foundation
import PaperboyClient
import Testing

/// The client decodes a push in both shapes an iOS app receives and the one an Android app does. The payloads are
/// fixed here as the server builds them (docs/app-integration.md, "Handle the push"); the server package's
/// ServerContractTests decodes the ones its own builders make.
@Suite("EditionWakeUp: a push of either provider's shape")
struct EditionWakeUpTests {
    static let sentAt = Date(timeIntervalSince1970: 1_795_377_909)  // 2026-11-22T20:05:09Z
    static let edition = "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11"

    /// An APNs payload as iOS hands it to the app: the JSON's objects in `userInfo`.
    static func userInfo(_ json: String) throws -> [AnyHashable: Any] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        var userInfo: [AnyHashable: Any] = [:]
        for (key, value) in object { userInfo[key] = value }
        return userInfo
    }

    static let apnsBackground = """
        {"aps": {"content-available": 1}, "edition": "\(edition)", "manifest": "/v1/editions/\(edition)",
         "tier": "large", "deadline": "2026-11-23T09:00:00+09:00",
         "fetch": ["https://cdn.example.com/2026-11-23/morning/large-1.zip", "https://cdn.example.com/2026-11-23/morning/large-2.zip"],
         "wave": 2, "sentAt": "2026-11-22T20:05:09Z"}
        """

    /// FCM's data for the same push: every value a string.
    static let fcmData: [String: String] = [
        "edition": edition, "manifest": "/v1/editions/\(edition)", "tier": "large", "deadline": "2026-11-23T09:00:00+09:00",
        "fetch": #"["https://cdn.example.com/2026-11-23/morning/large-1.zip","https://cdn.example.com/2026-11-23/morning/large-2.zip"]"#,
        "wave": "2", "sentAt": "2026-11-22T20:05:09Z",
    ]

    /// An FCM message as the Firebase SDK hands it to an iOS app: the data's strings beside `aps` and FCM's own keys.
    static func userInfo(fcm data: [String: String], alert: Bool) -> [AnyHashable: Any] {
        var userInfo: [AnyHashable: Any] = ["gcm.message_id": "1700000000000000", "google.c.a.e": "1", "google.c.sender.id": "123456789"]
        userInfo["aps"] = alert ? ["mutable-content": 1, "alert": ["title": "t", "body": "b"]] : ["content-available": 1]
        for (key, value) in data { userInfo[key] = value }
        return userInfo
    }

    static let expected = EditionWakeUp(
        editionID: edition,
        manifestPath: "/v1/editions/\(edition)",
        tier: .large,
        deadline: Date(timeIntervalSince1970: 1_795_392_000),
        fetch: [
            URL(string: "https://cdn.example.com/2026-11-23/morning/large-1.zip")!,
            URL(string: "https://cdn.example.com/2026-11-23/morning/large-2.zip")!,
        ],
        wave: 2,
        sentAt: sentAt
    )

    @Test("an APNs background push decodes: edition, manifest, tier, deadline, fetch in order, wave and sentAt")
    func apns() throws {
        #expect(try EditionWakeUp.decode(userInfo: Self.userInfo(Self.apnsBackground)) == Self.expected)
    }

    @Test("the same push through FCM to an iOS app (every value a string) decodes to the same wake-up; plain casts find nothing")
    func fcmOnIOS() throws {
        let userInfo = Self.userInfo(fcm: Self.fcmData, alert: false)
        #expect(userInfo["fetch"] as? [String] == nil)
        #expect(userInfo["wave"] as? Int == nil)
        #expect(try EditionWakeUp.decode(userInfo: userInfo) == Self.expected)
    }

    @Test("an Android data message decodes through decode(data:) to the same wake-up")
    func android() throws {
        #expect(try EditionWakeUp.decode(data: Self.fcmData) == Self.expected)
    }

    @Test("an alert for the extension carries the small tier and the extension's limits, as an object (APNs) or JSON text (FCM)")
    func alertForTheExtension() throws {
        let apns = """
            {"aps": {"alert": {"title": "Morning edition", "body": "The edition of 2026-11-23 is out."}, "mutable-content": 1},
             "edition": "\(Self.edition)", "manifest": "/v1/editions/\(Self.edition)", "tier": "small",
             "deadline": "2026-11-23T09:00:00+09:00", "fetch": ["https://cdn.example.com/2026-11-23/morning/small-1.zip"],
             "wave": 4, "sentAt": "2026-11-22T21:35:09Z", "extension": {"seconds": 30, "megabytes": 24}}
            """
        let decoded = try #require(try EditionWakeUp.decode(userInfo: Self.userInfo(apns)))
        #expect(decoded.isAlert)
        #expect(decoded.tier == .small)
        #expect(decoded.extensionLimits == .init(seconds: 30, megabytes: 24))
        var data = Self.fcmData
        data["tier"] = "small"
        data["extension"] = #"{"seconds":30,"megabytes":24}"#
        let viaFCM = try #require(try EditionWakeUp.decode(userInfo: Self.userInfo(fcm: data, alert: true)))
        #expect(viaFCM.isAlert)
        #expect(viaFCM.extensionLimits == .init(seconds: 30, megabytes: 24))
        #expect(try EditionWakeUp.decode(data: Self.fcmData)?.extensionLimits == nil)
    }

    @Test("a push without sentAt decodes with sentAt nil; secondsFromPush then counts from arrival")
    func withoutSentAt() throws {
        var data = Self.fcmData
        data["sentAt"] = nil
        let wakeUp = try #require(try EditionWakeUp.decode(data: data))
        #expect(wakeUp.sentAt == nil)
        let arrival = Date(timeIntervalSince1970: 1_795_378_600)
        #expect(wakeUp.secondsFromPush(arrival: arrival, now: arrival.addingTimeInterval(3)) == 3)
    }

    @Test("secondsFromPush counts from sentAt on iOS (arrival is the run), 0 for a clock behind, at most a day")
    func secondsFromPush() throws {
        let wakeUp = Self.expected
        let arrival = Self.sentAt.addingTimeInterval(1_800)  // iOS held it half an hour
        #expect(wakeUp.secondsFromPush(arrival: arrival, now: arrival.addingTimeInterval(0.2)) == 1_800)
        #expect(wakeUp.secondsFromPush(arrival: arrival, now: Self.sentAt.addingTimeInterval(-5)) == 0)
        #expect(wakeUp.secondsFromPush(arrival: arrival, now: Self.sentAt.addingTimeInterval(200_000)) == 86_400)
    }

    @Test("another notification is not an edition's (nil); a malformed one names its key")
    func notOursOrMalformed() throws {
        #expect(try EditionWakeUp.decode(userInfo: ["aps": ["alert": "Breaking news"], "article": "123"]) == nil)
        #expect(try EditionWakeUp.decode(data: ["article": "123"]) == nil)
        let cases: [(String, String?, String)] = [
            ("wave", "two", "wave"), ("fetch", "https://cdn.example.com/a.zip", "fetch"), ("deadline", nil, "deadline"),
            ("tier", "huge", "tier"), ("sentAt", "yesterday", "sentAt"), ("edition", "e1", "edition"),
            ("manifest", "v1/editions/x", "manifest"), ("extension", "{}", "extension"),
        ]
        for (key, value, named) in cases {
            var data = Self.fcmData
            data[key] = value
            let error = #expect(throws: WakeUpError.self) { try EditionWakeUp.decode(data: data) }
            #expect(error?.key == named, "\(key)=\(value ?? "absent"): \(String(describing: error))")
        }
    }
}
