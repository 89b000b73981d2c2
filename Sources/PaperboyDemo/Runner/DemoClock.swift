import Foundation
import PaperboyBroadcast

/// Demo time: the wall clock sped up `factor` times from `origin`, so a morning of waves passes in a
/// minute. Everything the demo records is converted back to demo time before it is reported.
struct DemoClock: Sendable {
    /// The demo instant at `wallStart`.
    let origin: Date
    let wallStart: Date
    let factor: Double

    init(origin: Date, factor: Double, wallStart: Date = Date()) {
        self.origin = origin
        self.wallStart = wallStart
        self.factor = factor
    }

    /// The demo instant of a wall-clock instant (e.g. a receipt's `received_at`).
    func demoTime(_ wall: Date) -> Date {
        origin.addingTimeInterval(wall.timeIntervalSince(wallStart) * factor)
    }

    func now() -> Date { demoTime(Date()) }

    /// Returns at the demo instant `until`.
    func sleep(until: Date) async throws {
        let seconds = until.timeIntervalSince(now()) / factor
        if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
    }

    var dispatchClock: DispatchClock {
        DispatchClock(now: { self.now() }, sleep: { until in try await self.sleep(until: until) })
    }
}
