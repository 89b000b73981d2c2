import Foundation
import PaperboyBroadcast

/// Demo time: the wall clock sped up `factor` times from `origin`, so a morning of waves passes in a
/// minute. The clock itself is ``BroadcastClock/accelerated(by:from:wallStart:)``, the one the dispatcher
/// runs on; this adds the conversion of recorded wall-clock instants back to demo time for the report.
struct DemoClock: Sendable {
    /// The demo instant at `wallStart`.
    let origin: Date
    let wallStart: Date
    let factor: Double
    let clock: BroadcastClock

    init(origin: Date, factor: Double, wallStart: Date = Date()) {
        self.origin = origin
        self.wallStart = wallStart
        self.factor = factor
        self.clock = .accelerated(by: factor, from: origin, wallStart: wallStart)
    }

    /// The demo instant of a wall-clock instant (e.g. a receipt's `received_at`).
    func demoTime(_ wall: Date) -> Date {
        origin.addingTimeInterval(wall.timeIntervalSince(wallStart) * factor)
    }

    func now() -> Date { clock.now() }

    /// Returns at the demo instant `until`.
    func sleep(until: Date) async throws {
        try await clock.sleep(until)
    }
}
