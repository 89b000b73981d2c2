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

@Suite("Device registration API")
struct DeviceRoutesTests {
    @Test("PUT creates a device (201), PUT again updates it (200), GET returns what was stored")
    func createUpdateShow() async throws {
        try await APIFixture.with { fixture, client in
            let created = try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            #expect(created.status == .created)
            #expect(try created.json()["token"] as? String == token())
            #expect(try created.json()["active"] as? Bool == true)
            // Absent, the reader did not ask to be told when the edition is ready.
            #expect(try created.json()["notifyWhenReady"] as? Bool == false)
            // Nor for edition alerts: no alert last resort, whatever the system allows.
            #expect(try created.json()["editionAlerts"] as? Bool == false)

            let update = validRegistration.replacingOccurrences(of: "[\"morning\"]", with: "[\"morning\", \"evening\"]")
                .replacingOccurrences(of: "\"large\"", with: "\"small\"")
                .replacingOccurrences(
                    of: "\"autoDownload\": true",
                    with: "\"autoDownload\": true, \"notifyWhenReady\": true, \"editionAlerts\": true"
                )
            let updated = try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: update)
            #expect(updated.status == .ok)

            let shown = try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey)
            #expect(shown.status == .ok)
            let json = try shown.json()
            #expect(json["subscriptions"] as? [String] == ["evening", "morning"])
            #expect(json["tier"] as? String == "small")
            #expect(json["timeZone"] as? String == "Asia/Tokyo")
            #expect(json["model"] as? String == "iPad13,1")
            #expect(json["environment"] as? String == "production")
            #expect(json["notifyWhenReady"] as? Bool == true)
            #expect(json["editionAlerts"] as? Bool == true)

