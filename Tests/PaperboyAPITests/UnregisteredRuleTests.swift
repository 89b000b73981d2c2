import Foundation
import HTTPTypes
import HummingbirdTesting
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// APNs answers 410 Unregistered with a timestamp: the device stops receiving pushes, and only a
/// registration newer than that timestamp makes it active again.
@Suite("The Unregistered-timestamp rule")
struct UnregisteredRuleTests {
    @Test("a 410 newer than the registration deactivates; a later registration reactivates")
    func unregisteredThenRegisteredAgain() async throws {
        try await APIFixture.with { fixture, client in
            try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            // The device registered an hour ago; APNs says the token died half an hour ago.
            try await fixture.db.client.query("UPDATE devices SET registered_at = now() - interval '1 hour'")
            try await markUnregistered(fixture, at: Date().addingTimeInterval(-1800))

            let dead = try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).json()
            #expect(dead["active"] as? Bool == false)
            #expect(dead["unregisteredAt"] is String)

            try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).json()["active"] as? Bool == true)
        }
    }

    @Test("a 410 older than the latest registration leaves the device active")
    func staleUnregistered() async throws {
        try await APIFixture.with { fixture, client in
            try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            try await markUnregistered(fixture, at: Date().addingTimeInterval(-3600))
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).json()["active"] as? Bool == true)
        }
    }

    @Test("a registration older than the 410 timestamp does not reactivate")
    func registrationNotNewerThanTimestamp() async throws {
        try await APIFixture.with { fixture, client in
            try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            // APNs' timestamp is ahead of this registration (its clock, or a registration that raced the 410).
            try await markUnregistered(fixture, at: Date().addingTimeInterval(3600))
            let response = try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
            #expect(response.status == .ok)
            #expect(try response.json()["active"] as? Bool == false)
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey).json()["active"] as? Bool == false)
        }
    }

    private func markUnregistered(_ fixture: APIFixture, at timestamp: Date) async throws {
        try await DeviceRepository(client: fixture.db.client).markUnregistered(
            appID: fixture.app.id,
            environment: .production,
            token: try DeviceToken(hex: token()),
            at: timestamp,
            logger: fixture.db.logger
        )
    }
}
