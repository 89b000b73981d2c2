import Crypto
import Foundation
import PaperboyStore
import PaperboyTesting
import Testing
import _CryptoExtras

/// A Firebase service-account file with a throwaway RSA key made for the test, and the key's PEM body.
struct ServiceAccountFile {
    let path: String
    let keyLines: [String]

    /// - Parameter corruptingKey: leaves a line out of the key's body: still PEM-looking, not a key.
    static func write(
        in directory: URL,
        name: String,
        projectID: String,
        dropping field: String? = nil,
        corruptingKey: Bool = false
    ) throws -> ServiceAccountFile {
        let pem = try _RSA.Signing.PrivateKey(keySize: .bits2048).pkcs8PEMRepresentation
        var lines = pem.split(separator: "\n").map(String.init)
        if corruptingKey { lines.remove(at: 3) }
        var fields: [String: String] = [
            "type": "service_account",
            "project_id": projectID,
            "private_key_id": "0123456789abcdef0123456789abcdef01234567",
            "private_key": lines.joined(separator: "\n") + "\n",
            "client_email": "firebase-adminsdk@\(projectID).iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        if let field { fields[field] = nil }
        let url = directory.appendingPathComponent(name)
        try JSONSerialization.data(withJSONObject: fields).write(to: url)
        return ServiceAccountFile(path: url.path, keyLines: lines.filter { !$0.hasPrefix("-----") })
    }
}

/// `paperboy apps` with FCM service accounts, as operators run it: the real binary against a fresh database.
@Suite("paperboy apps: FCM service accounts")
struct AppsCommandTests {
    @Test(
        "apps add --fcm-service-account and apps set-fcm check the file, store its path and project id, and apps list shows them; bad files are refused naming the flag and field, never printing the key",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func serviceAccounts() async throws {
        try await TestDatabase.with { db in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-apps-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let p8 = directory.appendingPathComponent("AuthKey.p8")
            try P256.Signing.PrivateKey().pemRepresentation.write(to: p8, atomically: true, encoding: .utf8)
            let good = try ServiceAccountFile.write(in: directory, name: "news.json", projectID: "paperboy-news")
            let add = ["apps", "add", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--key-file", p8.path]

            let created = try await PaperboyBinary.run(
                add + ["--bundle-id", "com.example.news", "--fcm-service-account", good.path, "--json"],
                database: db.configuration
            )
            #expect(created.status == 0, "\(created.output)")
            let newsID = try #require((try JSONSerialization.jsonObject(with: Data(created.output.utf8)) as? [String: Any])?["id"] as? Int)

            // Without the flag, an app is added as before, with no FCM.
            let plain = try await PaperboyBinary.run(add + ["--bundle-id", "com.example.plain"], database: db.configuration)
            #expect(plain.status == 0, "\(plain.output)")

            let listed = try await PaperboyBinary.run(["apps", "list", "--json"], database: db.configuration)
            let apps = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]])
            let news = try #require(apps.first { $0["id"] as? Int == newsID })
            let fcm = try #require(news["fcm"] as? [String: Any])
            #expect(fcm["projectId"] as? String == "paperboy-news")
            #expect(fcm["serviceAccount"] as? String == good.path)
            #expect(apps.first { $0["bundleId"] as? String == "com.example.plain" }?["fcm"] == nil)
            let table = try await PaperboyBinary.run(["apps", "list"], database: db.configuration)
            #expect(table.output.contains("FCM PROJECT"))
            #expect(table.output.contains("paperboy-news"))

            // Replaced on an existing app.
            let other = try ServiceAccountFile.write(in: directory, name: "other.json", projectID: "paperboy-other")
            let replaced = try await PaperboyBinary.run(
                ["apps", "set-fcm", "--app", "\(newsID)", "--service-account", other.path],
                database: db.configuration
            )
            #expect(replaced.status == 0, "\(replaced.output)")
            #expect(replaced.output.contains("paperboy-other"))
            let stored = try await AppRepository(client: db.client).find(id: newsID, logger: db.logger)
            #expect(stored?.fcm?.projectID == "paperboy-other")
            #expect(stored?.fcm?.serviceAccount == other.path)

            // Refused: the flag, the file and the field are named; the key never printed.
            let noEmail = try ServiceAccountFile.write(in: directory, name: "no-email.json", projectID: "paperboy-news", dropping: "client_email")
            let refusedAdd = try await PaperboyBinary.run(
                add + ["--bundle-id", "com.example.refused", "--fcm-service-account", noEmail.path],
                database: db.configuration
            )
            #expect(refusedAdd.status != 0)
            #expect(refusedAdd.output.contains("--fcm-service-account"))
            #expect(refusedAdd.output.contains("client_email"))
            #expect(refusedAdd.output.contains(noEmail.path))
            for line in noEmail.keyLines { #expect(!refusedAdd.output.contains(line), "a line of the key was printed") }

            let badKey = try ServiceAccountFile.write(in: directory, name: "bad-key.json", projectID: "paperboy-news", corruptingKey: true)
            let refusedSet = try await PaperboyBinary.run(
                ["apps", "set-fcm", "--app", "\(newsID)", "--service-account", badKey.path],
                database: db.configuration
            )
            #expect(refusedSet.status != 0)
            #expect(refusedSet.output.contains("--service-account"))
            #expect(refusedSet.output.contains("private_key"))
            for line in badKey.keyLines { #expect(!refusedSet.output.contains(line), "a line of the key was printed") }
            #expect(try await AppRepository(client: db.client).find(id: newsID, logger: db.logger)?.fcm?.projectID == "paperboy-other")

            let missing = try await PaperboyBinary.run(
                ["apps", "set-fcm", "--app", "\(newsID)", "--service-account", directory.appendingPathComponent("none.json").path],
                database: db.configuration
            )
            #expect(missing.status != 0)
            #expect(missing.output.contains("--service-account") && missing.output.contains("none.json"))

            let noApp = try await PaperboyBinary.run(["apps", "set-fcm", "--app", "999", "--service-account", good.path], database: db.configuration)
            #expect(noApp.status != 0)
            #expect(noApp.output.contains("--app"))
        }
    }
}
