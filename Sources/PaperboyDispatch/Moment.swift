import Foundation

/// An instant as a worker's machines see it: the wall clock's date, for plans and deadlines shared with other
/// workers and the database, and the seconds of a clock that never steps, for what must not move when NTP corrects
/// the wall clock (how long a lease is trusted, a backoff, how long a record is retried).
public struct Moment: Sendable, Equatable {
    public var now: Date
    public var monotonic: TimeInterval

    public init(now: Date, monotonic: TimeInterval) {
        self.now = now
        self.monotonic = monotonic
    }

    /// An instant on a clock whose monotonic seconds are its dates' (tests and the simulation).
    public init(_ now: Date) {
        self.init(now: now, monotonic: now.timeIntervalSinceReferenceDate)
    }

    /// The moment `seconds` later on both clocks.
    public func adding(_ seconds: TimeInterval) -> Moment {
        Moment(now: now.addingTimeInterval(seconds), monotonic: monotonic + seconds)
    }
}

/// How long to wait before trying a failed database call again: `first`, then twice as long each time up to `limit`.
public struct RetryBackoff: Sendable, Equatable {
    public var first: TimeInterval = 0.25
    public var limit: TimeInterval = 5

    public init(first: TimeInterval = 0.25, limit: TimeInterval = 5) {
        self.first = first
        self.limit = limit
    }

    /// The wait after `failures` failures in a row (1 for the first).
    public func delay(after failures: Int) -> TimeInterval {
        min(limit, first * pow(2, Double(max(0, failures - 1))))
    }
}
