import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// An FCM registration token of today's shape: an 11-character instance id, `:`, `APA91b` and 134 characters.
func fcmToken(_ tag: Character = "a") -> String {
    "cXy\(tag)Z-12_ab:APA91b" + String(repeating: "Qw3-rT_\(tag)9", count: 14) + "Zz01Zz01"
}

let fcmRegistration = """
    {"provider": "fcm", "platform": "android", "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", "tier": "medium", \
    "autoDownload": true, "alertsAuthorized": false, "osVersion": "14", "model": "Pixel 8"}
    """

@Suite("Device registration API: FCM devices beside APNs devices")
struct FCMDeviceRoutesTests {
    @Test("an FCM device registers (201), shows its provider and platform, and is stored as its ASCII bytes in production")
    func registerFCM() async throws {
        try await APIFixture.with { fixture, client in
            let token = fcmToken()
            #expect(token.utf8.count == 152)
            let created = try await client.send(.put, "/v1/devices/\(token)", key: fixture.apiKey, body: fcmRegistration)
            #expect(created.status == .created)
            let json = try created.json()
            #expect(json["token"] as? String == token)
            #expect(json["provider"] as? String == "fcm")
            #expect(json["platform"] as? String == "android")
            #expect(json["environment"] as? String == "production")

            let shown = try await client.send(.get, "/v1/devices/\(token)", key: fixture.apiKey)
            #expect(shown.status == .ok)
            #expect(try shown.json()["token"] as? String == token)
            #expect(try shown.json()["provider"] as? String == "fcm")
            #expect(try shown.json()["platform"] as? String == "android")

            let rows = try await fixture.db.client.query("SELECT provider, platform, environment, token, cohort_key FROM devices")
            for try await (provider, platform, environment, stored, cohortKey) in rows.decode((Int16, Int16, Int16, ByteBuffer, Int32).self) {
                #expect(provider == 1)
                #expect(platform == 1)
                #expect(environment == 0)
                #expect(String(buffer: stored) == token)
                #expect(cohortKey == (try FCMToken(token)).storedCohortKey)
            }
            #expect(try await client.send(.put, "/v1/devices/\(token)", key: fixture.apiKey, body: fcmRegistration).status == .ok)
        }
    }

    @Test("an FCM token's ':' reaches the route unescaped and escaped (%3A, %3a): both name the same device")
    func colonInPath() async throws {
        try await APIFixture.with { fixture, client in
            let token = fcmToken()
            let escaped = token.replacingOccurrences(of: ":", with: "%3A")
            #expect(try await client.send(.put, "/v1/devices/\(escaped)", key: fixture.apiKey, body: fcmRegistration).status == .created)
            #expect(try await client.send(.put, "/v1/devices/\(token)", key: fixture.apiKey, body: fcmRegistration).status == .ok)
            let lower = token.replacingOccurrences(of: ":", with: "%3a")
            #expect(try await client.send(.get, "/v1/devices/\(lower)", key: fixture.apiKey).json()["token"] as? String == token)

            let receipt = #"{"editionId": "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11", "result": "newData"}"#
            let noEdition = try await client.send(.post, "/v1/devices/\(escaped)/receipts", key: fixture.apiKey, body: receipt)
            #expect(noEdition.status == .notFound)
            #expect(try noEdition.apiError().field == "editionId", "the device was found by its escaped token")

            #expect(try await client.send(.delete, "/v1/devices/\(escaped)", key: fixture.apiKey).status == .noContent)
            #expect(try await client.send(.get, "/v1/devices/\(token)", key: fixture.apiKey).json()["active"] as? Bool == false)
            let rows = try await fixture.db.client.query("SELECT count(*) FROM devices")
            for try await count in rows.decode(Int.self) { #expect(count == 1) }
        }
    }

    @Test("over a real HTTP connection too: the ':' as is and as %3A reach the same device")
    func colonOverHTTP() async throws {
        try await APIFixture.with(testing: .live) { fixture, client in
            let token = fcmToken("c")
            let escaped = token.replacingOccurrences(of: ":", with: "%3A")
            #expect(try await client.send(.put, "/v1/devices/\(token)", key: fixture.apiKey, body: fcmRegistration).status == .created)
            let shown = try await client.send(.get, "/v1/devices/\(escaped)", key: fixture.apiKey)
            #expect(shown.status == .ok)
            #expect(try shown.json()["token"] as? String == token)
            #expect(try await client.send(.put, "/v1/devices/\(escaped)", key: fixture.apiKey, body: fcmRegistration).status == .ok)
        }
    }

    @Test("an iOS device registered through FCM, and an APNs device, live side by side; each is found by its token")
    func mixedFleet() async throws {
        try await APIFixture.with { fixture, client in
            let ios = fcmRegistration.replacingOccurrences(of: "\"android\"", with: "\"ios\"")
            #expect(try await client.send(.put, "/v1/devices/\(fcmToken("b"))", key: fixture.apiKey, body: ios).status == .created)
            #expect(try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration).status == .created)

            let viaFCM = try await client.send(.get, "/v1/devices/\(fcmToken("b"))", key: fixture.apiKey).json()
            #expect(viaFCM["provider"] as? String == "fcm")
            #expect(viaFCM["platform"] as? String == "ios")
            let viaAPNs = try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).json()
            #expect(viaAPNs["provider"] as? String == "apns")
            #expect(viaAPNs["platform"] as? String == "ios")
        }
    }

