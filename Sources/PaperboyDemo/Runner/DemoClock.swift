import Foundation
import PaperboyBroadcast
import PaperboyDispatch
import Synchronization

/// Demo time: the wall clock sped up `factor` times from `origin`, so a morning of waves passes in a
/// minute. ``speedUp(to:)`` raises the factor from now on, for the tail of a run when the broadcast has
/// finished and only devices waiting for a Doze maintenance window remain (so that an Android device
/// that wakes an hour later does not keep a blast's run going for ten wall-clock minutes). ``clock`` is
/// the ``BroadcastClock`` the dispatcher runs on; ``demoTime(_:)`` converts recorded wall-clock instants
/// back to demo time for the report, across speed changes.
final class DemoClock: Sendable {
    /// From `wall` on, demo time is `demo + (t − wall) × factor`.
    private struct Segment {
        var wall: Date
        var demo: Date
        var factor: Double
    }

    /// The demo instant at the start.
    let origin: Date
    private let segments: Mutex<[Segment]>

    init(origin: Date, factor: Double, wallStart: Date = Date()) {
        self.origin = origin
        self.segments = Mutex([Segment(wall: wallStart, demo: origin, factor: factor)])
    }

    /// The factor now.
    var factor: Double { segments.withLock { $0.last!.factor } }

    /// The clock for the dispatcher.
    var clock: BroadcastClock {
        BroadcastClock(now: { [self] in now() }, sleep: { [self] until in try await sleep(until: until) })
    }

    /// The demo instant of a wall-clock instant (e.g. a receipt's `received_at`).
    func demoTime(_ wall: Date) -> Date {
        segments.withLock { segments in
            let segment = segments.last { $0.wall <= wall } ?? segments[0]
            return segment.demo.addingTimeInterval(wall.timeIntervalSince(segment.wall) * segment.factor)
        }
    }

    func now() -> Date { demoTime(Date()) }

    /// Runs demo time `factor` times faster than the wall clock from now on (never slower than now).
    func speedUp(to factor: Double) {
        let wall = Date()
        let demo = demoTime(wall)
        segments.withLock { segments in
            guard factor > segments.last!.factor else { return }
            segments.append(Segment(wall: wall, demo: demo, factor: factor))
        }
    }

    /// Returns at the demo instant `until`. Long waits wake every ``recheck`` to notice a speed-up: often
    /// enough that a speed-up takes effect within seconds, rarely enough that tens of thousands of waiting
    /// devices do not keep the CPU busy.
    func sleep(until: Date) async throws {
        while true {
            let seconds = until.timeIntervalSince(now()) / factor
            guard seconds > 0 else { return }
            try await Task.sleep(for: .seconds(min(seconds, Self.recheck)))
        }
    }

    /// The longest wall-clock sleep before a waiting device looks at the factor again, in seconds.
    static let recheck: TimeInterval = 5
}
