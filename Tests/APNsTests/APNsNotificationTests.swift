import APNs
import Foundation
import Testing

@Suite("Notification payloads")
struct APNsNotificationTests {
    struct Edition: Encodable {
        var edition: String
        var fetch: [String]
    }

    @Test("a background push carries only content-available in aps, the app's keys beside it, priority 5")
    func background() throws {
        let deadline = Date(timeIntervalSince1970: 1_795_000_000)
        let notification = try APNsNotification.background(
            Edition(edition: "e1", fetch: ["https://cdn.example.com/a.zip"]),
            expiration: deadline,
            collapseID: "morning"
        )
        let json = try #require(JSONSerialization.jsonObject(with: Data(notification.payload)) as? [String: Any])
        #expect(json["aps"] as? [String: Int] == ["content-available": 1])
        #expect(json["edition"] as? String == "e1")
        #expect(json["fetch"] as? [String] == ["https://cdn.example.com/a.zip"])
        let headers = Dictionary(uniqueKeysWithValues: notification.headers.map { ($0.name, $0.value) })
        #expect(headers["apns-push-type"] == "background")
        #expect(headers["apns-priority"] == "5")
        #expect(headers["apns-expiration"] == "1795000000")
        #expect(headers["apns-collapse-id"] == "morning")
    }

    @Test("no expiration means apns-expiration 0; empty app keys give a bare aps")
    func defaults() throws {
        let notification = try APNsNotification.background([String: String]())
        #expect(String(decoding: notification.payload, as: UTF8.self) == #"{"aps":{"content-available":1}}"#)
        #expect(notification.headers.contains { $0 == ("apns-expiration", "0") })
    }

    @Test("app keys may not set aps: a background push never carries alert, badge or sound")
    func apsRefused() {
        #expect(throws: APNsNotificationError.apsInAppKeys) {
            try APNsNotification.background(["aps": ["alert": "Hello"]])
        }
    }

    @Test("payloads over 4096 bytes are refused before sending; exactly 4096 is accepted")
    func sizeLimit() throws {
        // {"aps":{"content-available":1},"k":"…"} is 38 bytes plus the value.
        let fits = String(repeating: "x", count: 4096 - 38)
        #expect(try APNsNotification.background(["k": fits]).payload.count == 4096)
        #expect(throws: APNsNotificationError.payloadTooLarge(bytes: 4097)) {
            try APNsNotification.background(["k": fits + "x"])
        }
    }

    @Test("collapse ids over 64 bytes are refused")
    func collapseID() {
        #expect(throws: APNsNotificationError.collapseIDTooLong(bytes: 65)) {
            try APNsNotification.background([String: String](), collapseID: String(repeating: "c", count: 65))
        }
    }

    @Test("an alert push has mutable-content 1 and priority 10")
    func alert() throws {
        let notification = try APNsNotification.alert(title: "Morning edition", body: "Ready to read")
        let json = try #require(JSONSerialization.jsonObject(with: Data(notification.payload)) as? [String: Any])
        let aps = try #require(json["aps"] as? [String: Any])
        #expect(aps["mutable-content"] as? Int == 1)
        #expect((aps["alert"] as? [String: String])?["title"] == "Morning edition")
        #expect(notification.headers.contains { $0 == ("apns-priority", "10") })
        #expect(notification.headers.contains { $0 == ("apns-push-type", "alert") })
    }
}
