import FCM
import FCMSimulator
import Foundation
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PushTransport
import Testing

/// Broadcasts to a mixed fleet: APNs devices through the APNs simulator, Android and iOS devices registered
/// with FCM through the FCM simulator, one plan.
@Suite("Broadcasts to a mixed fleet (APNs and FCM)")
struct FCMBroadcastTests {
    static func fcmToken(_ index: Int, prefix: String = "and") -> FCMToken {
        try! FCMToken("\(prefix)\(index)inst:APA91b" + String(repeating: "cGFwZXJib3k-_", count: 11))
    }

    @Test(
        "one wave reaches every device through its provider; Android gets the edition as data, dead FCM tokens are deactivated, the counts are split by provider"
    )
    func mixedFleet() async throws {
        let start = Date()
        var faults = FCMSimulator.Faults()
        faults.outcomesByTokenPrefix = [("dead", .unregistered)]
        let simulator = try FCMSimulator(configuration: .init(faults: faults))
        let port = try await simulator.start()
        let accountFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-fcm-\(UUID().uuidString).json").path
        try simulator.makeServiceAccount(projectID: "paperboy-news").write(to: accountFile)
        defer { try? FileManager.default.removeItem(atPath: accountFile) }
        let clients = FCMClients(endpoint: PushEndpoint(host: "127.0.0.1", port: port, usesTLS: false))
        do {
            try await BroadcastFixture.with(start: start) { fixture in
                try await fixture.register(10)
                _ = try await AppRepository(client: fixture.db.client).setFCM(
                    appID: fixture.app.id,
                    try FCMCredentials(serviceAccount: accountFile, projectID: "paperboy-news"),
                    logger: fixture.logger
                )
                let devices = DeviceRepository(client: fixture.db.client)
                var fleet: [(token: FCMToken, platform: DevicePlatform)] = []
                fleet += (0..<6).map { (Self.fcmToken($0), .android) }
                fleet += (0..<2).map { (Self.fcmToken($0, prefix: "ios"), .ios) }
                fleet += (0..<2).map { (Self.fcmToken($0, prefix: "dead"), .android) }
                simulator.markIOS(tokens: fleet.filter { $0.platform == .ios }.map(\.token.text))
                for device in fleet {
                    _ = try await devices.register(
                        appID: fixture.app.id,
                        token: .fcm(device.token),
                        DeviceRegistration(
                            provider: .fcm,
                            platform: device.platform,
                            environment: .production,
                            subscriptions: ["morning"],
                            timeZone: "Asia/Tokyo",
                            tier: .large,
                            autoDownload: true,
                            alertsAuthorized: false
                        ),
                        logger: fixture.logger
                    )
                }
                let deadline = start.addingTimeInterval(6 * 3600)
                let edition = try await fixture.publish(deadline: deadline)
                let started = try await fixture.repository.start(
                    editionID: edition.id,
                    environment: .production,
                    options: BroadcastOptions(pace: .window(600), cohorts: 2, maxPushesPerDevice: 1, alertLastResort: false),
                    origin: "test",
                    now: start,
                    logger: fixture.logger
                )
                let fcmChannels = FCMChannels(clients: clients)
                let report = try await fixture.step(at: started.broadcast.start.addingTimeInterval(10 * 60 + 5), fixture.dispatcher(fcm: fcmChannels))
                #expect(report.sent == 20)
                #expect(report.skipped == 0)

                // APNs devices through APNs, FCM devices through FCM, once each.
                #expect(Set(fixture.accepted().keys) == Set(fixture.tokens.map(\.hex)))
                for device in fleet where !device.token.text.hasPrefix("dead") {
                    #expect(simulator.acceptedCount(for: device.token.text) == 1, "\(device.token.text)")
                }
                // The Android message: the edition's keys as data, normal priority, ttl until the deadline, the publication as collapse key.
                let body = try #require(simulator.ledger(for: Self.fcmToken(0).text).first?.body)
                let message = try #require((try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["message"] as? [String: Any])
                let data = try #require(message["data"] as? [String: String])
                #expect(data["edition"] == edition.id.uuidString.lowercased())
                #expect(data["tier"] == "large")
                #expect(data["manifest"] == "/v1/editions/\(edition.id.uuidString.lowercased())")
                #expect(try JSONDecoder().decode([String].self, from: Data((data["fetch"] ?? "").utf8)).count == 1)
                let android = try #require(message["android"] as? [String: Any])
                #expect(android["priority"] as? String == "normal")
                #expect(android["collapse_key"] as? String == "morning")
                let ttl = try #require((android["ttl"] as? String).flatMap { Int($0.dropLast()) })
                #expect(ttl > 5 * 3600 - 15 * 60 && ttl <= 6 * 3600, "the time left until the deadline, got \(ttl) s")

                // Dead FCM tokens: deactivated; the live ones stay active.
                for device in fleet {
                    let stored = try await devices.find(appID: fixture.app.id, candidates: [.fcm(device.token)], logger: fixture.logger)
                    #expect(stored?.active == !device.token.text.hasPrefix("dead"), "\(device.token.text)")
                }
                let progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
                let counts = progress.waves[0].counts
                #expect(counts.sent == 20)
                #expect(counts.accepted == 18)
                #expect(counts.rejected == ["UNREGISTERED": 2])
                #expect(counts.byProvider["apns"] == .init(sent: 10, accepted: 10))
                #expect(counts.byProvider["fcm"] == .init(sent: 10, accepted: 8, rejected: ["UNREGISTERED": 2]))
            }
        } catch {
            await clients.shutdown()
            try await simulator.shutdown()
            throw error
        }
        await clients.shutdown()
        try await simulator.shutdown()
    }
}
