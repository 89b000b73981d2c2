import Foundation
import PaperboyClient
import Testing

/// The body as the client builds it; the server package's ServerContractTests decodes it with the server's decoder.
@Suite("The registration body and the token")
struct DeviceRegistrationTests {
    static func json(_ registration: DeviceRegistration) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(registration)) as? [String: Any])
    }

    @Test("an APNs registration names its environment and every required field")
    func apns() throws {
        let registration = DeviceRegistration(
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
        #expect(body["editionAlerts"] as? Bool == false, "no edition alert unless the reader asked")
        #expect(body["autoDownload"] as? Bool == true)
        #expect(body["timeZone"] as? String == "Asia/Tokyo")
        #expect((body["model"] as? String)?.count == 64, "cut to the API's limit, not refused")
    }

    @Test("an FCM registration names its provider and platform and no environment")
    func fcm() throws {
        let registration = DeviceRegistration(
            route: .fcm(.android),
            subscriptions: ["morning", "evening"],
            tier: .medium,
            alertsAuthorized: true
        )
        let body = try Self.json(registration)
        #expect(body["provider"] as? String == "fcm")
        #expect(body["platform"] as? String == "android")
        #expect(body["environment"] == nil)
    }

    @Test("an APNs token is lowercase hex of its bytes, whatever their length; an FCM token is as Firebase gave it")
    func tokens() {
        #expect(PushToken.apns(Data([0x8d, 0x4e, 0x0b, 0x1c, 0xff, 0x00])).text == "8d4e0b1cff00")
        #expect(PushToken.apns(Data(repeating: 0xab, count: 100)).text.count == 200)
        #expect(PushToken.fcm("cAbC-12:APA91b_x").text == "cAbC-12:APA91b_x")
    }

    @Test("each status gets the guide's reaction")
    func reactions() {
        #expect(APIReaction.to(status: 201, field: nil, retryAfter: nil) == .done)
        #expect(APIReaction.to(status: 400, field: "tier", retryAfter: nil) == .drop)
        #expect(APIReaction.to(status: 401, field: "X-API-Key", retryAfter: nil) == .stopUntilNewKey)
        #expect(APIReaction.to(status: 404, field: "token", retryAfter: nil) == .registerThenRetry)
        #expect(APIReaction.to(status: 404, field: "editionId", retryAfter: nil) == .drop)
        #expect(APIReaction.to(status: 404, field: "subscriptions", retryAfter: nil) == .drop)
        #expect(APIReaction.to(status: 409, field: "editionId", retryAfter: nil) == .retryLater)
        #expect(APIReaction.to(status: 413, field: "body", retryAfter: nil) == .drop)
        #expect(APIReaction.to(status: 429, field: nil, retryAfter: 7) == .retryAfter(seconds: 7))
        #expect(APIReaction.to(status: 429, field: nil, retryAfter: nil) == .retryAfter(seconds: 60))
        #expect(APIReaction.to(status: 503, field: nil, retryAfter: nil) == .retryLater)
        #expect(PaperboyAPIError(status: nil, message: "offline").reaction == .retryLater)
    }
}
