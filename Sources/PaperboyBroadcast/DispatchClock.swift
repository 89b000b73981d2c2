import Foundation

/// The time a dispatcher runs on: the system's, or one a test or the demo controls.
public struct DispatchClock: Sendable {
    /// The current instant.
    public var now: @Sendable () -> Date
    /// Returns at `instant` (at once if it has passed); throws when the task is cancelled.
    public var sleep: @Sendable (_ until: Date) async throws -> Void

    public init(now: @escaping @Sendable () -> Date, sleep: @escaping @Sendable (_ until: Date) async throws -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// Wall-clock time.
    public static let system = DispatchClock(
        now: { Date() },
        sleep: { until in
            let seconds = until.timeIntervalSinceNow
            if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
        }
    )

    /// Time that runs `factor` times faster than the wall clock from `origin` on: a 30-minute wave interval
    /// passes in 18 s at factor 100. For the demo.
    public static func accelerated(by factor: Double, from origin: Date = Date()) -> DispatchClock {
        let wallStart = Date()
        return DispatchClock(
            now: { origin.addingTimeInterval(Date().timeIntervalSince(wallStart) * factor) },
            sleep: { until in
                let virtualNow = origin.addingTimeInterval(Date().timeIntervalSince(wallStart) * factor)
                let seconds = until.timeIntervalSince(virtualNow) / factor
                if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
            }
        )
    }
}
