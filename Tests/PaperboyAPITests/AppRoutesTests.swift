import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyStore
import PaperboyTesting
import Testing

/// `/v1/apps/{app}/…` (admin): an app's providers and its device API keys.
@Suite("Apps API: providers and device API keys")
struct AppRoutesTests {
    static let admin = EditionRoutesTests.admin
    /// No app cache: each request looks its key up, as a server does once its 30 s have passed.
    static let noAppCache: @Sendable (inout APIConfiguration) -> Void = { $0.appCacheTimeToLive = .zero }

    @Test("several keys register devices; the list shows them without secrets; a revoked key answers 401, the other goes on")
    func severalKeys() async throws {
        try await APIFixture.with(configure: Self.noAppCache) { fixture, client in
            let added = try await client.send(.post, "/v1/apps/\(fixture.app.id)/keys", headers: Self.admin)
            #expect(added.status == .created)
            let json = try added.json()
            let secret = try #require(json["apiKey"] as? String)
            let newKey = try #require(json["key"] as? [String: Any])
            let newID = try #require(newKey["id"] as? Int)
            #expect(newKey["appId"] as? Int == fixture.app.id)
            #expect(secret.hasPrefix("pb_") && secret != fixture.apiKey)

            #expect(try await client.send(.put, "/v1/devices/\(token("01"))", key: fixture.apiKey, body: validRegistration).status == .created)
            #expect(try await client.send(.put, "/v1/devices/\(token("02"))", key: secret, body: validRegistration).status == .created)

            let listed = try await client.send(.get, "/v1/apps/\(fixture.app.id)/keys", headers: Self.admin)
            #expect(listed.status == .ok)
            let keys = try #require(try listed.json()["keys"] as? [[String: Any]])
            #expect(keys.count == 2)
            #expect(keys.allSatisfy { $0["lastUsedAt"] is String && $0["revokedAt"] == nil })
            #expect(!listed.text.contains(secret) && !listed.text.contains(fixture.apiKey))
            #expect(!listed.text.lowercased().contains("hash"))
            let oldID = try #require(keys.first?["id"] as? Int)

            let revoked = try await client.send(.post, "/v1/apps/\(fixture.app.id)/keys/\(oldID)/revoke", headers: Self.admin)
            #expect(revoked.status == .ok)
            #expect(try revoked.json()["revokedAt"] is String)
            let refused = try await client.send(.get, "/v1/devices/\(token("01"))", key: fixture.apiKey)
            #expect(refused.status == .unauthorized)
            #expect(try refused.apiError().field == "X-API-Key")
            #expect(try await client.send(.get, "/v1/devices/\(token("02"))", key: secret).status == .ok)

            // The last active key stays: 409 naming key; the key still works.
            let last = try await client.send(.post, "/v1/apps/\(fixture.app.id)/keys/\(newID)/revoke", headers: Self.admin)
            #expect(last.status == .conflict)
            #expect(try last.apiError().field == "key")
            #expect(try await client.send(.get, "/v1/devices/\(token("02"))", key: secret).status == .ok)
        }
    }

    @Test("unknown apps and keys answer 404 naming app or key; ids that are not positive integers 400; without the admin token 401")
    func refusals() async throws {
        try await APIFixture.with { fixture, client in
            for (method, path) in [
                (HTTPRequest.Method.get, "/v1/apps/999/keys"), (.post, "/v1/apps/999/keys"), (.post, "/v1/apps/999/keys/1/revoke"),
                (.delete, "/v1/apps/999/apns"), (.delete, "/v1/apps/999/fcm"),
            ] {
                let missing = try await client.send(method, path, headers: Self.admin)
                #expect(missing.status == .notFound, "\(method) \(path)")
                #expect(try missing.apiError().field == "app", "\(method) \(path)")
            }
            let noKey = try await client.send(.post, "/v1/apps/\(fixture.app.id)/keys/999/revoke", headers: Self.admin)
            #expect(noKey.status == .notFound)
            #expect(try noKey.apiError().field == "key")
            for (path, field) in [
                ("/v1/apps/abc/keys", "app"), ("/v1/apps/0/keys", "app"), ("/v1/apps/3000000000/keys", "app"),
                ("/v1/apps/\(fixture.app.id)/keys/x/revoke", "key"),
            ] {
                let method: HTTPRequest.Method = path.hasSuffix("revoke") ? .post : .get
                let bad = try await client.send(method, path, headers: Self.admin)
                #expect(bad.status == .badRequest, "\(path)")
                #expect(try bad.apiError().field == field, "\(path)")
            }
            for (method, path) in [
                (HTTPRequest.Method.get, "/v1/apps/\(fixture.app.id)/keys"), (.post, "/v1/apps/\(fixture.app.id)/keys"),
                (.delete, "/v1/apps/\(fixture.app.id)/apns"), (.put, "/v1/apps/\(fixture.app.id)/apns"),
            ] {
                #expect(try await client.send(method, path, key: fixture.apiKey).status == .unauthorized, "\(method) \(path)")
            }
            #expect(try await AppRepository(client: fixture.db.client).apiKeys(appID: fixture.app.id, logger: fixture.db.logger).count == 1)
        }
    }

