import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// Starting a broadcast checks the credentials of the providers its audience uses, and only those.
@Suite("Broadcast preflight: the audience's providers")
struct ProviderPreflightTests {
    static let admin = EditionRoutesTests.admin

    @Test("an FCM-only app broadcasts to its FCM devices without an APNs key; once it has an APNs device, a broadcast is refused naming APNs")
    func fcmOnlyApp() async throws {
        try await APIFixture.with { fixture, client in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-preflight-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let account = try ServiceAccountFile.write(in: directory, name: "news.json", projectID: "paperboy-news")
            let fcm = try FCMCredentials(serviceAccount: account.path, projectID: "paperboy-news")
            _ = try await AppRepository(client: fixture.db.client).setFCM(appID: fixture.app.id, fcm, logger: fixture.db.logger)
            #expect(try await client.send(.delete, "/v1/apps/\(fixture.app.id)/apns", headers: Self.admin).status == .ok)
            // Not even a key file to find: nothing of APNs is left.
            try FileManager.default.removeItem(atPath: fixture.keyFile)

            for tag in ["a", "b", "c"] as [Character] {
                let registered = try await client.send(.put, "/v1/devices/\(fcmToken(tag))", key: fixture.apiKey, body: fcmRegistration)
                #expect(registered.status == .created)
            }
            let first = try await client.send(.post, "/v1/editions", headers: Self.admin, body: EditionRoutesTests.file(issueDate: "2026-11-23"))
            let firstID = try #require(try first.json()["id"] as? String)
            let started = try await client.send(.post, "/v1/broadcasts", headers: Self.admin, body: #"{"edition": "\#(firstID)", "window": 600}"#)
            #expect(started.status == .created, "\(started.text)")
            let broadcast = try #require(try started.json()["broadcast"] as? [String: Any])
            let waves = try #require(broadcast["waves"] as? [[String: Any]])
            #expect((waves.first?["counts"] as? [String: Any])?["planned"] as? Int == 3)

            // An iOS device registered through APNs joins the audience: the app cannot reach it.
            #expect(try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration).status == .created)
            let second = try await client.send(.post, "/v1/editions", headers: Self.admin, body: EditionRoutesTests.file(issueDate: "2026-11-24"))
            let secondID = try #require(try second.json()["id"] as? String)
            let refused = try await client.send(.post, "/v1/broadcasts", headers: Self.admin, body: #"{"edition": "\#(secondID)", "window": 600}"#)
            #expect(refused.status == .badRequest)
            let error = try refused.apiError()
            #expect(error.field == "app")
            #expect(error.message.contains("no APNs credentials"))
            let stored = try await fixture.db.client.query("SELECT count(*) FROM broadcasts", logger: fixture.db.logger)
            for try await count in stored.decode(Int.self) { #expect(count == 1) }
        }
    }

    @Test("an app's broken APNs key does not stop a broadcast whose audience has only FCM devices")
    func unusedProviderIsNotChecked() async throws {
        try await APIFixture.with { fixture, client in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-preflight-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let account = try ServiceAccountFile.write(in: directory, name: "news.json", projectID: "paperboy-news")
            let fcm = try FCMCredentials(serviceAccount: account.path, projectID: "paperboy-news")
            _ = try await AppRepository(client: fixture.db.client).setFCM(appID: fixture.app.id, fcm, logger: fixture.db.logger)
            try FileManager.default.removeItem(atPath: fixture.keyFile)
            #expect(try await client.send(.put, "/v1/devices/\(fcmToken())", key: fixture.apiKey, body: fcmRegistration).status == .created)
            let published = try await client.send(.post, "/v1/editions", headers: Self.admin, body: EditionRoutesTests.file())
            let edition = try #require(try published.json()["id"] as? String)
            let started = try await client.send(.post, "/v1/broadcasts", headers: Self.admin, body: #"{"edition": "\#(edition)", "window": 600}"#)
            #expect(started.status == .created, "\(started.text)")
        }
    }
}
