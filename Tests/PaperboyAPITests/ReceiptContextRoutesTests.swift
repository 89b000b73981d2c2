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

@Suite("Receipt API: wake context")
struct ReceiptContextRoutesTests {
    @Test("a receipt with context answers it back and stores it; one without answers exactly the old shape")
    func withAndWithout() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await ReceiptRoutesTests.prepare(fixture, client)
            let body = """
                {"editionId": "\(edition)", "result": "newData", "bytes": 10, "seconds": 2, "network": "wifi", "charging": true,
                "lowPowerMode": false, "backgroundRefresh": true, "wave": 2, "secondsFromPush": 12.6}
                """
            let created = try await client.send(.post, ReceiptRoutesTests.receipts, key: fixture.apiKey, body: body)
            #expect(created.status == .created)
            let json = try created.json()
            #expect(json["network"] as? String == "wifi")
            #expect(json["charging"] as? Bool == true)
            #expect(json["lowPowerMode"] as? Bool == false)
            #expect(json["backgroundRefresh"] as? Bool == true)
            #expect(json["wave"] as? Int == 2)
            #expect(json["secondsFromPush"] as? Int == 13, "stored in whole seconds")
            let again = try await client.send(.post, ReceiptRoutesTests.receipts, key: fixture.apiKey, body: body)
            #expect(again.status == .ok && again.text == created.text)

            let stored = try await fixture.db.client.query(
                "SELECT network, charging, low_power_mode, background_refresh, wave, seconds_from_push FROM receipts",
                logger: fixture.db.logger
            )
            for try await row in stored.decode((Int16?, Bool?, Bool?, Bool?, Int16?, Int32?).self) {
                #expect(row.0 == 0 && row.1 == true && row.2 == false && row.3 == true && row.4 == 2 && row.5 == 13)
            }

            // An old client: the same keys as before, no context ones; nulls are as good as absent.
            let second = try #require(
                try await client.send(
                    .post,
                    "/v1/editions",
                    headers: ReceiptRoutesTests.admin,
                    body: EditionRoutesTests.file(issueDate: "2026-11-24")
                ).json()["id"] as? String
            )
            let plain = try await client.send(
                .post,
                ReceiptRoutesTests.receipts,
                key: fixture.apiKey,
                body: #"{"editionId": "\#(second)", "result": "noData", "network": null, "wave": null}"#
            )
            #expect(plain.status == .created)
            #expect(Set(try plain.json().keys) == ["token", "editionId", "result", "bytes", "seconds", "receivedAt"])
        }
    }

    @Test("bad context answers 400 naming the field, and stores nothing")
    func badContext() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await ReceiptRoutesTests.prepare(fixture, client)
            let base = #""editionId": "\#(edition)", "result": "newData""#
            let cases: [(String, APIError.Code, String)] = [
                (#"{\#(base), "network": "5g"}"#, .invalidValue, "network"),
                (#"{\#(base), "network": 1}"#, .wrongType, "network"),
                (#"{\#(base), "charging": "yes"}"#, .wrongType, "charging"),
                (#"{\#(base), "lowPowerMode": 1}"#, .wrongType, "lowPowerMode"),
                (#"{\#(base), "backgroundRefresh": "on"}"#, .wrongType, "backgroundRefresh"),
                (#"{\#(base), "wave": 0}"#, .invalidValue, "wave"),
                (#"{\#(base), "wave": 40000}"#, .invalidValue, "wave"),
                (#"{\#(base), "wave": 1.5}"#, .invalidValue, "wave"),
                (#"{\#(base), "wave": "2"}"#, .wrongType, "wave"),
                (#"{\#(base), "secondsFromPush": -0.4}"#, .invalidValue, "secondsFromPush"),
                (#"{\#(base), "secondsFromPush": 90000}"#, .invalidValue, "secondsFromPush"),
                (#"{\#(base), "secondsFromPush": "12"}"#, .wrongType, "secondsFromPush"),
            ]
            for (body, code, field) in cases {
                let response = try await client.send(.post, ReceiptRoutesTests.receipts, key: fixture.apiKey, body: body)
                #expect(response.status == .badRequest, "\(body)")
                let error = try response.apiError()
                #expect(error.code == code, "\(body)")
                #expect(error.field == field, "\(body)")
            }
            let network = try await client.send(.post, ReceiptRoutesTests.receipts, key: fixture.apiKey, body: cases[0].0)
            #expect(try network.apiError().message == "network must be one of: wifi, cellular, none")
            #expect(try await ReceiptRoutesTests.count(fixture) == 0)
        }
    }
}
