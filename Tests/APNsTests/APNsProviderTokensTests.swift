import APNs
import Crypto
import Foundation
import PaperboyTesting
import Synchronization
import Testing

@Suite("Provider tokens")
struct APNsProviderTokensTests {
    let key = try! APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")

    @Test("a token is ES256 with kid and iss/iat, and verifies with the key's public key")
    func tokenShape() throws {
        let privateKey = P256.Signing.PrivateKey()
        let key = try APNsSigningKey(pem: privateKey.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
        let token = try key.providerToken(issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(try decode(parts[0]) == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        #expect(try decode(parts[1]) == #"{"iss":"TEAM123456","iat":1700000000}"#)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try data(parts[2]))
        #expect(privateKey.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
    }

    @Test("the token is reused for 50 minutes, however many tasks ask, then replaced")
    func reuse() async throws {
        let clock = ManualClock()
        let tokens = APNsProviderTokens(key: key, clock: clock)
        let first = try tokens.current()
        let concurrent = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try tokens.current() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(concurrent == [first])
        clock.advance(by: .seconds(49 * 60 + 59))
        #expect(try tokens.current() == first)
        clock.advance(by: .seconds(1))
        #expect(try tokens.current() != first)
        #expect(tokens.refreshes == 2)
    }

    @Test("after ExpiredProviderToken the token is replaced at once, but never within 20 minutes of the last")
    func expiredProviderToken() async throws {
        let clock = ManualClock()
        let tokens = APNsProviderTokens(key: key, clock: clock)
        let first = try tokens.current()

        clock.advance(by: .seconds(5 * 60))
        tokens.rejected(first)
        #expect(try tokens.current() == first, "a 5-minute-old token is not replaced: that would answer TooManyProviderTokenUpdates")

        clock.advance(by: .seconds(15 * 60))
        let second = try tokens.current()
        #expect(second != first, "at 20 minutes the rejected token is replaced")

        clock.advance(by: .seconds(25 * 60))
        tokens.rejected(first)
        #expect(try tokens.current() == second, "a rejection of a token already replaced changes nothing")
        tokens.rejected(second)
        #expect(try tokens.current() != second, "a rejected token older than 20 minutes is replaced at once")
        #expect(tokens.refreshes == 3)
    }

    @Test("a missing, unreadable or non-P-256 key file fails naming the file, never printing the key")
    func badKeys() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let missing = directory.appendingPathComponent("missing.p8").path
        #expect(throws: APNsKeyError(code: .missing, subject: missing)) {
            try APNsSigningKey(pemFile: missing, keyID: "KEY1234567", teamID: "TEAM123456")
        }
        let rsaLike = directory.appendingPathComponent("other.p8").path
        try "-----BEGIN PRIVATE KEY-----\nMIIBVgIBADANBgkqhkiG9w0BAQEFAASCAUAwggE8AgEAAkEA\n-----END PRIVATE KEY-----\n".write(
            toFile: rsaLike,
            atomically: true,
            encoding: .utf8
        )
        let error = #expect(throws: APNsKeyError.self) {
            try APNsSigningKey(pemFile: rsaLike, keyID: "KEY1234567", teamID: "TEAM123456")
        }
        #expect(error?.code == .notP256)
        #expect(error?.description.contains(rsaLike) == true)
        #expect(error?.description.contains("MIIB") == false)

        let good = directory.appendingPathComponent("good.p8").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: good, atomically: true, encoding: .utf8)
        #expect(throws: APNsKeyError(code: .badKeyID, subject: "short")) {
            try APNsSigningKey(pemFile: good, keyID: "short", teamID: "TEAM123456")
        }
        #expect(try APNsSigningKey(pemFile: good, keyID: "KEY1234567", teamID: "TEAM123456").keyID == "KEY1234567")
    }

    private func data(_ base64URL: String) throws -> Data {
        var text = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while !text.count.isMultiple(of: 4) { text += "=" }
        return try #require(Data(base64Encoded: text))
    }

    private func decode(_ base64URL: String) throws -> String {
        String(decoding: try data(base64URL), as: UTF8.self)
    }
}
