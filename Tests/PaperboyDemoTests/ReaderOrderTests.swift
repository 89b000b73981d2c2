import Foundation
import PaperboyCore
import PaperboyDemo
import PaperboyTesting
import Testing

/// The demo's readers: when they open the app, and the habits two weeks of it teach.
@Suite("Demo readers")
struct ReaderOrderTests {
    @Test("readers' first opens follow their group, wander by the day and come later on weekends; the same every call")
    func readers() {
        let model = FleetModel(seed: 3)
        let readers = (0..<4_000).map(model.reader)
        let early = readers.filter { $0.group == .earlyRiser }
        let commuters = readers.filter { $0.group == .commuter }
        #expect(abs(Double(early.count) / 4_000 - 0.2) < 0.03)
        #expect(abs(Double(commuters.count) / 4_000 - 0.5) < 0.03)
        let earlyMean = early.map(\.usual).reduce(0, +) / Double(early.count)
        #expect(abs(earlyMean - 335) < 5, "05:35 on average: \(earlyMean)")
        #expect(model.reader(17) == FleetModel(seed: 3).reader(17))
        var weekdayTotal = 0.0
        var weekendTotal = 0.0
        var opened = 0
        for index in 0..<4_000 {
            guard let weekday = model.firstOpen(index, day: -3, weekend: false), let weekend = model.firstOpen(index, day: -3, weekend: true) else {
                continue
            }
            opened += 1
            weekdayTotal += weekday
            weekendTotal += weekend
        }
        #expect(abs(Double(opened) / 4_000 - 0.9) < 0.03, "10 % of readers skip a morning")
        #expect(abs((weekendTotal - weekdayTotal) / Double(opened) - 60) < 5)
    }

    @Test("two weeks of mornings make a habit close to the reader's usual open, known on weekdays and weekends")
    func learning() {
        let model = FleetModel(seed: 5)
        let monday = ReaderDay(number: 20_780, minute: 120, isWeekend: false)  // 2026-11-23
        #expect(!ReaderDay.isWeekend(day: monday.number))
        var errors: [Double] = []
        for index in 0..<2_000 {
            let habit = model.learnedHabit(index, days: 14, morning: monday.number)
            guard let weekday = habit.weekday, weekday.isKnown else { continue }
            errors.append(abs(weekday.minute + 180 - model.reader(index).usual))
            #expect((habit.lastDay ?? .max) < monday.number)
        }
        #expect(errors.count > 1_900)
        let sorted = errors.sorted()
        #expect(sorted[sorted.count / 2] < 8, "median error \(sorted[sorted.count / 2]) minutes")
    }
}
