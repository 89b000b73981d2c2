import Crypto
import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

/// `paperboy apps` with any combination of providers, APNs key rotation and several device API keys, as
/// operators run it: the real binary against a fresh database.
@Suite("paperboy apps: providers and device API keys")
struct AppsProvidersCommandTests {
    static func json(_ output: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(output.utf8))
    }

    @Test(
        "an Android-only app is added with FCM alone; an app with neither provider, or a part of the APNs flags, is refused naming the flags; set-apns rotates the key, remove-fcm and remove-apns keep one provider",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func providers() async throws {
        try await TestDatabase.with { db in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-apps-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let p8 = directory.appendingPathComponent("AuthKey_KEY1234567.p8").path
            try P256.Signing.PrivateKey().pemRepresentation.write(toFile: p8, atomically: true, encoding: .utf8)
            let account = try ServiceAccountFile.write(in: directory, name: "android.json", projectID: "paperboy-android")

            let neither = try await PaperboyBinary.run(["apps", "add", "--bundle-id", "com.example.none"], database: db.configuration)
            #expect(neither.status != 0)
            #expect(neither.output.contains("--team-id") && neither.output.contains("--key-file") && neither.output.contains("--fcm-service-account"))
            let part = try await PaperboyBinary.run(
                ["apps", "add", "--bundle-id", "com.example.part", "--team-id", "TEAM123456", "--fcm-service-account", account.path],
                database: db.configuration
            )
            #expect(part.status != 0)
            #expect(part.output.contains("missing --key-id, --key-file"), "\(part.output)")

            let added = try await PaperboyBinary.run(
                ["apps", "add", "--bundle-id", "com.example.android", "--fcm-service-account", account.path, "--json"],
                database: db.configuration
            )
            #expect(added.status == 0, "\(added.output)")
            let id = try #require((try Self.json(added.output) as? [String: Any])?["id"] as? Int)
            #expect(try await AppRepository(client: db.client).list(logger: db.logger).count == 1)

            let table = try await PaperboyBinary.run(["apps", "list"], database: db.configuration)
            #expect(table.output.contains("PROVIDERS"))
            let row = try #require(table.output.split(separator: "\n").first { $0.contains("com.example.android") })
            #expect(row.contains(" FCM ") && !row.contains("APNs"))
            let listed = try #require(
                try Self.json(try await PaperboyBinary.run(["apps", "list", "--json"], database: db.configuration).output) as? [[String: Any]]
            )
            #expect(listed.first?["apns"] == nil)
            #expect((listed.first?["fcm"] as? [String: Any])?["projectId"] as? String == "paperboy-android")
            #expect(listed.first?["credentialsVersion"] as? Int == 1)

            // Adding APNs (or rotating its key): checked first; a key that does not load is refused, nothing stored.
            let setAPNs = ["apps", "set-apns", "--app", "\(id)", "--team-id", "TEAM123456", "--key-id", "KEY1234567"]
            let badKey = try await PaperboyBinary.run(setAPNs + ["--key-file", account.path], database: db.configuration)
            #expect(badKey.status != 0)
            #expect(badKey.output.contains("--key-file"))
            for line in account.keyLines { #expect(!badKey.output.contains(line), "a line of a key was printed") }
            #expect(try await AppRepository(client: db.client).find(id: id, logger: db.logger)?.apns == nil)
            let partial = try await PaperboyBinary.run(["apps", "set-apns", "--app", "\(id)", "--team-id", "TEAM123456"], database: db.configuration)
            #expect(partial.status != 0)
            #expect(partial.output.contains("--key-id"))

            let rotated = try await PaperboyBinary.run(setAPNs + ["--key-file", p8], database: db.configuration)
            #expect(rotated.status == 0, "\(rotated.output)")
            #expect(rotated.output.contains("KEY1234567"))
            let stored = try #require(try await AppRepository(client: db.client).find(id: id, logger: db.logger))
            #expect(stored.apns?.keyReference == p8)
            #expect(stored.credentialsVersion == 2)

            let noFCM = try await PaperboyBinary.run(["apps", "remove-fcm", "--app", "\(id)"], database: db.configuration)
            #expect(noFCM.status == 0, "\(noFCM.output)")
            let last = try await PaperboyBinary.run(["apps", "remove-apns", "--app", "\(id)"], database: db.configuration)
            #expect(last.status != 0)
            #expect(last.output.contains("only provider"))
            let after = try await AppRepository(client: db.client).find(id: id, logger: db.logger)
            #expect(after?.apns?.keyReference == p8)
            #expect(after?.fcm == nil)
            #expect(after?.credentialsVersion == 3)

            let noApp = try await PaperboyBinary.run(["apps", "remove-fcm", "--app", "999"], database: db.configuration)
            #expect(noApp.status != 0)
            #expect(noApp.output.contains("--app"))
        }
    }

    @Test(
        "add-key prints a second key once; keys lists both without secrets; revoke-key retires the old one and refuses the last, naming --key",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func keys() async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let (app, first) = try await apps.create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            )
            let added = try await PaperboyBinary.run(["apps", "add-key", "--app", "\(app.id)", "--json"], database: db.configuration)
            #expect(added.status == 0, "\(added.output)")
            let json = try #require(try Self.json(added.output) as? [String: Any])
            let secret = try #require(json["apiKey"] as? String)
            let newID = try #require((json["key"] as? [String: Any])?["id"] as? Int)
            #expect(try await apps.find(apiKey: DeviceAPIKey(secret: secret), logger: db.logger)?.id == app.id)

            let table = try await PaperboyBinary.run(["apps", "keys", "--app", "\(app.id)"], database: db.configuration)
            #expect(table.status == 0)
            #expect(table.output.contains("LAST USED") && table.output.contains("REVOKED"))
            #expect(!table.output.contains(secret) && !table.output.contains(first.secret))
            let listed = try #require(
                try Self.json(try await PaperboyBinary.run(["apps", "keys", "--app", "\(app.id)", "--json"], database: db.configuration).output)
                    as? [[String: Any]]
            )
            #expect(listed.count == 2)
            let oldID = try #require(listed.first?["id"] as? Int)

            let revoked = try await PaperboyBinary.run(["apps", "revoke-key", "--app", "\(app.id)", "--key", "\(oldID)"], database: db.configuration)
            #expect(revoked.status == 0, "\(revoked.output)")
            #expect(try await apps.find(apiKey: first, logger: db.logger) == nil)
            let revokedRow = try await PaperboyBinary.run(["apps", "keys", "--app", "\(app.id)"], database: db.configuration)
            let oldRow = try #require(revokedRow.output.split(separator: "\n").first { $0.hasPrefix("\(oldID) ") })
            #expect(!oldRow.hasSuffix("-"))

            let last = try await PaperboyBinary.run(["apps", "revoke-key", "--app", "\(app.id)", "--key", "\(newID)"], database: db.configuration)
            #expect(last.status != 0)
            #expect(last.output.contains("--key") && last.output.contains("last active key"))
            #expect(try await apps.find(apiKey: DeviceAPIKey(secret: secret), logger: db.logger)?.id == app.id)
            let unknown = try await PaperboyBinary.run(["apps", "keys", "--app", "999"], database: db.configuration)
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("--app"))
        }
    }

    @Test(
        "release and confirm-deactivations on a provider that is not held fail, naming --app, --provider and apps holds; --json says released false",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func notHeld() async throws {
        try await TestDatabase.with { db in
            let (app, _) = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            )
            for command in ["release", "confirm-deactivations"] {
                let arguments = ["apps", command, "--app", "\(app.id)", "--provider", "apns"]
                let text = try await PaperboyBinary.run(arguments, database: db.configuration)
                #expect(text.status != 0, "apps \(command): \(text.output)")
                #expect(text.output.contains("--app, --provider") && text.output.contains("is not held"), "apps \(command): \(text.output)")
                #expect(text.output.contains("paperboy apps holds"), "apps \(command): \(text.output)")
                let json = try await PaperboyBinary.run(arguments + ["--json"], database: db.configuration)
                #expect(json.status == 0, "apps \(command) --json: \(json.output)")
                #expect((try Self.json(json.output) as? [String: Any])?["released"] as? Bool == false, "apps \(command) --json: \(json.output)")
            }
        }
    }
}
