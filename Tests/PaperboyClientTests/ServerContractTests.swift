import APNs
import FCM
import Foundation
import PaperboyBroadcast
import PaperboyClient
import PaperboyCore
import PaperboyStore
import Testing

/// The contract between the server and the client package (clients/swift), from the server's side: the client decodes
/// the pushes the server builds (BroadcastPreflight, the dispatcher's one definition) in both shapes an iOS app
/// receives and the one an Android app does, the editions it serves, and the server decodes the client's registration
/// body. The client package's own tests check the same decoding against fixed payloads, without the server.
@Suite("The server's pushes, editions and registration decoder against PaperboyClient")
struct ServerContractTests {
    static let sentAt = Date(timeIntervalSince1970: 1_795_377_909)  // 2026-11-22T20:05:09Z

    static func edition(tiers: [String] = ["small", "large"]) -> PaperboyCore.Edition {
        var manifest = PaperboyCore.EditionManifest(
            publication: "morning",
            issueDate: "2026-11-23",
            deadline: "2026-11-23T09:00:00+09:00",
            tiers: [:],
            pages: [.init(number: 1)]
        )
        for tier in tiers {
            manifest.tiers[tier] = .init(bundles: [
                .init(url: "https://cdn.example.com/2026-11-23/morning/\(tier)-1.zip", bytes: 1_000, sha256: String(repeating: "ab", count: 32)),
                .init(url: "https://cdn.example.com/2026-11-23/morning/\(tier)-2.zip", bytes: 2_000, sha256: String(repeating: "cd", count: 32)),
            ])
        }
        return PaperboyCore.Edition(
            id: UUID(uuidString: "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11")!,
            appID: 1,
            manifest: manifest,
            deadline: Date(timeIntervalSince1970: 1_795_392_000),  // 2026-11-23T00:00:00Z
            publishedAt: Date(timeIntervalSince1970: 1_795_377_521),
            publicationTitle: "Morning edition"
        )
    }

