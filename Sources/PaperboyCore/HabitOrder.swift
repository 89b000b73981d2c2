import Foundation

/// What ordering slots by reading habit does to a plan, before it is sent: how many targets have a known habit,
/// how many of them habitually open inside wave 1's window, where those readers' slots are, and how many of those
/// slots come before their habitual open. The policy, without I/O: from the targets counted by cohort and by the
/// minute of the reader's day their key stands for (``ReadingHabit/minute(ofKey:)``).
///
/// Workers send a cohort's devices in key order, so a device's position in its cohort is the number of the cohort's
/// devices with smaller keys; a key's minute stretch holds every key of that minute, so the position of a minute's
/// devices is known to the minute.
public struct HabitOrder: Sendable, Equatable, Codable {
    /// Targets of one cohort whose keys fall in one minute's stretch.
    public struct Count: Sendable, Equatable, Codable {
        public var cohort: Int
        /// The minute of the reader's day the keys stand for.
        public var minute: Int
        /// Whether the keys are the devices' habits' (the others are their tokens' hashes, spread evenly).
        public var habit: Bool
        public var devices: Int

        public init(cohort: Int, minute: Int, habit: Bool, devices: Int) {
            self.cohort = cohort
            self.minute = minute
            self.habit = habit
            self.devices = devices
        }
    }

    /// Targets in all.
    public var targets: Int
    /// Targets placed by a known habit.
    public var known: Int
    /// Of those, the readers whose habitual first open falls within wave 1's window.
    public var insideWindow: Int
    /// Of those, the ones whose slot comes before their habitual open (to the minute).
    public var slottedBefore: Int
    /// The first and the last slot of the readers inside the window; nil when there are none.
    public var firstSlot: Date?
    public var lastSlot: Date?
    /// The window's first and last send.
    public var windowStart: Date
    public var windowEnd: Date

    /// - Parameters:
    ///   - counts: the targets by cohort, minute and kind of key.
    ///   - plan: wave 1's plan of the same targets (its cohorts' slots and rate).
    ///   - dayStart: the instant the readers' day (03:00 local) begins on the plan's morning: a habit's minute is an
    ///     instant from there.
    public init(counts: [Count], plan: StaggerPlan, dayStart: Date) {
        windowStart = plan.start
        windowEnd = plan.start.addingTimeInterval(plan.window)
        targets = counts.reduce(0) { $0 + $1.devices }
        known = counts.filter(\.habit).reduce(0) { $0 + $1.devices }
        insideWindow = 0
        slottedBefore = 0
        var byCohort: [Int: [Int: (habit: Int, all: Int)]] = [:]
        for count in counts {
            var cell = byCohort[count.cohort, default: [:]][count.minute, default: (0, 0)]
            cell.all += count.devices
            if count.habit { cell.habit += count.devices }
            byCohort[count.cohort, default: [:]][count.minute] = cell
        }
        for cohort in plan.cohorts {
            guard let minutes = byCohort[cohort.index] else { continue }
            var before = 0
            for minute in minutes.keys.sorted() {
                let cell = minutes[minute]!
                defer { before += cell.all }
                guard cell.habit > 0 else { continue }
                let habitual = dayStart.addingTimeInterval(Double(minute) * 60)
                guard habitual >= windowStart, habitual < windowEnd else { continue }
                // The minute's devices take positions before ..< before + all; its habit devices are among them.
                let first = plan.rate > 0 ? cohort.start.addingTimeInterval(Double(before) / plan.rate) : cohort.start
                let last = plan.rate > 0 ? cohort.start.addingTimeInterval(Double(before + cell.all - 1) / plan.rate) : cohort.start
                insideWindow += cell.habit
                if last < habitual { slottedBefore += cell.habit }
                firstSlot = min(firstSlot ?? first, first)
                lastSlot = max(lastSlot ?? last, last)
            }
        }
    }

    /// The instant the readers' day that holds `instant` began, in `timeZone` (03:00 local): where ``init(counts:plan:dayStart:)``
    /// counts minutes from.
    public static func dayStart(of instant: Date, timeZone: TimeZone) -> Date {
        instant.addingTimeInterval(-ReaderDay(instant, timeZone: timeZone).minute * 60)
    }
}
