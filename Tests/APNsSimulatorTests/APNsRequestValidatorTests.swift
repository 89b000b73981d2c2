import APNs
import APNsSimulator
import Crypto
import Foundation
import PaperboyCore
import Testing

@Suite("Simulator request validation")
struct APNsRequestValidatorTests {
    static let privateKey = P256.Signing.PrivateKey()
    static let key = try! APNsSigningKey(pem: privateKey.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let token = String(repeating: "ab", count: 32)

    let validator = APNsRequestValidator(
        configuration: .init(teamID: "TEAM123456", keys: ["KEY1234567": privateKey.publicKey], topics: ["com.example.news"])
    )

    /// A request as Paperboy's client sends it: a background notification with a fresh provider token.
    func request(
        method: String = "POST",
        path: String = "/3/device/\(token)",
        providerToken: String? = try! key.providerToken(issuedAt: now),
        edit: (inout [(name: String, value: String)]) -> Void = { _ in },
        body: [UInt8]? = nil
    ) throws -> APNsRequestValidator.Request {
        let notification = try APNsNotification.background(["edition": "e1"], collapseID: "morning", apnsID: UUID())
        var headers = notification.headers
        headers.append(("apns-topic", "com.example.news"))
        if let providerToken { headers.append(("authorization", "bearer \(providerToken)")) }
        edit(&headers)
        return .init(method: method, path: path, headers: headers, body: body ?? notification.payload)
    }

    @Test("a well-formed background notification is accepted for its token")
    func accepted() throws {
        #expect(validator.validate(try request(path: "/3/device/\(Self.token.uppercased())"), now: Self.now) == .accepted(token: Self.token))
    }

    @Test("method, path and token are checked first")
    func methodPathToken() throws {
        #expect(validator.validate(try request(method: "GET"), now: Self.now) == .rejected(status: 405, reason: .methodNotAllowed))
        #expect(validator.validate(try request(path: "/3/devices/\(Self.token)"), now: Self.now) == .rejected(status: 404, reason: .badPath))
        #expect(validator.validate(try request(path: "/3/device/"), now: Self.now) == .rejected(status: 400, reason: .missingDeviceToken))
        #expect(validator.validate(try request(path: "/3/device/abc"), now: Self.now) == .rejected(status: 400, reason: .badDeviceToken))
        let long = String(repeating: "cd", count: 100)
        #expect(validator.validate(try request(path: "/3/device/\(long)"), now: Self.now) == .accepted(token: long))
    }

    @Test("provider tokens: missing, forged, another key or team, and older than an hour")
    func providerTokens() throws {
        #expect(validator.validate(try request(providerToken: nil), now: Self.now) == .rejected(status: 403, reason: .missingProviderToken))
        let otherKey = try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
        let forged = try otherKey.providerToken(issuedAt: Self.now)
        #expect(validator.validate(try request(providerToken: forged), now: Self.now) == .rejected(status: 403, reason: .invalidProviderToken))
        let otherTeam = try APNsSigningKey(pem: Self.privateKey.pemRepresentation, keyID: "KEY1234567", teamID: "OTHERTEAM1")
        #expect(
            validator.validate(try request(providerToken: try otherTeam.providerToken(issuedAt: Self.now)), now: Self.now)
                == .rejected(status: 403, reason: .invalidProviderToken)
        )
        let old = try Self.key.providerToken(issuedAt: Self.now.addingTimeInterval(-3601))
        #expect(validator.validate(try request(providerToken: old), now: Self.now) == .rejected(status: 403, reason: .expiredProviderToken))
        #expect(validator.validate(try request(providerToken: "not.a.jwt"), now: Self.now) == .rejected(status: 403, reason: .invalidProviderToken))
    }

    @Test("headers: topic, push type against priority, expiration, collapse id, apns-id, duplicates")
    func headers() throws {
        func set(_ name: String, _ value: String?) -> (inout [(name: String, value: String)]) -> Void {
            { headers in
                headers.removeAll { $0.name == name }
                if let value { headers.append((name, value)) }
            }
        }
        let cases: [((inout [(name: String, value: String)]) -> Void, APNsReason)] = [
            (set("apns-topic", nil), .missingTopic),
            (set("apns-topic", "com.example.other"), .topicDisallowed),
            (set("apns-push-type", "wakeup"), .invalidPushType),
            (set("apns-priority", "10"), .badPriority),
            (set("apns-priority", "7"), .badPriority),
            (set("apns-expiration", "tomorrow"), .badExpirationDate),
            (set("apns-collapse-id", String(repeating: "c", count: 65)), .badCollapseId),
            (set("apns-id", "not-a-uuid"), .badMessageId),
            ({ $0.append(("apns-topic", "com.example.news")) }, .duplicateHeaders),
        ]
        for (edit, reason) in cases {
            #expect(validator.validate(try request(edit: edit), now: Self.now) == .rejected(status: 400, reason: reason), "\(reason)")
        }
    }

    @Test("payloads: empty, and over 4096 bytes")
    func payloads() throws {
        #expect(validator.validate(try request(body: []), now: Self.now) == .rejected(status: 400, reason: .payloadEmpty))
        #expect(
            validator.validate(try request(body: Array(repeating: UInt8(ascii: " "), count: 4097)), now: Self.now)
                == .rejected(status: 413, reason: .payloadTooLarge)
        )
    }
}
