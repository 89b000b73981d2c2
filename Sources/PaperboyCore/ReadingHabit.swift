import Foundation

/// When a reader usually first opens the app, per day type: all Paperboy keeps of the app's open reports (the
/// reports themselves are not stored). Each estimate is the usual first-open minute of the reader's day
/// (``ReaderDay``, from 03:00 local) with its confidence: how many mornings it was learned from and how far a
/// morning strays from it.
///
/// The update rule, for a morning's first open `x` minutes into the day:
/// - the gain is `1/n` for the n-th morning, so the first mornings are averaged equally, and at least
///   ``minimumGain`` from then on: a moving average over about the last four mornings of the day type (a week of
///   weekdays), so a reader who starts commuting earlier is followed within a week;
/// - from the third morning on, a morning further than ``outlierSpreads`` spreads (at least ``outlierFloor``
///   minutes) from the estimate counts as that far: one late Saturday or a holiday moves the estimate by a
///   bounded step instead of dragging it by hours;
/// - the spread is the same moving average of the (bounded) distance between a morning and the estimate: the
///   mean absolute deviation, in minutes.
///
/// A habit is known, and orders the device's slot, from ``knownAfter`` mornings of a day type on.
public struct ReadingHabit: Sendable, Equatable, Codable {
    /// One day type's estimate.
    public struct Estimate: Sendable, Equatable, Codable {
        /// The usual first-open minute, from the reader's day start (03:00 local).
        public var minute: Double
        /// The mean absolute deviation of a morning from ``minute``, in minutes.
        public var spread: Double
        /// Mornings learned from (capped at ``ReadingHabit/maximumMornings``).
        public var mornings: Int

        public init(minute: Double, spread: Double, mornings: Int) {
            self.minute = minute
            self.spread = spread
            self.mornings = mornings
        }

        /// Whether it orders the device's slot (``ReadingHabit/knownAfter`` mornings or more).
        public var isKnown: Bool { mornings >= ReadingHabit.knownAfter }

        /// The estimate after a morning whose first open came `minute` minutes into the day.
        public func updated(with minute: Double) -> Estimate {
            let n = min(mornings + 1, ReadingHabit.maximumMornings)
            let gain = max(1 / Double(n), ReadingHabit.minimumGain)
            var deviation = minute - self.minute
            if mornings >= 2 {
                let bound = max(ReadingHabit.outlierSpreads * spread, ReadingHabit.outlierFloor)
                deviation = min(max(deviation, -bound), bound)
            }
            let moved = self.minute + gain * deviation
            return Estimate(
                minute: min(max(moved, 0), ReaderDay.minutesPerDay - 1),
                spread: spread + gain * (abs(deviation) - spread),
                mornings: n
            )
        }
    }

    public var weekday: Estimate?
    public var weekend: Estimate?
    /// The reader's day (``ReaderDay/number``) of the last first open learned: later opens that day teach nothing.
    public var lastDay: Int?

    public init(weekday: Estimate? = nil, weekend: Estimate? = nil, lastDay: Int? = nil) {
        self.weekday = weekday
        self.weekend = weekend
        self.lastDay = lastDay
    }

    /// Mornings of a day type before its estimate orders the device's slot.
    public static let knownAfter = 3
    /// The smallest gain once a few mornings are learned.
    public static let minimumGain = 0.25
    /// A morning further than this many spreads from the estimate counts as that far…
    public static let outlierSpreads = 2.5
    /// …but never less than this many minutes.
    public static let outlierFloor = 20.0
    /// The spread a first morning starts with, in minutes: a guess, replaced within a few mornings.
    public static let firstSpread = 30.0
    /// Mornings counted at most (the gain is ``minimumGain`` long before).
    public static let maximumMornings = 1000

    /// The habit after an open at `day`: the day's first open teaches its day type's estimate; any later open
    /// that day (or an open of an earlier day, reported late) changes nothing. Nil when nothing changed.
    public func learning(_ day: ReaderDay) -> ReadingHabit? {
        if let lastDay, day.number <= lastDay { return nil }
        var next = self
        next.lastDay = day.number
        let current = day.isWeekend ? weekend : weekday
        let estimate = current?.updated(with: day.minute) ?? Estimate(minute: day.minute, spread: Self.firstSpread, mornings: 1)
        if day.isWeekend { next.weekend = estimate } else { next.weekday = estimate }
        return next
    }

    /// The estimate that orders the device's slot on a morning of this type: its own when known, else the other
    /// day type's when known (a reader's weekend follows their weekdays better than a hash does), else nil.
    public func ordering(weekend: Bool) -> Estimate? {
        let own = weekend ? self.weekend : weekday
        let other = weekend ? weekday : self.weekend
        if let own, own.isKnown { return own }
        if let other, other.isKnown { return other }
        return nil
    }
}

extension ReaderDay {
    /// Minutes in a reader's day.
    public static let minutesPerDay = 1440.0
}
