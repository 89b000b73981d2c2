import APNs
import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@testable import PaperboyBroadcast

/// The NSE path: in place of the last background follow-up, an alert with `mutable-content: 1` to devices
/// whose reader asked to be told when the edition is ready, for the app's Notification Service Extension.
@Suite("Ready alerts")
struct ReadyAlertTests {
    static let minute: TimeInterval = 60

    @Test("the last background follow-up is the wave after which no background wave fits, by the wave policy's own rule")
    func lastFollowUp() {
        let start = Date(timeIntervalSince1970: 0)
        let deadline = start.addingTimeInterval(7200)
        var options = BroadcastOptions(waveInterval: 1200, maxPushesPerDevice: .auto)
        // auto, 20 minutes apart, 2 hours: waves at 0, 20, …, 100 minutes; the sixth is the last.
        #expect(!options.isLastBackgroundFollowUp(wave: 1, start: start, deadline: deadline))
        #expect(!options.isLastBackgroundFollowUp(wave: 5, start: start.addingTimeInterval(4800), deadline: deadline))
        #expect(options.isLastBackgroundFollowUp(wave: 6, start: start.addingTimeInterval(6000), deadline: deadline))
        // With the alert last resort, the alert takes the last slot: the fifth is the last background one.
        options.alertLastResort = true
        #expect(options.isLastBackgroundFollowUp(wave: 5, start: start.addingTimeInterval(4800), deadline: deadline))
        // A fixed cap: wave 2 of 2, wherever the deadline is; wave 1 is never a follow-up.
        options = BroadcastOptions(waveInterval: 1800, maxPushesPerDevice: 2)
        #expect(options.isLastBackgroundFollowUp(wave: 2, start: start.addingTimeInterval(1800), deadline: start.addingTimeInterval(86400)))
        #expect(!BroadcastOptions(maxPushesPerDevice: 1).isLastBackgroundFollowUp(wave: 1, start: start, deadline: deadline))
    }

    @Test("the rule is per device: a push less than an interval before the deadline is its device's last, in whichever wave it falls")
    func lastFollowUpPerDevice() {
        let start = Date(timeIntervalSince1970: 0)
        let deadline = start.addingTimeInterval(7200)
        let options = BroadcastOptions(waveInterval: 1200, maxPushesPerDevice: .auto)
        #expect(options.lastBackgroundFollowUp(wave: 1, deadline: deadline) == nil)
        #expect(options.lastBackgroundFollowUp(wave: 5, deadline: deadline) == start.addingTimeInterval(6000))
        // Wave 5 starts at 80 minutes: a device sent at 99 minutes has its sixth slot at 119, one sent at 100
        // minutes (late in wave 1's window) would have it at 120, the deadline: wave 5 is its last.
        #expect(!options.isLastBackgroundFollowUp(wave: 5, start: start.addingTimeInterval(99 * 60), deadline: deadline))
        #expect(options.isLastBackgroundFollowUp(wave: 5, start: start.addingTimeInterval(100 * 60), deadline: deadline))
    }

