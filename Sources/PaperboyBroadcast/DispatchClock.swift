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
}
