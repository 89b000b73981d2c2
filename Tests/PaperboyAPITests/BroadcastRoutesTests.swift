import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Broadcast API")
struct BroadcastRoutesTests {
    static let admin = EditionRoutesTests.admin

    /// Publishes an edition and registers `devices` morning subscribers; returns the edition id.
    static func prepare(_ fixture: APIFixture, _ client: any TestClientProtocol, devices: Int = 3) async throws -> String {
        let published = try await client.send(.post, "/v1/editions", headers: admin, body: EditionRoutesTests.file())
        for index in 0..<devices {
            let device = String(repeating: "0", count: 62) + String(format: "%02x", index)
            let registered = try await client.send(.put, "/v1/devices/\(device)", key: fixture.apiKey, body: validRegistration)
            #expect(registered.status == .created)
        }
        return try #require(try published.json()["id"] as? String)
    }

    @Test("POST starts (201 with the plan's counts); again attaches (200, same id); GET shows progress; cancel ends it")
    func startAttachShowCancel() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client)
            let body = #"{"edition": "\#(edition)", "window": 600, "cohorts": 2}"#
            let started = try await client.send(.post, "/v1/broadcasts", headers: Self.admin, body: body)
            #expect(started.status == .created)
            let json = try started.json()
            #expect(json["created"] as? Bool == true)
            let broadcast = try #require(json["broadcast"] as? [String: Any])
            let id = try #require(broadcast["id"] as? String)
            #expect(started.headers[.location] == "/v1/broadcasts/\(id)")
            let waves = try #require(broadcast["waves"] as? [[String: Any]])
            #expect((waves.first?["counts"] as? [String: Any])?["planned"] as? Int == 3)

            let again = try await client.send(.post, "/v1/broadcasts", headers: Self.admin, body: body)
            #expect(again.status == .ok)
            #expect(try again.json()["created"] as? Bool == false)
            #expect((try again.json()["broadcast"] as? [String: Any])?["id"] as? String == id)

            let shown = try await client.send(.get, "/v1/broadcasts/\(id)", headers: Self.admin)
            #expect(shown.status == .ok)
            #expect(try shown.json()["state"] as? String == "running")
            #expect(try shown.json()["publication"] as? String == "morning")

            let cancelled = try await client.send(.post, "/v1/broadcasts/\(id)/cancel", headers: Self.admin)
            #expect(cancelled.status == .ok)
            #expect(try cancelled.json()["state"] as? String == "cancelled")
            let twice = try await client.send(.post, "/v1/broadcasts/\(id)/cancel", headers: Self.admin)
            #expect(twice.status == .conflict)
            #expect(try twice.apiError().field == "state")
        }
    }

    @Test("GET shows a held provider and a paused one while the broadcast runs, as openapi.yaml says; neither once it has ended")
    func heldAndPausedInTheStatus() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client)
            let started = try await client.send(.post, "/v1/broadcasts", headers: Self.admin, body: #"{"edition": "\#(edition)", "window": 600}"#)
            let id = try #require((try started.json()["broadcast"] as? [String: Any])?["id"] as? String)
            let (db, app) = (fixture.db, fixture.app)
            let reason = "3 of the last 3 APNs answers said DeviceTokenNotForTopic"
            #expect(
                try await ProviderHoldRepository(client: db.client).raise(
                    appID: app.id,
                    provider: .apns,
                    answer: "DeviceTokenNotForTopic",
                    likelyCause: "bundle id",
                    reason: reason,
                    by: "worker-a",
                    version: app.credentialsVersion,
                    logger: db.logger
                )
            )
            let since = Date(timeIntervalSince1970: 1_796_000_000.25)
            let pause = ProviderPause(key: .init(appID: app.id, environment: .production, provider: .fcm), since: since)
            for name in ["worker-a", "worker-b"] {
                let status = WorkerStatus(name: name, startedAt: Date(), seenAt: Date(), pauses: name == "worker-a" ? [pause] : [])
                try await WorkerRepository(client: db.client).report(status, logger: db.logger)
            }

            let shown = try await client.send(.get, "/v1/broadcasts/\(id)", headers: Self.admin)
            #expect(shown.status == .ok)
            let held = try #require(try shown.json()["held"] as? [[String: Any]], "the hold is in the JSON, not only in the report")
            #expect(held.count == 1)
            #expect(held.first?["provider"] as? String == "apns")
            #expect(held.first?["reason"] as? String == reason)
            #expect(held.first?["heldDeactivations"] as? Int == 0)
            #expect(held.first?["since"] is String)
            let paused = try #require(try shown.json()["paused"] as? [[String: Any]], "the pause is in the JSON")
            #expect(paused.count == 1)
            #expect(paused.first?["provider"] as? String == "fcm")
            #expect(paused.first?["since"] as? String == "2026-11-30T00:53:20.250Z")
            #expect(paused.first?["workers"] as? Int == 1)
            #expect(paused.first?["ofWorkers"] as? Int == 2)
            // Decoded again (what `paperboy broadcast status --json` readers and the console's clients get), they are kept.
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .custom {
                try Date($0.singleValueContainer().decode(String.self), strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            }
            let decoded = try decoder.decode(BroadcastProgress.self, from: Data(shown.body.readableBytesView))
            #expect(decoded.held?.first?.provider == .apns)
            #expect(decoded.paused?.first?.workers == 1)

            let cancelled = try await client.send(.post, "/v1/broadcasts/\(id)/cancel", headers: Self.admin)
            #expect(cancelled.status == .ok)
            #expect(try cancelled.json()["held"] == nil, "an ended broadcast waits for nothing")
            #expect(try cancelled.json()["paused"] == nil)
        }
    }

    @Test("maxPushesPerDevice is auto by default, takes \"auto\" or an integer, and the progress shows what was asked")
    func maxPushesAutoOrFixed() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client)
            for (field, shown) in [("", "auto"), (#", "maxPushesPerDevice": "auto""#, "auto"), (#", "maxPushesPerDevice": 4"#, "4")] {
                let started = try await client.send(
                    .post,
                    "/v1/broadcasts",
                    headers: Self.admin,
                    body: #"{"edition": "\#(edition)", "window": 600\#(field)}"#
                )
                #expect(started.status == .created, "\(field)")
                let broadcast = try #require(try started.json()["broadcast"] as? [String: Any])
                let options = try #require(broadcast["options"] as? [String: Any])
                #expect(options["maxPushesPerDevice"].map { "\($0)" } == shown, "\(field)")
                let id = try #require(broadcast["id"] as? String)
                #expect(try await client.send(.post, "/v1/broadcasts/\(id)/cancel", headers: Self.admin).status == .ok)
            }
            let refused = try await client.send(
                .post,
                "/v1/broadcasts",
                headers: Self.admin,
                body: #"{"edition": "\#(edition)", "maxPushesPerDevice": "lots"}"#
            )
            #expect(refused.status == .badRequest)
            #expect(try refused.apiError().message.contains("auto"))
        }
    }

    @Test("dry run answers the plan and stores nothing")
    func dryRun() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client, devices: 2)
            let planned = try await client.send(
                .post,
                "/v1/broadcasts",
                headers: Self.admin,
                body: #"{"edition": "\#(edition)", "capacity": 10, "dryRun": true}"#
            )
            #expect(planned.status == .ok)
            let plan = try #require(try planned.json()["plan"] as? [String: Any])
            #expect(plan["rate"] as? Double == 10)
            let list = try await BroadcastRepository(client: fixture.db.client).list(logger: fixture.db.logger)
            #expect(list.isEmpty)
        }
    }

    /// Found by schemathesis (stateful, CI of 2026-12-04): a dry run whose publication shares a content origin answered
    /// the plan with its `note`, which openapi.yaml's `BroadcastDryRun` did not have (`additionalProperties: false`).
    @Test("a dry run on an origin slower than the rate asked answers the plan with its note, every key of it in openapi.yaml")
    func dryRunNote() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client, devices: 2)
            #expect(
                try await client.send(.post, "/v1/origins", headers: Self.admin, body: #"{"name": "content-api", "capacity": 5}"#).status == .created
            )
            let pointed = try await client.send(
                .put,
                "/v1/apps/\(fixture.app.id)/publications/morning/origin",
                headers: Self.admin,
                body: #"{"origin": "content-api"}"#
            )
            #expect(pointed.status == .ok)
            let planned = try await client.send(
                .post,
                "/v1/broadcasts",
                headers: Self.admin,
                body: #"{"edition": "\#(edition)", "capacity": 10, "dryRun": true}"#
            )
            #expect(planned.status == .ok)
            let plan = try #require(try planned.json()["plan"] as? [String: Any])
            #expect(plan["rate"] as? Double == 5, "the origin's capacity, not the rate asked")
            #expect((plan["note"] as? String)?.isEmpty == false, "the plan says why it runs slower: \(plan)")
            // The keys `BroadcastDryRun`'s plan has in the spec: its block up to the next schema.
            let spec = try OpenAPIContractTests.specText()
            let block = try #require(spec.range(of: "    BroadcastDryRun:\n")).upperBound
            let end = spec[block...].range(of: "\n    [A-Za-z]+:\n", options: .regularExpression)?.lowerBound ?? spec.endIndex
            let schema = spec[block..<end]
            for key in plan.keys {
                #expect(schema.contains("\n            \(key):\n"), "the plan's \(key) is not in openapi.yaml's BroadcastDryRun")
            }
        }
    }

    @Test(
        "bad requests answer 4xx naming the field, and store nothing",
        arguments: [
            (#"{"window": 600}"#, 400, "edition"),
            (#"{"edition": "not-a-uuid"}"#, 400, "edition"),
            (#"{"edition": "EDITION", "environment": "staging"}"#, 400, "environment"),
            (#"{"edition": "EDITION", "waveInterval": 60}"#, 400, "waveInterval"),
            (#"{"edition": "EDITION", "cohorts": 0}"#, 400, "cohorts"),
            (#"{"edition": "EDITION", "maxPushesPerDevice": 11}"#, 400, "maxPushesPerDevice"),
            (#"{"edition": "EDITION", "maxPushesPerDevice": 0}"#, 400, "maxPushesPerDevice"),
            (#"{"edition": "EDITION", "maxPushesPerDevice": "many"}"#, 400, "maxPushesPerDevice"),
            (#"{"edition": "EDITION", "maxPushesPerDevice": 2.5}"#, 400, "maxPushesPerDevice"),
            (#"{"edition": "EDITION", "window": 60, "capacity": 10}"#, 400, "capacity"),
            (#"{"edition": "00000000-0000-0000-0000-000000000000"}"#, 404, "edition"),
            // Found by schemathesis: values that overflowed dates (the process died) or made an infinite window.
            (#"{"edition": "EDITION", "jitter": 1e300}"#, 400, "jitter"),
            (#"{"edition": "EDITION", "window": 1e300}"#, 400, "window"),
            (#"{"edition": "EDITION", "window": 5e-324}"#, 400, "window"),
            (#"{"edition": "EDITION", "capacity": 5e-324, "dryRun": true}"#, 400, "capacity"),
            (#"{"edition": "EDITION", "waveInterval": 1e12}"#, 400, "waveInterval"),
            (#"{"edition": "EDITION", "androidPriority": "urgent"}"#, 400, "androidPriority"),
            (#"{"edition": "EDITION", "dormantAfter": -1}"#, 400, "dormantAfter"),
            (#"{"edition": "EDITION", "dormantAfter": 101}"#, 400, "dormantAfter"),
            (#"{"edition": "EDITION", "dormantAfter": "never"}"#, 400, "dormantAfter"),
        ]
    )
    func badRequests(body: String, status: Int, field: String) async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client, devices: 1)
            let response = try await client.send(
                .post,
                "/v1/broadcasts",
                headers: Self.admin,
                body: body.replacingOccurrences(of: "EDITION", with: edition)
            )
            #expect(response.status.code == status)
            #expect(try response.apiError().field == field)
            let list = try await BroadcastRepository(client: fixture.db.client).list(logger: fixture.db.logger)
            #expect(list.isEmpty)
        }
    }

    @Test("broadcast endpoints need the admin token")
    func needsAdmin() async throws {
        try await APIFixture.with { fixture, client in
            let response = try await client.send(.post, "/v1/broadcasts", key: fixture.apiKey, body: "{}")
            #expect(response.status == .unauthorized)
            let shown = try await client.send(.get, "/v1/broadcasts/00000000-0000-0000-0000-000000000000")
            #expect(shown.status == .unauthorized)
        }
    }

    @Test("starting a broadcast of an app whose APNs key file is gone answers 400 naming app and the file; nothing is started")
    func unreadableKeyIsRefused() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await Self.prepare(fixture, client)
            try FileManager.default.removeItem(atPath: fixture.keyFile)
            let refused = try await client.send(.post, "/v1/broadcasts", headers: Self.admin, body: #"{"edition": "\#(edition)", "window": 600}"#)
            #expect(refused.status == .badRequest)
            let error = try refused.apiError()
            #expect(error.field == "app")
            #expect(error.message.contains(fixture.keyFile))
            let stored = try await fixture.db.client.query("SELECT count(*) FROM broadcasts", logger: fixture.db.logger)
            for try await count in stored.decode(Int.self) { #expect(count == 0) }
        }
    }
}
