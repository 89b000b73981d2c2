import Foundation

/// The time the broadcast side runs on (the dispatcher, the scheduler, the demo): the system's, one sped up
/// for the demo, or one a test controls. The one clock abstraction of Paperboy's broadcasts.
public struct BroadcastClock: Sendable {
    /// The current instant.
    public var now: @Sendable () -> Date
    /// Returns at `instant` (at once if it has passed); throws when the task is cancelled.
    public var sleep: @Sendable (_ until: Date) async throws -> Void
    /// Seconds on a clock that never steps (an NTP correction moves `now`, not this), at the same pace as `now`:
    /// for deadlines that must not move, such as how long a record is retried or a lease is trusted.
    public var monotonic: @Sendable () -> TimeInterval

    /// A clock whose monotonic seconds are `now`'s: a test's clock, which only moves when the test moves it.
    public init(now: @escaping @Sendable () -> Date, sleep: @escaping @Sendable (_ until: Date) async throws -> Void) {
        self.init(now: now, sleep: sleep, monotonic: { now().timeIntervalSinceReferenceDate })
    }

    public init(
        now: @escaping @Sendable () -> Date,
        sleep: @escaping @Sendable (_ until: Date) async throws -> Void,
        monotonic: @escaping @Sendable () -> TimeInterval
    ) {
        self.now = now
        self.sleep = sleep
        self.monotonic = monotonic
    }

    /// Wall-clock time; deadlines on the system's monotonic clock.
    public static let system = BroadcastClock(
        now: { Date() },
        sleep: { until in
            let seconds = until.timeIntervalSinceNow
            if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
        },
        monotonic: { ContinuousClock.now.secondsSinceOrigin }
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
            },
            monotonic: { ContinuousClock.now.secondsSinceOrigin * factor }
        )
    }
}

extension ContinuousClock.Instant {
    /// Seconds since an arbitrary origin fixed for the process.
    var secondsSinceOrigin: TimeInterval {
        let (seconds, attoseconds) = BroadcastClock.origin.duration(to: self).components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

extension BroadcastClock {
    fileprivate static let origin = ContinuousClock.now
}