    /// The APNs payload as iOS hands it to the app: `userInfo`.
    static func userInfo(_ notification: APNsNotification) throws -> [AnyHashable: Any] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(notification.payload)) as? [String: Any])
        var userInfo: [AnyHashable: Any] = [:]
        for (key, value) in object { userInfo[key] = value }
        return userInfo
    }

    /// The wake-up the app decodes from an APNs push (which must be there).
    static func wakeUp(_ notification: APNsNotification?) throws -> EditionWakeUp {
        let push = try #require(notification)
        let decoded = try EditionWakeUp.decode(userInfo: try userInfo(push))
        return try #require(decoded)
    }

    /// An FCM message as the Firebase SDK hands it to an iOS app: the data's strings beside `aps` and FCM's own keys.
    static func userInfo(_ message: FCMMessage, alert: Bool) -> [AnyHashable: Any] {
        var userInfo: [AnyHashable: Any] = ["gcm.message_id": "1700000000000000", "google.c.a.e": "1", "google.c.sender.id": "123456789"]
        userInfo["aps"] = alert ? ["mutable-content": 1, "alert": ["title": "t", "body": "b"]] : ["content-available": 1]
        for (key, value) in message.data { userInfo[key] = value }
        return userInfo
    }

    static let expected = EditionWakeUp(
        editionID: "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
        manifestPath: "/v1/editions/0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
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
    func apnsBackground() throws {
        let pushes = try APNsService.notifications(for: Self.edition(), kind: .background, wave: 2, sentAt: Self.sentAt)
        let wakeUp = try Self.wakeUp(pushes[.large])
        #expect(wakeUp == Self.expected)
    }

    @Test("the same push through FCM to an iOS app (every value a string) decodes to the same wake-up; the guide's old casts found nothing")
    func fcmOnIOS() throws {
        let message = try FCMService.fcmMessage(
            for: Self.edition(),
            tier: .large,
            kind: .background,
            wave: 2,
            platform: .ios,
            priority: .normal,
            sentAt: Self.sentAt
        )
        let userInfo = Self.userInfo(message, alert: false)
        // What the guide's handler did: these casts fail for FCM's strings, so it answered .noData and no receipt.
        #expect(userInfo["fetch"] as? [String] == nil)
        #expect(userInfo["wave"] as? Int == nil)
        #expect(try EditionWakeUp.decode(userInfo: userInfo) == Self.expected)
    }

    @Test("an Android data message decodes through decode(data:) to the same wake-up")
    func android() throws {
        let message = try FCMService.fcmMessage(
            for: Self.edition(),
            tier: .large,
            kind: .background,
            wave: 2,
            platform: .android,
            priority: .high,
            sentAt: Self.sentAt
        )
        #expect(message.data["sentAt"] == "2026-11-22T20:05:09Z")
        #expect(try EditionWakeUp.decode(data: message.data) == Self.expected)
    }

    @Test("an alert for the extension (APNs, or FCM to iOS) carries the small tier and the extension's limits, in the app's words")
    func alertForTheExtension() throws {
        var edition = Self.edition()
        edition.alertText = try EditionAlertText(title: "{publication}", body: "{year}年{month}月{day}日号を公開しました")
        let pushes = try APNsService.notifications(for: edition, kind: .alert, wave: 5, sentAt: Self.sentAt)
        for tier in PaperboyCore.ImageTier.allCases {
            let push = try #require(pushes[tier])
            let userInfo = try Self.userInfo(push)
            let aps = try #require(userInfo["aps"] as? [String: Any])
            #expect(aps["alert"] as? [String: String] == ["title": "Morning edition", "body": "2026年11月23日号を公開しました"])
            let wakeUp = try Self.wakeUp(push)
            #expect(wakeUp.isAlert)
            #expect(wakeUp.tier == .small, "the extension's 30 s and 24 MB: never the device's \(tier.rawValue) tier")
            #expect(wakeUp.fetch.map(\.lastPathComponent) == ["small-1.zip", "small-2.zip"])
            #expect(wakeUp.extensionLimits == .init(seconds: 30, megabytes: 24))
        }
        let message = try FCMService.fcmMessage(
            for: edition,
            tier: .large,
            kind: .alert,
            wave: 5,
            platform: .ios,
            priority: .normal,
            sentAt: Self.sentAt
        )
        let decoded = try EditionWakeUp.decode(userInfo: Self.userInfo(message, alert: true))
        let viaFCM = try #require(decoded)
        #expect(viaFCM.tier == .small)
        #expect(viaFCM.extensionLimits == .init(seconds: 30, megabytes: 24))
        #expect(viaFCM.isAlert)
        // Android shows FCM's notification itself; its data keeps the device's tier for when the reader taps it.
        let android = try FCMService.fcmMessage(
            for: edition,
            tier: .large,
            kind: .alert,
            wave: 5,
            platform: .android,
            priority: .normal,
            sentAt: Self.sentAt
        )
        #expect(try EditionWakeUp.decode(data: android.data)?.tier == .large)
        #expect(try EditionWakeUp.decode(data: android.data)?.extensionLimits == nil)
    }

    @Test("the default alert words say the edition is out, never that it is ready")
    func defaultWords() throws {
        let pushes = try APNsService.notifications(for: Self.edition(), kind: .alert, wave: 5, sentAt: Self.sentAt)
        let push = try #require(pushes[.small])
        let aps = try #require(try Self.userInfo(push)["aps"] as? [String: Any])
        let alert = try #require(aps["alert"] as? [String: String])
        #expect(alert == ["title": "Morning edition", "body": "The edition of 2026-11-23 is out. Open the app to read it."])
        #expect(!(alert["title"]! + alert["body"]!).lowercased().contains("ready"))
    }

    @Test("a push without sentAt (built without its send instant) decodes with sentAt nil; secondsFromPush then counts from arrival")
    func withoutSentAt() throws {
        let pushes = try APNsService.notifications(for: Self.edition(), kind: .background, wave: 1)
        let wakeUp = try Self.wakeUp(pushes[.small])
        #expect(wakeUp.sentAt == nil)
        let arrival = Date(timeIntervalSince1970: 1_795_378_600)
        #expect(wakeUp.secondsFromPush(arrival: arrival, now: arrival.addingTimeInterval(3)) == 3)
    }

    @Test("another notification is not an edition's (nil); a malformed one names its key")
    func notOursOrMalformed() throws {
        #expect(try EditionWakeUp.decode(userInfo: ["aps": ["alert": "Breaking news"], "article": "123"]) == nil)
        #expect(try EditionWakeUp.decode(data: ["article": "123"]) == nil)
        let message = try FCMService.fcmMessage(
            for: Self.edition(),
            tier: .large,
            kind: .background,
            wave: 2,
            platform: .android,
            priority: .normal,
            sentAt: Self.sentAt
        )
        let cases: [(String, String?, String)] = [
            ("wave", "two", "wave"), ("fetch", "https://cdn.example.com/a.zip", "fetch"), ("deadline", nil, "deadline"),
            ("tier", "huge", "tier"), ("sentAt", "yesterday", "sentAt"), ("edition", "e1", "edition"),
        ]
        for (key, value, named) in cases {
            var data = message.data
            data[key] = value
            #expect(throws: WakeUpError.self) { try EditionWakeUp.decode(data: data) }
            do {
                _ = try EditionWakeUp.decode(data: data)
            } catch let error as WakeUpError {
                #expect(error.key == named, "\(key)=\(value ?? "absent"): \(error)")
            } catch {
                Issue.record("\(key)=\(value ?? "absent"): not a WakeUpError: \(error)")
            }
        }
    }

    /// The server's edition, as `GET /v1/editions/{id}` encodes it, decoded by the client.
    static func manifest(tiers: [String]) throws -> PaperboyClient.EditionManifest {
        let encoder = JSONEncoder()
        let data = try encoder.encode(edition(tiers: tiers))
        return try JSONDecoder().decode(PaperboyClient.EditionManifest.self, from: data)
    }

    @Test("the server's edition decodes: its tiers' bundles with lengths and SHA-256, the pages, the deadline")
    func decodesTheServersEdition() throws {
        let manifest = try Self.manifest(tiers: ["small", "large"])
        #expect(manifest.id == "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11")
        #expect(Set(manifest.tiers.keys) == [.small, .large])
        #expect(manifest.tiers[.large]?.map(\.bytes) == [1_000, 2_000])
        #expect(manifest.tiers[.large]?.first?.sha256 == String(repeating: "ab", count: 32))
        #expect(manifest.deadlineDate == Date(timeIntervalSince1970: 1_795_392_000))
        #expect(manifest.pages.count == 1)
    }

    @Test("a device gets its own tier; without it, the nearest smaller one, else the nearest larger; nil without bundles")
    func plans() throws {
        let both = try Self.manifest(tiers: ["small", "large"])
        #expect(both.plan(for: .large)?.tier == .large)
        #expect(both.plan(for: .large)?.fellBack == false)
        #expect(both.plan(for: .large)?.bytes == 3_000)
        #expect(both.plan(for: .medium)?.tier == .small)
        #expect(both.plan(for: .medium)?.fellBack == true)
        let largeOnly = try Self.manifest(tiers: ["large"])
        #expect(largeOnly.plan(for: .small)?.tier == .large)
        #expect(try Self.manifest(tiers: []).plan(for: .small) == nil)
    }

    @Test("a push to a tier the edition lacks has an empty fetch: the manifest's plan is the way to the bundles")
    func emptyFetch() throws {
        let edition = Self.edition(tiers: ["small", "large"])
        let pushes = try APNsService.notifications(for: edition, kind: .background, wave: 1)
        let wakeUp = try Self.wakeUp(pushes[.medium])
        #expect(wakeUp.fetch.isEmpty)
        #expect(wakeUp.tier == .medium)
        #expect(
            try Self.manifest(tiers: ["small", "large"]).plan(for: wakeUp.tier)?.bundles.map(\.url.lastPathComponent) == [
                "small-1.zip", "small-2.zip",
            ]
        )
    }

    static func json(_ registration: PaperboyClient.DeviceRegistration) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(registration)) as? [String: Any])
    }

    @Test("an APNs registration names its environment and every required field; the server's decoder takes it")
    func apns() throws {
        let registration = PaperboyClient.DeviceRegistration(
            route: .apns(.sandbox),
            subscriptions: ["morning"],
            timeZone: TimeZone(identifier: "Asia/Tokyo")!,
            tier: .large,
            alertsAuthorized: false,
            model: String(repeating: "m", count: 80)
        )
        let body = try Self.json(registration)
        #expect(body["provider"] as? String == "apns")
        #expect(body["platform"] as? String == "ios")
        #expect(body["environment"] as? String == "sandbox")
        #expect(body["alertsAuthorized"] as? Bool == false)
        #expect(body["autoDownload"] as? Bool == true)
        #expect(body["timeZone"] as? String == "Asia/Tokyo")
        #expect((body["model"] as? String)?.count == 64, "cut to the API's limit, not refused")
        let server = try JSONDecoder().decode(PaperboyStore.DeviceRegistration.self, from: JSONEncoder().encode(registration))
        #expect(server.environment == .sandbox)
        #expect(server.provider == .apns)
        #expect(!server.alertsAuthorized)
    }

    @Test("an FCM registration names its provider and platform and no environment")
    func fcm() throws {
        let registration = PaperboyClient.DeviceRegistration(
            route: .fcm(.android),
            subscriptions: ["morning", "evening"],
            tier: .medium,
            alertsAuthorized: true
        )
        let body = try Self.json(registration)
        #expect(body["provider"] as? String == "fcm")
        #expect(body["platform"] as? String == "android")
        #expect(body["environment"] == nil)
        let server = try JSONDecoder().decode(PaperboyStore.DeviceRegistration.self, from: JSONEncoder().encode(registration))
        #expect(server.provider == .fcm)
        #expect(server.platform == .android)
    }
}
