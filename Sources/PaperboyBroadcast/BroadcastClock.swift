import Foundation

/// The time the broadcast side runs on (the dispatcher, the scheduler, the demo): the system's, one sped up
/// for the demo, or one a test controls. The one clock abstraction of Paperboy's broadcasts.
public struct BroadcastClock: Sendable {
    /// The current instant.
    public var now: @Sendable () -> Date
    /// Returns at `instant` (at once if it has passed); throws when the task is cancelled.
    public var sleep: @Sendable (_ until: Date) async throws -> Void

    public init(now: @escaping @Sendable () -> Date, sleep: @escaping @Sendable (_ until: Date) async throws -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// Wall-clock time.
    public static let system = BroadcastClock(
        now: { Date() },
        sleep: { until in
            let seconds = until.timeIntervalSinceNow
            if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
        }
    )

    /// Time that runs `factor` times faster than the wall clock, reading `origin` at the wall instant
    /// `wallStart`: a 30-minute wave interval passes in 30 s at factor 60. For the demo.
    public static func accelerated(by factor: Double, from origin: Date, wallStart: Date = Date()) -> BroadcastClock {
        let now: @Sendable () -> Date = { origin.addingTimeInterval(Date().timeIntervalSince(wallStart) * factor) }
        return BroadcastClock(
            now: now,
            sleep: { until in
                let seconds = until.timeIntervalSince(now()) / factor
                if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
            }
        )
    }
}
