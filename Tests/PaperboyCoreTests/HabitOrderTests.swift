import Foundation
import PaperboyCore
import Testing

@Suite("Habit order preview")
struct HabitOrderTests {
    static let start = Date(timeIntervalSince1970: 1_795_377_601)

    @Test("readers whose habit falls in the window, where their slots are, and whether those come before their habitual open")
    func preview() throws {
        let plan = try StaggerPlan(cohortCounts: [300, 200], pace: .window(500), start: Self.start)  // 1 send a second
        let dayStart = Self.start.addingTimeInterval(-120 * 60)  // the window starts at minute 120 of the readers' day
        let counts = [
            HabitOrder.Count(cohort: 0, minute: 50, habit: false, devices: 100),  // hashed keys before them
            HabitOrder.Count(cohort: 0, minute: 123, habit: true, devices: 100),  // habit at +180 s, slots +100…+199 s
            HabitOrder.Count(cohort: 0, minute: 124, habit: true, devices: 100),  // habit at +240 s, slots +200…+299 s
            HabitOrder.Count(cohort: 1, minute: 400, habit: true, devices: 200),  // habit long after the window
        ]
        let order = HabitOrder(counts: counts, plan: plan, dayStart: dayStart)
        #expect(order.targets == 500)
        #expect(order.known == 400)
        #expect(order.insideWindow == 200)
        #expect(order.slottedBefore == 0, "both minutes' last slots come after their minute starts")
        #expect(order.firstSlot == Self.start.addingTimeInterval(100))
        #expect(order.lastSlot == Self.start.addingTimeInterval(299))

        let earlier = HabitOrder(
            counts: Array(counts.dropFirst()),
            plan: try StaggerPlan(cohortCounts: [200, 200], pace: .window(400), start: Self.start),
            dayStart: dayStart
        )
        #expect(earlier.insideWindow == 200)
        #expect(earlier.slottedBefore == 200, "minute 123's readers now go out in +0…+99 s, before +180 s; minute 124's by +199 s, before +240 s")
    }

    @Test("the readers' day starts at 03:00 local time")
    func dayStart() {
        let five = ISO8601DateFormatter().date(from: "2026-11-23T05:00:01+09:00")!
        let start = HabitOrder.dayStart(of: five, timeZone: TimeZone(identifier: "Asia/Tokyo")!)
        #expect(start == ISO8601DateFormatter().date(from: "2026-11-23T03:00:00+09:00")!)
    }
}
