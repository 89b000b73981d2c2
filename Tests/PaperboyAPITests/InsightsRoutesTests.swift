import Foundation
import HTTPTypes
import HummingbirdTesting
import PaperboyAPI
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Insights API: wake rates")
struct InsightsRoutesTests {
    static let route = "/v1/insights/wake-rates"

    @Test("needs the admin token; a push whose receipt echoes its wave counts as a wake, too few for a rate")
    func wakeRates() async throws {
        try await APIFixture.with { fixture, client in
            #expect(try await client.send(.get, Self.route).status == .unauthorized)
            let deviceKey = try await client.send(.get, Self.route, headers: [.authorization: "Bearer \(fixture.apiKey)"])
            #expect(deviceKey.status == .unauthorized)
            #expect(try deviceKey.apiError().field == "Authorization")

            let edition = try await ReceiptRoutesTests.prepare(fixture, client)
            let editionID = try #require(UUID(uuidString: edition))
            try await fixture.db.client.query(
                "INSERT INTO broadcasts (id, edition_id, environment, state, plan) VALUES (md5('b')::uuid, \(editionID), 0, 'running', '{}')",
                logger: fixture.db.logger
            )
            try await fixture.db.client.query(
                """
                INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
                SELECT id, md5('b')::uuid, w, 0, true, now() - make_interval(mins => 40 - 20 * w), 'accepted' FROM devices, generate_series(1, 2) w
                """,
                logger: fixture.db.logger
            )
            let receipt = try await client.send(
                .post,
                ReceiptRoutesTests.receipts,
                key: fixture.apiKey,
                body: #"{"editionId": "\#(edition)", "result": "newData", "wave": 1, "network": "wifi"}"#
            )
            #expect(receipt.status == .created)

            let response = try await client.send(.get, Self.route + "?publication=morning&days=7", headers: ReceiptRoutesTests.admin)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json; charset=utf-8")
            let json = try response.json()
            #expect(json["publication"] as? String == "morning" && json["days"] as? Int == 7 && json["minimumPushes"] as? Int == 200)
            let total = try #require(json["total"] as? [String: Any])
            #expect(total["pushes"] as? Int == 2 && total["wakes"] as? Int == 1 && total["rate"] == nil)
            let dimensions = try #require(json["dimensions"] as? [[String: Any]])
            #expect(
                dimensions.map { $0["dimension"] as? String } == [
                    "wave", "platform", "modelFamily", "osMajor", "network", "charging", "lowPowerMode", "backgroundRefresh", "localHour",
                ]
            )
            let waves = try #require(dimensions[0]["groups"] as? [[String: Any]])
            #expect(waves.count == 1 && waves[0]["key"] as? String == "other" && waves[0]["merged"] as? Int == 2)
            #expect(waves[0]["pushes"] as? Int == 2 && waves[0]["wakes"] as? Int == 1 && waves[0]["rate"] == nil)

            let everything = try await client.send(.get, Self.route, headers: ReceiptRoutesTests.admin)
            #expect(everything.status == .ok)
            let everythingJSON = try everything.json()
            #expect(everythingJSON["days"] as? Int == 14 && everythingJSON["publication"] == nil)
            // Two pushes are far below any sample: every push counted, and no `sample` in the answer.
            #expect(everythingJSON["sample"] == nil)
            for sample in ["all", "1000"] {
                let counted = try await client.send(.get, Self.route + "?sample=" + sample, headers: ReceiptRoutesTests.admin)
                let countedTotal = try counted.json()["total"] as? [String: Any]
                #expect(counted.status == .ok && countedTotal?["pushes"] as? Int == 2, "\(sample)")
            }
        }
    }

    @Test("bad days, sample or app answer 400 naming the parameter; an unknown publication 404 naming it")
    func refusals() async throws {
        try await APIFixture.with { _, client in
            for query in ["days=0", "days=91", "days=two", "days=", "days=1.5"] {
                let response = try await client.send(.get, Self.route + "?" + query, headers: ReceiptRoutesTests.admin)
                #expect(response.status == .badRequest, "\(query)")
                #expect(try response.apiError().field == "days", "\(query)")
            }
            for query in ["sample=999", "sample=0", "sample=-5", "sample=some", "sample="] {
                let response = try await client.send(.get, Self.route + "?" + query, headers: ReceiptRoutesTests.admin)
                #expect(response.status == .badRequest, "\(query)")
                #expect(try response.apiError().field == "sample", "\(query)")
            }
            let app = try await client.send(.get, Self.route + "?app=x", headers: ReceiptRoutesTests.admin)
            #expect(app.status == .badRequest)
            #expect(try app.apiError().field == "app")
            let unknown = try await client.send(.get, Self.route + "?publication=weekly", headers: ReceiptRoutesTests.admin)
            #expect(unknown.status == .notFound)
            #expect(try unknown.apiError().field == "publication")
            let empty = try await client.send(.get, Self.route + "?publication=", headers: ReceiptRoutesTests.admin)
            #expect(empty.status == .badRequest)
            #expect(try empty.apiError().field == "publication")
        }
    }
}
