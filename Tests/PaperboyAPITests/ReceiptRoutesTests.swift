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

@Suite("Receipt API")
struct ReceiptRoutesTests {
    static let admin: HTTPFields = [.authorization: "Bearer \(APIFixture.adminToken)"]
    static let receipts = "/v1/devices/\(token())/receipts"

    /// Registers the fixture's device and publishes a morning edition; returns the edition's id.
    static func prepare(_ fixture: APIFixture, _ client: any TestClientProtocol) async throws -> String {
        let registered = try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration)
        #expect(registered.status == .created)
        let published = try await client.send(.post, "/v1/editions", headers: admin, body: EditionRoutesTests.file())
        #expect(published.status == .created)
        return try #require(try published.json()["id"] as? String)
    }

    static func body(_ editionID: String, _ result: String, bytes: Int = 100, seconds: Double = 1.5) -> String {
        #"{"editionId": "\#(editionID)", "result": "\#(result)", "bytes": \#(bytes), "seconds": \#(seconds)}"#
    }

    static func count(_ fixture: APIFixture) async throws -> Int {
        let rows = try await fixture.db.client.query("SELECT count(*) FROM receipts", logger: fixture.db.logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    @Test("the first receipt answers 201; the same again 200 with the stored receipt, unchanged")
    func idempotent() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client)
            let first = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: Self.body(edition, "newData"))
            #expect(first.status == .created)
            let stored = try first.json()
            #expect(stored["editionId"] as? String == edition)
            #expect(stored["result"] as? String == "newData")
            #expect(stored["bytes"] as? Int == 100)
            #expect(stored["seconds"] as? Double == 1.5)
            #expect(stored["token"] as? String == token())

            let again = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: Self.body(edition, "newData"))
            #expect(again.status == .ok)
            #expect(again.text == first.text)
            #expect(try await Self.count(fixture) == 1)

            // Optional fields default to 0.
            let edition2 = try #require(
                try await client.send(.post, "/v1/editions", headers: Self.admin, body: EditionRoutesTests.file(issueDate: "2026-11-24"))
                    .json()["id"] as? String
            )
            let minimal = try await client.send(
                .post,
                Self.receipts,
                key: fixture.apiKey,
                body: #"{"editionId": "\#(edition2.uppercased())", "result": "noData"}"#
            )
            #expect(minimal.status == .created)
            #expect(try minimal.json()["bytes"] as? Int == 0)
            #expect(try minimal.json()["seconds"] as? Double == 0)

            // The counts come from the receipt tallies: a worker's step counts what arrived.
            try await ReceiptTallies(client: fixture.db.client, configuration: .init(lag: .zero, interval: .zero)).step(logger: fixture.db.logger)
            let counts = try await ReceiptRepository(client: fixture.db.client).counts(
                editionID: try #require(UUID(uuidString: edition)),
                logger: fixture.db.logger
            )
            #expect(counts == [.newData: 1])
        }
    }

    @Test("a failed receipt is replaced by a later success; a success is never replaced")
    func upgradeOnly() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client)
            let failed = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: Self.body(edition, "failed", bytes: 10))
            #expect(failed.status == .created)
            let failedAgain = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: Self.body(edition, "failed", bytes: 20))
            #expect(failedAgain.status == .ok)
            #expect(try failedAgain.json()["bytes"] as? Int == 10)
            // A worker's step counts the failure; the success that replaces it moves the count.
            let tallies = ReceiptTallies(client: fixture.db.client, configuration: .init(lag: .zero, interval: .zero))
            try await tallies.step(logger: fixture.db.logger)
            let editionID = try #require(UUID(uuidString: edition))
            #expect(try await ReceiptRepository(client: fixture.db.client).counts(editionID: editionID, logger: fixture.db.logger) == [.failed: 1])

            let retried = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: Self.body(edition, "newData", bytes: 500))
            #expect(retried.status == .ok)
            #expect(try retried.json()["result"] as? String == "newData")
            #expect(try retried.json()["bytes"] as? Int == 500)

            for result in ["failed", "noData", "newData"] {
                let later = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: Self.body(edition, result, bytes: 7))
                #expect(later.status == .ok)
                #expect(later.text == retried.text)
            }
            try await tallies.step(logger: fixture.db.logger)
            let counts = try await ReceiptRepository(client: fixture.db.client).counts(
                editionID: try #require(UUID(uuidString: edition)),
                logger: fixture.db.logger
            )
            #expect(counts == [.newData: 1])
        }
    }

    @Test("unknown device, unknown or another app's edition answer 404 naming the field; a wrong key 401")
    func notFound() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client)
            let unknownDevice = try await client.send(
                .post,
                "/v1/devices/\(token("cd"))/receipts",
                key: fixture.apiKey,
                body: Self.body(edition, "newData")
            )
            #expect(unknownDevice.status == .notFound)
            #expect(try unknownDevice.apiError().field == "token")

            let unknownEdition = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: Self.body(UUID().uuidString, "newData"))
            #expect(unknownEdition.status == .notFound)
            #expect(try unknownEdition.apiError().field == "editionId")

            let other = try await AppRepository(client: fixture.db.client).create(
                try NewApp(bundleID: "com.example.other", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/other.p8"),
                logger: fixture.db.logger
            ).app
            _ = try await PublicationRepository(client: fixture.db.client).add(appID: other.id, slug: "weekly", title: nil, logger: fixture.db.logger)
            let foreign = try await client.send(.post, "/v1/editions?app=\(other.id)", headers: Self.admin, body: EditionRoutesTests.file("weekly"))
            let foreignID = try #require(try foreign.json()["id"] as? String)
            let foreignEdition = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: Self.body(foreignID, "newData"))
            #expect(foreignEdition.status == .notFound)
            #expect(try foreignEdition.apiError().field == "editionId")

            let wrongKey = try await client.send(.post, Self.receipts, key: "pb_wrong", body: Self.body(edition, "newData"))
            #expect(wrongKey.status == .unauthorized)
            let noKey = try await client.send(.post, Self.receipts, body: Self.body(edition, "newData"))
            #expect(noKey.status == .unauthorized)

            let get = try await client.send(.get, Self.receipts, key: fixture.apiKey)
            #expect(get.status == .methodNotAllowed)
            #expect(try await Self.count(fixture) == 0)
        }
    }

    @Test("bad bodies answer 400 naming the field, and store nothing")
    func badBodies() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client)
            let cases: [(String, APIError.Code, String)] = [
                ("", .invalidJSON, "body"),
                ("not json", .invalidJSON, "body"),
                (#"{"result": "newData"}"#, .missingField, "editionId"),
                (#"{"editionId": "\#(edition)"}"#, .missingField, "result"),
                (#"{"editionId": 12, "result": "newData"}"#, .wrongType, "editionId"),
                (#"{"editionId": "not-a-uuid", "result": "newData"}"#, .invalidValue, "editionId"),
                (#"{"editionId": "\#(edition)", "result": "maybe"}"#, .invalidValue, "result"),
                (#"{"editionId": "\#(edition)", "result": 1}"#, .wrongType, "result"),
                (#"{"editionId": "\#(edition)", "result": "newData", "bytes": "12"}"#, .wrongType, "bytes"),
                (#"{"editionId": "\#(edition)", "result": "newData", "bytes": -1}"#, .invalidValue, "bytes"),
                (#"{"editionId": "\#(edition)", "result": "newData", "seconds": "4"}"#, .wrongType, "seconds"),
                (#"{"editionId": "\#(edition)", "result": "newData", "seconds": -0.5}"#, .invalidValue, "seconds"),
            ]
            for (body, code, field) in cases {
                let response = try await client.send(.post, Self.receipts, key: fixture.apiKey, body: body)
                #expect(response.status == .badRequest, "\(body)")
                let error = try response.apiError()
                #expect(error.code == code, "\(body)")
                #expect(error.field == field, "\(body)")
            }
            let badToken = try await client.send(.post, "/v1/devices/xyz/receipts", key: fixture.apiKey, body: Self.body(edition, "newData"))
            #expect(badToken.status == .badRequest)
            #expect(try badToken.apiError().field == "token")
            #expect(try await Self.count(fixture) == 0)
        }
    }
}
