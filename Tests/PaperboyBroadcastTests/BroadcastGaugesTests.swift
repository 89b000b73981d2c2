import Foundation
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

/// What the metrics read from PostgreSQL once a second (``BroadcastRepository/gauges(now:endedSince:logger:)``): how
/// far a running broadcast lies behind its plan, the devices due that nobody took, its plan's rate, and what an ended
/// one never sent.
@Suite("Broadcast gauges from the database")
struct BroadcastGaugesTests {
    @Test(
        "nobody sending: the broadcast falls behind by the time since its first device fell due, with those devices due; sent on time by a worker: on plan; failed: its unsent wave-1 targets, for an hour"
    )
    func behindDueAndUnsent() async throws {
        let start = Date().addingTimeInterval(-7200)
        try await BroadcastFixture.with(start: start) { fixture in
            try await fixture.register(60)
            let edition = try await fixture.publish(deadline: start.addingTimeInterval(3 * 3600))
            // One cohort, 60 devices over 10 minutes: one every 10 seconds.
            let options = BroadcastOptions(pace: .window(600), cohorts: 1, maxPushesPerDevice: 1, jitter: 1)
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: options,
                origin: "test",
                now: start,
                logger: fixture.logger
            )
            let id = started.broadcast.id
            let first = started.broadcast.start
            func gauges(at now: Date) async throws -> BroadcastGauges? {
                try await fixture.repository.gauges(now: now, endedSince: now.addingTimeInterval(-3600), logger: fixture.logger).first { $0.id == id }
            }

            let before = try #require(try await gauges(at: first.addingTimeInterval(-30)))
            #expect(before.state == .running && before.appID == fixture.app.id)
            #expect(before.planned == 60 && before.sent == 0)
            #expect(before.behindSeconds == 0 && before.due == 0 && before.planRate == 0, "before its start: \(before)")

            // 95 s in and no worker: the first device is 95 s late, ten devices are due, the plan asks for 0.1/s.
            let stalled = try #require(try await gauges(at: first.addingTimeInterval(95)))
            #expect(abs(stalled.behindSeconds - 95) < 1.5, "\(stalled)")
            #expect((9...11).contains(stalled.due), "\(stalled)")
            #expect(abs(stalled.planRate - 0.1) < 0.001, "\(stalled)")

            // A worker on the virtual clock sends each device at its instant: on plan, nothing due.
            fixture.clock.set(first.addingTimeInterval(-1))
            let report = try await fixture.step(at: first.addingTimeInterval(300), fixture.dispatcher())
            #expect(report.sent >= 29)
            let onPlan = try #require(try await gauges(at: first.addingTimeInterval(300)))
            #expect(onPlan.behindSeconds < 2 && onPlan.due <= 1, "\(onPlan)")
            #expect(onPlan.sent == report.sent && onPlan.accepted == report.sent)

            // It fails: the gauges show it ended, with the wave-1 targets it never pushed, for an hour.
            let failedAt = first.addingTimeInterval(301)
            #expect(try await fixture.repository.fail(id: id, reason: "test", now: failedAt, logger: fixture.logger))
            let failed = try #require(try await gauges(at: failedAt.addingTimeInterval(60)))
            #expect(failed.state == .failed)
            #expect(failed.unsent == 60 - report.sent, "\(failed)")
            #expect(failed.behindSeconds == 0 && failed.due == 0 && failed.planRate == 0)
            #expect(try await gauges(at: failedAt.addingTimeInterval(3601)) == nil, "gone an hour after the end")
        }
    }
}
