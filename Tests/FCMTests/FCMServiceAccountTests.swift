import Crypto
import FCM
import Foundation
import Testing
import _CryptoExtras

@Suite("FCM service accounts")
struct FCMServiceAccountTests {
    /// A throwaway RSA key made for these tests, in PKCS#8 PEM as Google issues them.
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    static func fields(key: String = key.pkcs8PEMRepresentation) -> [String: Any] {
        [
            "type": "service_account",
            "project_id": "paperboy-news",
            "private_key_id": "0123456789abcdef0123456789abcdef01234567",
            "private_key": key,
            "client_email": "firebase-adminsdk-x1y2z@paperboy-news.iam.gserviceaccount.com",
            "client_id": "123456789012345678901",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
    }

    static func json(_ fields: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: fields)
    }

    @Test("a Firebase service-account file parses: project, email, key id, token URI and a key that signs")
    func parses() throws {
        let account = try FCMServiceAccount(json: Self.json(Self.fields()))
        #expect(account.projectID == "paperboy-news")
        #expect(account.clientEmail == "firebase-adminsdk-x1y2z@paperboy-news.iam.gserviceaccount.com")
        #expect(account.privateKeyID == "0123456789abcdef0123456789abcdef01234567")
        #expect(account.tokenURI.absoluteString == "https://oauth2.googleapis.com/token")
        let message = Data("header.claims".utf8)
        let signature = try account.privateKey.signature(for: message, padding: .insecurePKCS1v1_5)
        #expect(Self.key.publicKey.isValidSignature(signature, for: message, padding: .insecurePKCS1v1_5))
    }

    @Test("a PKCS#1 key (BEGIN RSA PRIVATE KEY) parses too")
    func pkcs1() throws {
        let account = try FCMServiceAccount(json: Self.json(Self.fields(key: Self.key.pemRepresentation)))
        #expect(account.privateKey.publicKey.pkcs1DERRepresentation == Self.key.publicKey.pkcs1DERRepresentation)
    }

    @Test("the key never appears in description, debugDescription or string interpolation")
    func keyNeverPrinted() throws {
        let account = try FCMServiceAccount(json: Self.json(Self.fields()))
        let pemBody = Self.key.pkcs8PEMRepresentation.split(separator: "\n")[1]
        for text in [account.description, account.debugDescription, "\(account)", String(reflecting: account)] {
            #expect(!text.contains(pemBody))
            #expect(!text.contains("PRIVATE KEY"))
            #expect(text.contains("paperboy-news"))
        }
    }

    struct Bad: CustomTestStringConvertible, Sendable {
        var name: String
        var field: String?
        var change: @Sendable ([String: Any]) -> [String: Any]
        var testDescription: String { name }
    }

    static let bad: [Bad] = [
        Bad(name: "missing type", field: "type") { $0.filter { $0.key != "type" } },
        Bad(name: "another type", field: "type") { $0.merging(["type": "authorized_user"]) { $1 } },
        Bad(name: "missing project_id", field: "project_id") { $0.filter { $0.key != "project_id" } },
        Bad(name: "malformed project_id", field: "project_id") { $0.merging(["project_id": "Paperboy News"]) { $1 } },
        Bad(name: "missing private_key_id", field: "private_key_id") { $0.filter { $0.key != "private_key_id" } },
        Bad(name: "missing private_key", field: "private_key") { $0.filter { $0.key != "private_key" } },
        Bad(name: "a private_key that is not PEM", field: "private_key") { $0.merging(["private_key": "not a key"]) { $1 } },
        Bad(name: "an EC key instead of RSA", field: "private_key") {
            $0.merging(["private_key": P256.Signing.PrivateKey().pemRepresentation]) { $1 }
        },
        Bad(name: "a private_key that is a number", field: "private_key") { $0.merging(["private_key": 42]) { $1 } },
        Bad(name: "missing client_email", field: "client_email") { $0.filter { $0.key != "client_email" } },
        Bad(name: "client_email without @", field: "client_email") { $0.merging(["client_email": "firebase"]) { $1 } },
        Bad(name: "missing token_uri", field: "token_uri") { $0.filter { $0.key != "token_uri" } },
        Bad(name: "token_uri not a URL", field: "token_uri") { $0.merging(["token_uri": "token"]) { $1 } },
        Bad(name: "token_uri over http to a remote host", field: "token_uri") {
            $0.merging(["token_uri": "http://oauth2.googleapis.com/token"]) { $1 }
        },
    ]

    @Test("a bad file is refused naming the field, never quoting the key", arguments: bad)
    func refused(_ bad: Bad) throws {
        let data = try Self.json(bad.change(Self.fields()))
        do {
            _ = try FCMServiceAccount(json: data)
            Issue.record("accepted")
        } catch {
            #expect(error.field == bad.field)
            // A PEM key's body starts "MII" (an ASN.1 sequence): no part of any key is quoted.
            #expect(!error.description.contains("MII"))
            #expect(!error.description.contains(Self.key.pkcs8PEMRepresentation.split(separator: "\n")[1]))
        }
    }

    @Test(
        "http token URIs are accepted for loopback hosts only (simulators)",
        arguments: ["http://127.0.0.1:9090/token", "http://localhost/token", "http://[::1]:8/t"]
    )
    func loopbackHTTP(_ uri: String) throws {
        let account = try FCMServiceAccount(json: Self.json(Self.fields().merging(["token_uri": uri]) { $1 }))
        #expect(account.tokenURI.absoluteString == uri)
    }

    @Test("files: a missing file and a file that is not JSON are refused naming the file")
    func files() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("missing.json").path
        #expect { try FCMServiceAccount(contentsOf: missing) } throws: { ($0 as? FCMServiceAccount.Error)?.message.contains(missing) == true }

        let notJSON = directory.appendingPathComponent("key.pem").path
        try Self.key.pkcs8PEMRepresentation.write(toFile: notJSON, atomically: true, encoding: .utf8)
        #expect { try FCMServiceAccount(contentsOf: notJSON) } throws: { error in
            guard let error = error as? FCMServiceAccount.Error else { return false }
            return error.field == nil && !error.description.contains("PRIVATE KEY")
        }

        let good = directory.appendingPathComponent("service-account.json").path
        try Self.json(Self.fields()).write(to: URL(fileURLWithPath: good))
        #expect(try FCMServiceAccount(contentsOf: good).projectID == "paperboy-news")
    }
}
