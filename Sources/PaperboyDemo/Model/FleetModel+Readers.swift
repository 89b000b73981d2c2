import Foundation
import PaperboyCore

/// The readers behind the devices: when each first opens the app in the morning (``FleetParameters`` says how, in
/// its reader fields). Every draw is the reader's own and the calendar day's, never the morning's push draws, so a
/// reader opens at the same minute under every strategy and the learning days are the same for all of them.
extension FleetModel {
    /// The draws that belong to the reader (their ordinal is a calendar day, not a push).
    static let readerPurposes: Set<Purpose> = [
        .readerGroup, .readerHabit, .readerHabitAngle, .readerDaily, .readerDailyAngle, .readerRegularity, .readerWeekend,
        .readerWeekendAngle, .readerSkip,
    ]

    /// When a reader first opens the app in the morning, usually.
    public enum ReaderGroup: String, Sendable, Codable, CaseIterable {
        case earlyRiser, commuter, lateReader
    }

    /// A device's reader, as it is for the whole run.
    public struct Reader: Sendable, Equatable {
        public var group: ReaderGroup
        /// The usual first open on a weekday, in minutes after local midnight.
        public var usual: Double
        /// σ of a morning's first open around ``usual``, in minutes.
        public var dailySpread: Double
        /// How much later the first open comes on Saturdays and Sundays, in minutes.
        public var weekendShift: Double
    }

    /// Device `index`'s reader.
    public func reader(_ index: Int) -> Reader {
        let p = parameters
        let draw = uniform(index, .readerGroup, 0)
        let group: ReaderGroup =
            draw < p.earlyRiserShare ? .earlyRiser : draw < p.earlyRiserShare + p.commuterShare ? .commuter : .lateReader
        let center =
            switch group {
            case .earlyRiser: p.earlyRiserOpen.minutes
            case .commuter: p.commuterOpen.minutes
            case .lateReader: p.lateReaderOpen.minutes
            }
        return Reader(
            group: group,
            usual: Double(center) + p.habitSpread * normal(index, .readerHabit, 0),
            dailySpread: p.dailySpread * (0.5 + uniform(index, .readerRegularity, 0)),
            weekendShift: p.weekendShift + p.weekendShiftSpread * normal(index, .readerWeekend, 0)
        )
    }

    /// Device `index`'s first open of the morning `day` days after the demo's morning (negative: the mornings the
    /// habit is learned from), in minutes after local midnight, between 03:01 and 23:59; nil when the reader does not
    /// open the app that morning.
    public func firstOpen(_ index: Int, day: Int, weekend: Bool) -> Double? {
        let ordinal = day + 1_000
        guard uniform(index, .readerSkip, ordinal) >= parameters.skipMorning else { return nil }
        let reader = reader(index)
        let minute = reader.usual + (weekend ? reader.weekendShift : 0) + reader.dailySpread * normal(index, .readerDaily, ordinal)
        return min(max(minute, 181), 1439)
    }

    /// A standard normal draw (Box–Muller from the purpose's draw and its angle's).
    func normal(_ index: Int, _ purpose: Purpose, _ ordinal: Int) -> Double {
        let angle: Purpose =
            switch purpose {
            case .readerHabit: .readerHabitAngle
            case .readerDaily: .readerDailyAngle
            case .readerWeekend: .readerWeekendAngle
            default: .delayAngle
            }
        let u1 = 1 - uniform(index, purpose, ordinal)
        let u2 = uniform(index, angle, ordinal)
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}

extension FleetModel {
    /// The habit Paperboy learns from device `index`'s first opens on the `days` mornings before the morning whose
    /// reader's day is `morning` (``ReaderDay/number``): the open reports of those mornings folded through
    /// ``ReadingHabit``, as the server folds them one report at a time.
    public func learnedHabit(_ index: Int, days: Int, morning: Int) -> ReadingHabit {
        var habit = ReadingHabit()
        for offset in stride(from: -days, through: -1, by: 1) {
            let number = morning + offset
            let weekend = ReaderDay.isWeekend(day: number)
            guard let open = firstOpen(index, day: offset, weekend: weekend) else { continue }
            let day = ReaderDay(number: number, minute: open - Double(ReaderDay.startHour * 60), isWeekend: weekend)
            habit = habit.learning(day) ?? habit
        }
        return habit
    }
}