    @Test("a hex text registered as an FCM token and as an APNs token makes two devices: the provider is part of the uniqueness")
    func providerInUniqueness() async throws {
        try await APIFixture.with { fixture, client in
            let hex = token("cd")
            #expect(try await client.send(.put, "/v1/devices/\(hex)", key: fixture.apiKey, body: validRegistration).status == .created)
            #expect(try await client.send(.put, "/v1/devices/\(hex)", key: fixture.apiKey, body: fcmRegistration).status == .created)
            let rows = try await fixture.db.client.query("SELECT provider, length(token) FROM devices ORDER BY provider")
            var stored: [[Int]] = []
            for try await (provider, length) in rows.decode((Int16, Int).self) { stored.append([Int(provider), length]) }
            #expect(stored == [[0, 32], [1, 64]])
            // GET finds one of them: the most recently updated.
            #expect(try await client.send(.get, "/v1/devices/\(hex)", key: fixture.apiKey).json()["provider"] as? String == "fcm")
        }
    }

    struct BadFCMInput: CustomTestStringConvertible, Sendable {
        var name: String
        var token: String = fcmToken()
        var body: String
        var code: APIError.Code
        var field: String
        var testDescription: String { name }
    }

    static let badInputs: [BadFCMInput] = [
        BadFCMInput(
            name: "FCM without a platform",
            body: fcmRegistration.replacingOccurrences(of: #""platform": "android", "#, with: ""),
            code: .missingField,
            field: "platform"
        ),
        BadFCMInput(
            name: "unknown provider",
            body: fcmRegistration.replacingOccurrences(of: #""fcm""#, with: #""gcm""#),
            code: .invalidValue,
            field: "provider"
        ),
        BadFCMInput(
            name: "null provider",
            body: fcmRegistration.replacingOccurrences(of: #""fcm""#, with: "null"),
            code: .missingField,
            field: "provider"
        ),
        BadFCMInput(
            name: "unknown platform",
            body: fcmRegistration.replacingOccurrences(of: #""android""#, with: #""tizen""#),
            code: .invalidValue,
            field: "platform"
        ),
        BadFCMInput(
            name: "APNs with an Android device",
            token: token(),
            body: validRegistration.replacingOccurrences(of: #"{"environment""#, with: #"{"platform": "android", "environment""#),
            code: .invalidValue,
            field: "platform"
        ),
        BadFCMInput(
            name: "FCM in the sandbox",
            body: fcmRegistration.replacingOccurrences(of: #""provider": "fcm""#, with: #""provider": "fcm", "environment": "sandbox""#),
            code: .invalidValue,
            field: "environment"
        ),
        BadFCMInput(name: "an FCM token registered as APNs", body: validRegistration, code: .invalidValue, field: "token"),
        BadFCMInput(
            name: "FCM token too short",
            token: String(repeating: "a", count: 31),
            body: fcmRegistration,
            code: .invalidValue,
            field: "token"
        ),
        BadFCMInput(
            name: "FCM token too long",
            token: String(repeating: "a", count: 2049),
            body: fcmRegistration,
            code: .invalidValue,
            field: "token"
        ),
        BadFCMInput(name: "FCM token with a '.'", token: fcmToken() + ".x", body: fcmRegistration, code: .invalidValue, field: "token"),
        BadFCMInput(name: "FCM token with a '%'", token: fcmToken() + "%25", body: fcmRegistration, code: .invalidValue, field: "token"),
    ]

    @Test("bad FCM input answers 400 naming the field, and stores nothing", arguments: badInputs)
    func badInput(_ input: BadFCMInput) async throws {
        try await APIFixture.with { fixture, client in
            let response = try await client.send(.put, "/v1/devices/\(input.token)", key: fixture.apiKey, body: input.body)
            #expect(response.status == .badRequest)
            let error = try response.apiError()
            #expect(error.code == input.code)
            #expect(error.field == input.field)
            #expect(!error.message.isEmpty)
            let rows = try await fixture.db.client.query("SELECT count(*) FROM devices")
            for try await count in rows.decode(Int.self) { #expect(count == 0) }
        }
    }

    @Test("GET with a text that is no provider's token answers 400 naming token, with both reasons")
    func neitherToken() async throws {
        try await APIFixture.with { fixture, client in
            let response = try await client.send(.get, "/v1/devices/short:token", key: fixture.apiKey)
            #expect(response.status == .badRequest)
            let error = try response.apiError()
            #expect(error.field == "token")
            #expect(error.message.contains("APNs") && error.message.contains("FCM"))
        }
    }

    @Test("the app's FCM service account shows in GET /v1/apps as its path and project id")
    func appsShowFCM() async throws {
        try await APIFixture.with { fixture, client in
            let credentials = try FCMCredentials(serviceAccount: "/keys/firebase.json", projectID: "paperboy-news")
            _ = try await AppRepository(client: fixture.db.client).setFCM(appID: fixture.app.id, credentials, logger: fixture.db.logger)
            let response = try await client.send(.get, "/v1/apps", headers: [.authorization: "Bearer \(APIFixture.adminToken)"])
            #expect(response.status == .ok)
            let apps = try #require(try response.json()["apps"] as? [[String: Any]])
            let fcm = try #require(apps.first?["fcm"] as? [String: Any])
            #expect(fcm["projectId"] as? String == "paperboy-news")
            #expect(fcm["serviceAccount"] as? String == "/keys/firebase.json")
        }
    }
}