    @Test(
        "PUT apns checks the key where Paperboy runs and stores it with a higher credentials version; a bad one is refused naming the field, nothing stored"
    )
    func setAPNs() async throws {
        try await APIFixture.with { fixture, client in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-apns-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let rotated = directory.appendingPathComponent("AuthKey_NEWKEY0001.p8").path
            try P256.Signing.PrivateKey().pemRepresentation.write(toFile: rotated, atomically: true, encoding: .utf8)
            let notAKey = directory.appendingPathComponent("notes.txt").path
            try "not a key".write(toFile: notAKey, atomically: true, encoding: .utf8)
            let path = "/v1/apps/\(fixture.app.id)/apns"

            for (body, field) in [
                (#"{"teamId": "TEAM123456", "keyId": "NEWKEY0001", "keyFile": "\#(directory.path)/missing.p8"}"#, "keyFile"),
                (#"{"teamId": "TEAM123456", "keyId": "NEWKEY0001", "keyFile": "\#(notAKey)"}"#, "keyFile"),
                (#"{"teamId": "TEAM123456", "keyId": "NEWKEY0001", "keyFile": "AuthKey.p8"}"#, "keyFile"),
                (#"{"teamId": "TEAM123456", "keyId": "NEWKEY0001", "keyFile": "/dev/zero"}"#, "keyFile"),
                (#"{"teamId": "TEAM123456", "keyId": "NEWKEY0001", "keyFile": "\#(directory.path)"}"#, "keyFile"),
                (#"{"teamId": "team", "keyId": "NEWKEY0001", "keyFile": "\#(rotated)"}"#, "teamId"),
                (#"{"teamId": "TEAM123456", "keyFile": "\#(rotated)"}"#, "keyId"),
            ] {
                let refused = try await client.send(.put, path, headers: Self.admin, body: body)
                #expect(refused.status == .badRequest, "\(body)")
                #expect(try refused.apiError().field == field, "\(body)")
                #expect(!refused.text.contains("PRIVATE KEY"))
            }
            #expect(try await AppRepository(client: fixture.db.client).find(id: fixture.app.id, logger: fixture.db.logger) == fixture.app)
            let noApp = try await client.send(
                .put,
                "/v1/apps/999/apns",
                headers: Self.admin,
                body: #"{"teamId": "TEAM123456", "keyId": "NEWKEY0001", "keyFile": "\#(rotated)"}"#
            )
            #expect(noApp.status == .notFound)

            // A link to the key (as Kubernetes mounts secrets) is followed.
            let link = directory.appendingPathComponent("current.p8").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: rotated)
            let linked = try await client.send(
                .put,
                path,
                headers: Self.admin,
                body: #"{"teamId": "TEAM123456", "keyId": "NEWKEY0001", "keyFile": "\#(link)"}"#
            )
            #expect(linked.status == .ok, "\(linked.text)")

            let set = try await client.send(
                .put,
                path,
                headers: Self.admin,
                body: #"{"teamId": "TEAM123456", "keyId": "NEWKEY0001", "keyFile": "\#(rotated)"}"#
            )
            #expect(set.status == .ok)
            let json = try set.json()
            #expect(json["credentialsVersion"] as? Int == 3)
            let apns = try #require(json["apns"] as? [String: Any])
            #expect(apns["keyId"] as? String == "NEWKEY0001")
            #expect(apns["keyReference"] as? String == rotated)
            let stored = try await AppRepository(client: fixture.db.client).find(id: fixture.app.id, logger: fixture.db.logger)
            #expect(stored?.apns?.keyReference == rotated)
        }
    }

    @Test("DELETE apns or fcm removes one of two providers (200); the only provider stays (409), an absent one is 404 naming it")
    func removeProviders() async throws {
        try await APIFixture.with { fixture, client in
            let apnsPath = "/v1/apps/\(fixture.app.id)/apns"
            let fcmPath = "/v1/apps/\(fixture.app.id)/fcm"
            let only = try await client.send(.delete, apnsPath, headers: Self.admin)
            #expect(only.status == .conflict)
            #expect(try only.apiError().field == "apns")
            let absent = try await client.send(.delete, fcmPath, headers: Self.admin)
            #expect(absent.status == .notFound)
            #expect(try absent.apiError().field == "fcm")

            let fcm = try FCMCredentials(serviceAccount: "/secrets/firebase-news.json", projectID: "paperboy-news")
            _ = try await AppRepository(client: fixture.db.client).setFCM(appID: fixture.app.id, fcm, logger: fixture.db.logger)
            let removed = try await client.send(.delete, apnsPath, headers: Self.admin)
            #expect(removed.status == .ok)
            #expect(try removed.json()["apns"] == nil)
            #expect((try removed.json()["fcm"] as? [String: Any])?["projectId"] as? String == "paperboy-news")
            #expect(try removed.json()["credentialsVersion"] as? Int == 3)

            let listed = try await client.send(.get, "/v1/apps", headers: Self.admin)
            let app = try #require((try listed.json()["apps"] as? [[String: Any]])?.first)
            #expect(app["apns"] == nil)
            #expect(app["fcm"] != nil)
            #expect(try await client.send(.delete, fcmPath, headers: Self.admin).status == .conflict)
        }
    }
}