            let rows = try await fixture.db.client.query("SELECT count(*) FROM devices")
            for try await count in rows.decode(Int.self) { #expect(count == 1) }
        }
    }

    @Test("tokens are case-insensitive, stored normalized, and any length from 64 to 200 hex characters")
    func tokenNormalization() async throws {
        try await APIFixture.with { fixture, client in
            let upper = token("AB")
            #expect(try await client.send(.put, "/v1/devices/\(upper)", key: fixture.apiKey, body: validRegistration).status == .created)
            let shown = try await client.send(.get, "/v1/devices/\(token("ab"))", key: fixture.apiKey)
            #expect(try shown.json()["token"] as? String == token("ab"))
            #expect(try await client.send(.put, "/v1/devices/\(upper.lowercased())", key: fixture.apiKey, body: validRegistration).status == .ok)

            let long = token("cd", bytes: 100)
            #expect(try await client.send(.put, "/v1/devices/\(long)", key: fixture.apiKey, body: validRegistration).status == .created)
            let rows = try await fixture.db.client.query("SELECT length(token) FROM devices ORDER BY 1")
            var lengths: [Int] = []
            for try await length in rows.decode(Int.self) { lengths.append(length) }
            #expect(lengths == [32, 100])
        }
    }

    @Test("DELETE keeps the device, inactive with the time; registering again reactivates it")
    func deleteAndReregister() async throws {
        try await APIFixture.with { fixture, client in
            try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            #expect(try await client.send(.delete, "/v1/devices/\(token())", key: fixture.apiKey).status == .noContent)

            let deleted = try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).json()
            #expect(deleted["active"] as? Bool == false)
            #expect(deleted["deletedAt"] is String)

            #expect(try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration).status == .ok)
            let again = try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).json()
            #expect(again["active"] as? Bool == true)
            #expect(again["deletedAt"] == nil)

            #expect(try await client.send(.delete, "/v1/devices/\(token("ef"))", key: fixture.apiKey).status == .notFound)
        }
    }

    struct BadInput: CustomTestStringConvertible, Sendable {
        var name: String
        var token: String = String(repeating: "ab", count: 32)
        var body: String
        var status: HTTPResponse.Status = .badRequest
        var code: APIError.Code
        var field: String
        var testDescription: String { name }
    }

    static let badInputs: [BadInput] = [
        BadInput(name: "malformed JSON", body: "{\"environment\": ", code: .invalidJSON, field: "body"),
        BadInput(name: "empty body", body: "", code: .invalidJSON, field: "body"),
        BadInput(name: "not an object", body: "[1, 2]", code: .wrongType, field: "body"),
        BadInput(
            name: "a NUL character in text (PostgreSQL cannot store it)",
            body: validRegistration.replacingOccurrences(of: "\"5.1\"", with: #""5\u00001""#),
            code: .invalidValue,
            field: "body"
        ),
        BadInput(
            name: "unknown environment",
            body: validRegistration.replacingOccurrences(of: "\"production\"", with: "\"staging\""),
            code: .invalidValue,
            field: "environment"
        ),
        BadInput(
            name: "unknown tier",
            body: validRegistration.replacingOccurrences(of: "\"large\"", with: "\"huge\""),
            code: .invalidValue,
            field: "tier"
        ),
        BadInput(
            name: "wrong type",
            body: validRegistration.replacingOccurrences(of: "\"autoDownload\": true", with: "\"autoDownload\": \"yes\""),
            code: .wrongType,
            field: "autoDownload"
        ),
        BadInput(
            name: "notifyWhenReady not a boolean",
            body: validRegistration.replacingOccurrences(of: "\"autoDownload\": true", with: "\"autoDownload\": true, \"notifyWhenReady\": 1"),
            code: .wrongType,
            field: "notifyWhenReady"
        ),
        BadInput(
            name: "editionAlerts not a boolean",
            body: validRegistration.replacingOccurrences(of: "\"autoDownload\": true", with: "\"autoDownload\": true, \"editionAlerts\": \"yes\""),
            code: .wrongType,
            field: "editionAlerts"
        ),
        BadInput(
            name: "wrong element type",
            body: validRegistration.replacingOccurrences(of: "[\"morning\"]", with: "[\"morning\", 7]"),
            code: .wrongType,
            field: "subscriptions[1]"
        ),
        BadInput(
            name: "missing field",
            body: validRegistration.replacingOccurrences(of: "\"timeZone\": \"Asia/Tokyo\", ", with: ""),
            code: .missingField,
            field: "timeZone"
        ),
        BadInput(
            name: "null for a required field",
            body: validRegistration.replacingOccurrences(of: "\"tier\": \"large\"", with: "\"tier\": null"),
            code: .missingField,
            field: "tier"
        ),
        BadInput(
            name: "bad time zone",
            body: validRegistration.replacingOccurrences(of: "Asia/Tokyo", with: "Asia/Atlantis"),
            code: .invalidValue,
            field: "timeZone"
        ),
        BadInput(
            name: "unknown publication",
            body: validRegistration.replacingOccurrences(of: "[\"morning\"]", with: "[\"morning\", \"noon\"]"),
            status: .notFound,
            code: .notFound,
            field: "subscriptions"
        ),
        BadInput(
            name: "overlong model",
            body: validRegistration.replacingOccurrences(of: "iPad13,1", with: String(repeating: "x", count: 65)),
            code: .invalidValue,
            field: "model"
        ),
        BadInput(name: "token too short", token: String(repeating: "ab", count: 31), body: validRegistration, code: .invalidValue, field: "token"),
        BadInput(name: "token too long", token: String(repeating: "ab", count: 101), body: validRegistration, code: .invalidValue, field: "token"),
        BadInput(name: "token not hex", token: String(repeating: "zz", count: 32), body: validRegistration, code: .invalidValue, field: "token"),
        BadInput(
            name: "token of odd length",
            token: String(repeating: "a", count: 65),
            body: validRegistration,
            code: .invalidValue,
            field: "token"
        ),
        BadInput(
            name: "oversized body",
            body: "{\"locale\": \"" + String(repeating: "x", count: 20_000) + "\"}",
            status: .contentTooLarge,
            code: .bodyTooLarge,
            field: "body"
        ),
    ]

    @Test("bad input answers 4xx with a JSON body naming the field, and changes nothing stored", arguments: badInputs)
    func badInput(_ input: BadInput) async throws {
        try await APIFixture.with { fixture, client in
            let original = validRegistration.replacingOccurrences(of: "\"large\"", with: "\"medium\"")
            try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: original)
            let before = try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).text

            let response = try await client.send(.put, "/v1/devices/\(input.token)", key: fixture.apiKey, body: input.body)

            #expect(response.status == input.status)
            let error = try response.apiError()
            #expect(error.code == input.code)
            #expect((error.field ?? "") == input.field)
            #expect(!error.message.isEmpty)
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).text == before)
            let rows = try await fixture.db.client.query("SELECT count(*) FROM devices")
            for try await count in rows.decode(Int.self) { #expect(count == 1) }
        }
    }

    @Test("a missing or wrong X-API-Key answers 401; another app's key does not see the device")
    func authentication() async throws {
        try await APIFixture.with { fixture, client in
            let missing = try await client.send(.put, "/v1/devices/\(token())", body: validRegistration)
            #expect(missing.status == .unauthorized)
            #expect(try missing.apiError().field == "X-API-Key")
            let wrong = try await client.send(.put, "/v1/devices/\(token())", key: "pb_" + token("00"), body: validRegistration)
            #expect(wrong.status == .unauthorized)
            #expect(!wrong.text.contains(token("00")), "the error must not echo the key")

            try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            let other = try await AppRepository(client: fixture.db.client).create(
                try NewApp(bundleID: "com.example.other", teamID: "TEAM123456", keyID: "KEY7654321", keyReference: "/keys/other.p8"),
                logger: fixture.db.logger
            )
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: other.apiKey.secret).status == .notFound)
        }
    }

    @Test("unknown fields are ignored, NUL characters in them too: only text Paperboy keeps may not hold NUL")
    func unknownFieldsIgnored() async throws {
        try await APIFixture.with { fixture, client in
            let body = validRegistration.replacingOccurrences(of: "{", with: #"{"note": "a\u0000b", "#)
            let response = try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: body)
            #expect(response.status == .created, "\(response.text)")
        }
    }

    @Test("unknown routes answer 404 and wrong methods 405 with Allow, both as JSON")
    func routing() async throws {
        try await APIFixture.with { fixture, client in
            let notFound = try await client.send(.get, "/v1/nothing-here", key: fixture.apiKey)
            #expect(notFound.status == .notFound)
            #expect(try notFound.apiError().code == .notFound)

            let wrongMethod = try await client.send(.post, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            #expect(wrongMethod.status == .methodNotAllowed)
            #expect(try wrongMethod.apiError().code == .methodNotAllowed)
            #expect(wrongMethod.headers[.allow]?.contains("PUT") == true)
        }
    }
}
