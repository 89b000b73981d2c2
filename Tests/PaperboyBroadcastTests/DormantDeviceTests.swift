import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

/// Dormant devices end to end, over four mornings: PostgreSQL, the dispatcher on a virtual clock and the APNs
/// simulator, whose per-token accept counts are the truth.
@Suite("Dormant devices")
struct DormantDeviceTests {
    static let minute: TimeInterval = 60
    static let day: TimeInterval = 86400

    /// One morning's broadcast of a new edition: wave 1, then (after the devices in `answering` posted their
    /// receipts) a background follow-up and the alert last resort; the broadcast's progress.
    static func morning(
        _ day: Int,
        t0: Date,
        answering: [DeviceToken],
        options: BroadcastOptions,
        fixture: BroadcastFixture
    ) async throws -> (Edition, BroadcastProgress) {
        let now = t0.addingTimeInterval(Double(day) * Self.day)
        fixture.clock.set(now)
        let edition = try await fixture.publish(issueDate: "2026-11-2\(3 + day)", deadline: now.addingTimeInterval(6 * 3600), now: now)
        let started = try await fixture.repository.start(
            editionID: edition.id,
            environment: .production,
            options: options,
            origin: "test",
            now: now,
            logger: fixture.logger
        )
        let dispatcher = fixture.dispatcher()
        let start = started.broadcast.start
        _ = try await fixture.step(at: start.addingTimeInterval(11 * Self.minute), dispatcher)
        for token in answering { try await fixture.receipt(token, edition: edition) }
        for offset in [30, 41, 60, 71, 90] {
            _ = try await fixture.step(at: start.addingTimeInterval(Double(offset) * Self.minute), dispatcher)
        }
        let progress = try #require(try await fixture.repository.progress(id: started.broadcast.id, logger: fixture.logger))
        #expect(progress.state == .completed)
        return (edition, progress)
    }

    @Test(
        "no receipt for 2 editions: from the third, wave 1's push only, neither follow-up nor alert; counted in progress; a receipt or a new registration revives"
    )
    func sparedUntilRevived() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(30, alerts: true, editionAlerts: true)
            let answering = Array(fixture.tokens[0..<10])
            let silent = Array(fixture.tokens[10..<30])
            let options = BroadcastOptions(pace: .window(10 * 60), cohorts: 4, maxPushesPerDevice: 2, alertLastResort: true, dormantAfter: 2)
            func pushes(_ token: DeviceToken, since before: [String: Int]) -> Int {
                (fixture.accepted()[token.hex] ?? 0) - (before[token.hex] ?? 0)
            }

            // Mornings 1 and 2: every silent device gets both background pushes and the alert.
            for day in 0..<2 {
                let before = fixture.accepted()
                let (_, progress) = try await Self.morning(day, t0: t0, answering: answering, options: options, fixture: fixture)
                #expect(progress.waves.map(\.kind) == [.background, .background, .alert])
                #expect(progress.waves[0].counts.dormant == 0)
                for token in silent { #expect(pushes(token, since: before) == 3) }
                for token in answering { #expect(pushes(token, since: before) == 1) }
            }

            // Morning 3: the silent devices answered neither edition: wave 1 only. The others are unchanged.
            var before = fixture.accepted()
            let (third, progress) = try await Self.morning(2, t0: t0, answering: answering, options: options, fixture: fixture)
            #expect(progress.waves[0].counts.dormant == 20)
            #expect(progress.totals.dormant == 20)
            for token in silent { #expect(pushes(token, since: before) == 1) }
            for token in answering { #expect(pushes(token, since: before) == 1) }
            // Nobody was left for a follow-up: the broadcast completed after wave 1.
            #expect(progress.waves.count == 1)

            // A late receipt for morning 3 revives one device; a new registration another.
            try await fixture.receipt(silent[0], edition: third)
            _ = try await DeviceRepository(client: fixture.db.client).register(
                appID: fixture.app.id,
                token: silent[1],
                DeviceRegistration(
                    environment: .production,
                    subscriptions: ["morning"],
                    timeZone: "Asia/Tokyo",
                    tier: .large,
                    autoDownload: true,
                    alertsAuthorized: true,
                    editionAlerts: true
                ),
                logger: fixture.logger
            )

            // Morning 4: those two get follow-ups again; the other 18 stay dormant.
            before = fixture.accepted()
            let (_, fourth) = try await Self.morning(3, t0: t0, answering: answering, options: options, fixture: fixture)
            #expect(fourth.waves[0].counts.dormant == 18)
            #expect(fourth.waves.map(\.counts.planned) == [30, 2, 2])
            for token in silent[0..<2] { #expect(pushes(token, since: before) == 3) }
            for token in silent[2...] { #expect(pushes(token, since: before) == 1) }
        }
    }

    @Test("dormantAfter 0 spares nobody: a device silent for four editions still gets every follow-up")
    func zeroSparesNobody() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            try await fixture.register(5)
            let options = BroadcastOptions(pace: .window(10 * 60), cohorts: 1, maxPushesPerDevice: 2, dormantAfter: 0)
            for day in 0..<4 {
                let (_, progress) = try await Self.morning(day, t0: t0, answering: [], options: options, fixture: fixture)
                #expect(progress.waves.map(\.counts.planned) == [5, 5])
                #expect(progress.totals.dormant == 0)
            }
            #expect(fixture.tokens.allSatisfy { fixture.accepted()[$0.hex] == 8 })
        }
    }
}
