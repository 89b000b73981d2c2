import APNs
import Foundation
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

/// A dispatcher without FCM (or an app without a service account) never hands an FCM token to APNs: APNs would
/// refuse it as `BadDeviceToken`, and that answer would deactivate a device that is fine.
@Suite("Broadcasts with FCM devices, without FCM configured")
struct FCMGuardTests {
    @Test("a broadcast pushes only its APNs devices through APNs and records each FCM device as skipped, fcmNotConfigured")
    func fcmDevicesSkipped() async throws {
        // 30 s before a quarter-hour mark: with FCM targets the start moves 2 minutes past it.
        let mark = (Date().timeIntervalSince1970 / 900).rounded(.up) * 900 + 900
        let start = Date(timeIntervalSince1970: mark - 30)
        try await BroadcastFixture.with(start: start) { fixture in
            try await fixture.register(10)
            let devices = DeviceRepository(client: fixture.db.client)
            var fcmTokens: [FCMToken] = []
            for index in 0..<4 {
                let token = try FCMToken("fcm\(index)instance:APA91b" + String(repeating: "Zm9v-_\(index)", count: 20))
                fcmTokens.append(token)
                _ = try await devices.register(
                    appID: fixture.app.id,
                    token: .fcm(token),
                    DeviceRegistration(
                        provider: .fcm,
                        platform: index.isMultiple(of: 2) ? .android : .ios,
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
            let edition = try await fixture.publish(deadline: start.addingTimeInterval(6 * 3600))
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: BroadcastOptions(pace: .window(600), cohorts: 2, maxPushesPerDevice: 1, alertLastResort: false),
                origin: "test",
                now: start,
                logger: fixture.logger
            )
            let plan = try #require(started.plan)
            #expect(plan.cohorts.map(\.devices).reduce(0, +) == 14, "FCM devices are targets of a production broadcast")
            #expect(
                started.broadcast.start.timeIntervalSince1970 >= mark + 120,
                "a broadcast with FCM targets starts 2 minutes past the quarter-hour mark (Firebase's advice), not at \(started.broadcast.start)"
            )

            let report = try await fixture.step(at: started.broadcast.start.addingTimeInterval(10 * 60 + 5), fixture.dispatcher())
            #expect(report.sent == 10)
            #expect(report.skipped == 4)
            // The simulator saw the ten APNs tokens, once each, and nothing else.
            let accepted = fixture.accepted()
            #expect(Set(accepted.keys) == Set(fixture.tokens.map(\.hex)))
            #expect(accepted.values.allSatisfy { $0 == 1 })

            let progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.waves[0].counts.sent == 10)
            #expect(progress.waves[0].counts.accepted == 10)
            #expect(progress.waves[0].counts.skipped == ["fcmNotConfigured": 4])
            #expect(progress.waves[0].counts.rejected.isEmpty)
            // The FCM devices stay active: nothing answered for them.
            for token in fcmTokens {
                #expect(try await devices.find(appID: fixture.app.id, candidates: [.fcm(token)], logger: fixture.logger)?.active == true)
            }
        }
    }
}