    @Test("the ready alert: mutable-content alert, the small tier's bundles to fetch, the extension's limits, the wave")
    func payload() throws {
        let edition = Edition(
            id: UUID(),
            appID: 1,
            manifest: EditionManifest(
                publication: "morning",
                issueDate: "2026-11-23",
                deadline: "2026-11-23T09:00:00+09:00",
                tiers: [
                    "small": .init(bundles: [
                        .init(url: "https://cdn.example.com/s.zip", bytes: 8_000_000, sha256: String(repeating: "0f", count: 32))
                    ]),
                    "large": .init(bundles: [
                        .init(url: "https://cdn.example.com/l.zip", bytes: 50_000_000, sha256: String(repeating: "0f", count: 32))
                    ]),
                ],
                pages: [.init(number: 1, title: nil)]
            ),
            deadline: Date().addingTimeInterval(3600),
            publishedAt: Date()
        )
        let notification = try APNsService.readyNotification(for: edition, wave: 4)
        #expect(notification.pushType == .alert)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(notification.payload)) as? [String: Any])
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["alert"] != nil)
        #expect(payload["tier"] as? String == "small")
        #expect(payload["fetch"] as? [String] == ["https://cdn.example.com/s.zip"])
        #expect(payload["wave"] as? Int == 4)
        let limits = try #require(payload["extension"] as? [String: Any])
        #expect(limits["seconds"] as? Int == 30 && limits["megabytes"] as? Int == 24)
    }

    @Test(
        "in the last follow-up, devices whose reader asked and that allow alerts get the ready alert, recorded as no background push; the others a background push; the last resort only to readers who asked for edition alerts"
    )
    func inPlaceOfTheLastFollowUp() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(5, alerts: true, notifyWhenReady: true)
            try await fixture.register(5, offset: 100, alerts: false, notifyWhenReady: true)  // alerts not allowed: no alert
            try await fixture.register(5, offset: 200, alerts: true, editionAlerts: true)
            try await fixture.register(5, offset: 300, alerts: true)  // alerts allowed for something else: no edition alert
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(6 * 3600))
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: BroadcastOptions(pace: .window(10 * 60), cohorts: 1, maxPushesPerDevice: 2, alertLastResort: true),
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            let dispatcher = fixture.dispatcher()
            let start = started.broadcast.start
            for offset in [11, 30, 41, 60, 71, 90] {
                _ = try await fixture.step(at: start.addingTimeInterval(Double(offset) * Self.minute), dispatcher)
            }
            let patterns = try await Self.patterns(started.broadcast.id, fixture: fixture)
            // Asked and allowed: background, then the ready alert, and no alert last resort (it had an alert).
            // Asked but alerts not allowed: two background pushes. Allowed, asked for edition alerts but not the
            // ready alert: two background pushes and the last resort. Allowed, asked for neither (the reader
            // allowed the app's alerts for something else): two background pushes and no alert (App Review 4.5.4).
            #expect(patterns == Array(repeating: "1b 2a", count: 5) + Array(repeating: "1b 2b", count: 10) + Array(repeating: "1b 2b 3a", count: 5))
            let progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
            #expect(progress.waves.map(\.kind) == [.background, .background, .alert])
            #expect(progress.waves[1].counts.accepted == 20)
            #expect(progress.waves.count == 3 && progress.waves[2].counts.planned == 5)
        }
    }

    @Test(
        "a device whose next slot would fall at or past the deadline gets the ready alert in its last background slot, though the wave is not the last"
    )
    func inPlaceOfEachDevicesLastFollowUp() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(10, alerts: true, notifyWhenReady: true)
            // Waves 20 minutes apart with the deadline 45 minutes after the start: wave 3 starts at 40 minutes.
            // Wave 1 sends the ten devices a minute apart; each keeps its slot in waves 2 and 3. Those sent from
            // 5 minutes on have no slot before the deadline in wave 3: wave 2 is their last.
            let edition = try await fixture.publish(deadline: t0.addingTimeInterval(45 * Self.minute))
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: BroadcastOptions(pace: .window(10 * 60), cohorts: 1, waveInterval: 20 * 60, maxPushesPerDevice: .auto, jitter: 1),
                origin: "test",
                now: t0,
                logger: fixture.logger
            )
            let dispatcher = fixture.dispatcher()
            let start = started.broadcast.start
            #expect(start.timeIntervalSince(t0) < 3, "the jitter moves the start by a second or two")
            for offset in [11, 20, 31, 40, 51] {
                _ = try await fixture.step(at: start.addingTimeInterval(Double(offset) * Self.minute), dispatcher)
            }
            let patterns = try await Self.patterns(started.broadcast.id, fixture: fixture)
            #expect(patterns == Array(repeating: "1b 2a", count: 5) + Array(repeating: "1b 2b 3a", count: 5))
        }
    }

    /// Per device, what it got wave by wave ("1b 2a": a background push in wave 1, an alert in wave 2), sorted.
    static func patterns(_ broadcastID: UUID, fixture: BroadcastFixture) async throws -> [String] {
        var sent: [Int64: [String]] = [:]
        let rows = try await fixture.db.client.query(
            "SELECT device_id, wave, background FROM deliveries WHERE broadcast_id = \(broadcastID) ORDER BY device_id, wave",
            logger: fixture.logger
        )
        for try await (device, wave, background) in rows.decode((Int64, Int16, Bool).self) {
            sent[device, default: []].append("\(wave)\(background ? "b" : "a")")
        }
        return sent.values.map { $0.joined(separator: " ") }.sorted()
    }
}
