import Foundation
import PaperboyCore
import Testing

@Suite("Reading habits")
struct ReadingHabitTests {
    static let tokyo = TimeZone(identifier: "Asia/Tokyo")!
    /// 2026-11-23, a Monday, 05:00 in Tokyo.
    static let mondayFive = ISO8601DateFormatter().date(from: "2026-11-23T05:00:00+09:00")!

    static func day(_ number: Int, minute: Double) -> ReaderDay {
        ReaderDay(number: number, minute: minute, isWeekend: ReaderDay.isWeekend(day: number))
    }

    @Test("a reader's day starts at 03:00 local: a late night belongs to the day before, and weekends follow the local date")
    func readerDay() {
        let monday = ReaderDay(Self.mondayFive.addingTimeInterval(30 * 60), timeZone: Self.tokyo)
        #expect(monday.minute == 150)
        #expect(!monday.isWeekend)
        let lateSunday = ReaderDay(Self.mondayFive.addingTimeInterval(-4 * 3600), timeZone: Self.tokyo)  // Monday 01:00
        #expect(lateSunday.number == monday.number - 1)
        #expect(lateSunday.minute == 22 * 60)
        #expect(lateSunday.isWeekend, "Monday 01:00 is still Sunday's reading")
        #expect(!lateSunday.nextIsWeekend)
        let sameInstantInLondon = ReaderDay(Self.mondayFive, timeZone: TimeZone(identifier: "Europe/London")!)  // Sunday 20:00
        #expect(sameInstantInLondon.isWeekend)
        #expect(sameInstantInLondon.minute == 17 * 60)
        #expect(ReaderDay.clockTime(minute: 150) == "05:30")
        #expect(ReaderDay.clockTime(minute: 1380) == "02:00")
    }

    @Test("the first open of a day teaches its day type; later opens that day, or of an earlier day, teach nothing")
    func firstOpenOnly() throws {
        let first = try #require(ReadingHabit().learning(Self.day(20_410, minute: 200)))
        #expect(first.weekday == .init(minute: 200, spread: ReadingHabit.firstSpread, mornings: 1))
        #expect(first.weekend == nil)
        #expect(first.learning(Self.day(20_410, minute: 400)) == nil)
        #expect(first.learning(Self.day(20_409, minute: 100)) == nil)
        let weekend = try #require(first.learning(Self.day(20_414, minute: 300)))  // a Saturday
        #expect(ReaderDay.isWeekend(day: 20_414))
        #expect(weekend.weekend?.minute == 300)
        #expect(weekend.weekday == first.weekday)
    }

    @Test("the first mornings are averaged equally; an odd morning moves a learned habit by a bounded step")
    func averageAndOutliers() {
        var estimate = ReadingHabit.Estimate(minute: 200, spread: ReadingHabit.firstSpread, mornings: 1)
        estimate = estimate.updated(with: 210)
        #expect(estimate.minute == 205)
        estimate = estimate.updated(with: 215)
        #expect(abs(estimate.minute - 625.0 / 3) < 1e-9, "the mean of 200, 210 and 215")
        for minute in [208.0, 212, 209, 211, 210, 210] { estimate = estimate.updated(with: minute) }
        let settled = estimate
        #expect(settled.spread < 10)
        // A holiday lie-in, four hours late: counted as at most max(2.5 spreads, 20 min) away.
        let afterHoliday = settled.updated(with: 450)
        #expect(afterHoliday.minute - settled.minute <= ReadingHabit.minimumGain * max(2.5 * settled.spread, 20) + 1e-9)
        #expect(afterHoliday.minute - settled.minute > 0)
    }

    @Test("a reader who starts commuting 30 minutes earlier is followed: most of the way in a week of weekdays, all of it in two")
    func followsAMove() {
        var estimate = ReadingHabit.Estimate(minute: 240, spread: ReadingHabit.firstSpread, mornings: 1)
        for _ in 0..<10 { estimate = estimate.updated(with: 240) }
        for _ in 0..<5 { estimate = estimate.updated(with: 210) }
        #expect(abs(estimate.minute - 210) < 10, "after 5 mornings at the new time: \(estimate.minute)")
        for _ in 0..<5 { estimate = estimate.updated(with: 210) }
        #expect(abs(estimate.minute - 210) < 3, "after 10 mornings at the new time: \(estimate.minute)")
    }

    @Test("a habit orders from 3 mornings on; a weekend without its own falls back to the weekdays'")
    func ordering() {
        let weekdays = ReadingHabit.Estimate(minute: 200, spread: 10, mornings: 5)
        let young = ReadingHabit.Estimate(minute: 300, spread: 30, mornings: 2)
        let habit = ReadingHabit(weekday: weekdays, weekend: young, lastDay: 1)
        #expect(habit.ordering(weekend: false) == weekdays)
        #expect(habit.ordering(weekend: true) == weekdays, "two weekend mornings are not yet a habit")
        #expect(ReadingHabit(weekday: young).ordering(weekend: false) == nil)
        let grown = ReadingHabit(weekday: weekdays, weekend: .init(minute: 300, spread: 20, mornings: 3))
        #expect(grown.ordering(weekend: true)?.minute == 300)
    }

    @Test("a habit's key lies in its minute's stretch, in minute order, and readers of one minute keep distinct keys in hash order")
    func keys() {
        let tokens = (0..<1_000).map { DeviceToken(bytes: Array(repeating: 7, count: 28) + withUnsafeBytes(of: UInt32($0).bigEndian, Array.init)) }
        for minute in [0.0, 1.5, 200, 1439.9, 2000, -5] {
            let keys = tokens.map { ReadingHabit.cohortKey(minute: minute, tokenKey: $0.cohortKey) }
            let expected = Int(min(max(minute, 0), 1439))
            #expect(keys.allSatisfy { ReadingHabit.minute(ofKey: $0) == expected })
            #expect(Set(keys).count == keys.count)
            let byKey = tokens.indices.sorted { keys[$0] < keys[$1] }
            let byHash = tokens.indices.sorted {
                tokens[$0].cohortKey % ReadingHabit.keysPerMinute < tokens[$1].cohortKey % ReadingHabit.keysPerMinute
            }
            #expect(byKey == byHash)
        }
        #expect(ReadingHabit.cohortKey(minute: 100, tokenKey: .max) < ReadingHabit.cohortKey(minute: 101, tokenKey: 0))
        #expect(ReadingHabit.minute(ofKey: .max) == 1439)
    }

    @Test("a key within 5 minutes of the habit stays (no row rewritten for a drift of minutes); a farther one moves")
    func keyTolerance() {
        let habit = ReadingHabit(weekday: .init(minute: 200.4, spread: 10, mornings: 6), lastDay: 20_410)  // a Tuesday
        let tuesday = ReaderDay(number: 20_410, minute: 0, isWeekend: false)
        #expect(!tuesday.nextIsWeekend)
        let near = ReadingHabit.cohortKey(minute: 204, tokenKey: 99)
        #expect(habit.cohortKey(after: tuesday, tokenKey: 7, current: near) == near)
        let far = ReadingHabit.cohortKey(minute: 206, tokenKey: 99)
        #expect(habit.cohortKey(after: tuesday, tokenKey: 7, current: far) == ReadingHabit.cohortKey(minute: 200.4, tokenKey: 7))
        #expect(ReadingHabit(weekday: .init(minute: 200, spread: 10, mornings: 2)).cohortKey(after: tuesday, tokenKey: 7, current: far) == nil)
        // A Friday's report moves the key to the weekend habit.
        let friday = ReaderDay(number: 20_413, minute: 0, isWeekend: false)
        #expect(friday.nextIsWeekend)
        var both = habit
        both.weekend = .init(minute: 280, spread: 20, mornings: 4)
        #expect(both.cohortKey(after: friday, tokenKey: 7, current: near) == ReadingHabit.cohortKey(minute: 280, tokenKey: 7))
    }

    @Test("ordered by habit, a plan keeps the same slots as in hash order (the same sends per second), and earlier readers get earlier slots")
    func slotsByHabit() throws {
        // 20,000 readers: 60 % with a known habit between 05:00 and 09:00 local (minutes 120–360 of the reader's day).
        let devices = 20_000
        var keys: [UInt32] = []
        var habits: [Double?] = []
        for index in 0..<devices {
            let token = DeviceToken(bytes: Array(repeating: 3, count: 28) + withUnsafeBytes(of: UInt32(index).bigEndian, Array.init))
            let minute: Double? = index % 10 < 6 ? 120 + Double((index &* 7919) % 240) : nil
            habits.append(minute)
            keys.append(minute.map { ReadingHabit.cohortKey(minute: $0, tokenKey: token.cohortKey) } ?? token.cohortKey)
        }
        let hashKeys = (0..<devices).map {
            DeviceToken(bytes: Array(repeating: 3, count: 28) + withUnsafeBytes(of: UInt32($0).bigEndian, Array.init)).cohortKey
        }
        func counts(_ keys: [UInt32]) -> [Int] {
            var counts = Array(repeating: 0, count: 16)
            for key in keys { counts[DeviceToken.cohort(ofKey: key, count: 16)] += 1 }
            return counts
        }
        let start = Date(timeIntervalSince1970: 1_795_377_601)
        let habitPlan = try StaggerPlan(cohortCounts: counts(keys), pace: .window(1800), start: start)
        let hashPlan = try StaggerPlan(cohortCounts: counts(hashKeys), pace: .window(1800), start: start)
        #expect(habitPlan.rate == hashPlan.rate)
        #expect(habitPlan.sendsPerSecond() == hashPlan.sendsPerSecond(), "the same slots, only who goes in which changes")
        #expect(habitPlan.cohorts.map(\.devices) != hashPlan.cohorts.map(\.devices), "the cohorts are uneven: habits cluster in the morning")

        // Workers send each cohort in key order: a device's slot follows from its cohort and its rank within it.
        var ordinal = Array(repeating: 0, count: 16)
        var slot: [Int: Date] = [:]
        for index in keys.indices.sorted(by: { keys[$0] < keys[$1] }) {
            let cohort = DeviceToken.cohort(ofKey: keys[index], count: 16)
            slot[index] = habitPlan.sendTime(cohort: cohort, ordinal: ordinal[cohort])
            ordinal[cohort] += 1
        }
        let known = habits.indices.filter { habits[$0] != nil }.sorted { habits[$0]! < habits[$1]! }
        for (earlier, later) in zip(known, known.dropFirst()) where habits[earlier]!.rounded(.down) < habits[later]!.rounded(.down) {
            #expect(slot[earlier]! <= slot[later]!)
        }
        // Those without a habit keep their hash order among themselves, in the slots the habits leave.
        let unknown = habits.indices.filter { habits[$0] == nil }
        let bySlot = unknown.sorted { slot[$0]! < slot[$1]! }
        #expect(bySlot == unknown.sorted { hashKeys[$0] < hashKeys[$1] })
    }
}

@Suite("Ready at open")
struct ReadyAtOpenTests {
    @Test("a share from 200 opens, waits from 200 waiters: the wake rates' rule for small groups")
    func smallGroups() {
        let small = ReadyAtOpen(opens: 199, ready: 150, waits: Array(repeating: 60, count: 49), stillWaiting: 0)
        #expect(small.share == nil)
        #expect(small.medianWaitMinutes == nil)
        let enough = ReadyAtOpen(opens: 400, ready: 300, waits: (1...200).map { Double($0) * 60 }, stillWaiting: 0)
        #expect(enough.share == 0.75)
        #expect(enough.waited == 200)
        #expect(enough.medianWaitMinutes == 100)
        #expect(enough.p90WaitMinutes == 180)
    }
}

@Suite("Ready at open's wait buckets")
struct ReadyAtOpenWaitBucketTests {
    @Test("a percentile read from the buckets is within 2.6 % of the waits' own (of 1 s + the wait), from a second to a day")
    func percentilesWithinTheBucketWidth() {
        var state: UInt64 = 7
        func next() -> UInt64 {  // xorshift64: the same waits on every run
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        for _ in 0..<50 {
            let waits = (0..<401).map { _ in Double(next() % 86_400_000) / 1000 + 1 }
            let exact = ReadyAtOpen(opens: 1_000, ready: 0, waits: waits, stillWaiting: 0)
            var counts: [Int: Int] = [:]
            for wait in waits { counts[ReadyAtOpen.WaitBuckets.bucket(ofSeconds: wait), default: 0] += 1 }
            let buckets = counts.keys.sorted()
            let tallied = ReadyAtOpen(ready: 0, notReady: 1_000, waitBuckets: buckets, waitCounts: buckets.map { counts[$0]! })
            #expect(tallied.waited == 401 && tallied.stillWaiting == 599 && tallied.opens == 1_000)
            for (exactMinutes, talliedMinutes) in [
                (exact.medianWaitMinutes!, tallied.medianWaitMinutes!), (exact.p90WaitMinutes!, tallied.p90WaitMinutes!),
            ] {
                let (talliedSeconds, exactSeconds) = (talliedMinutes * 60, exactMinutes * 60)
                #expect(abs(talliedSeconds - exactSeconds) <= (1 + exactSeconds) * 0.026, "\(talliedSeconds) s against \(exactSeconds) s")
            }
        }
    }

    @Test("a bucket holds the waits from its lower edge up to the next one; a negative wait is bucket 0")
    func bucketEdges() {
        #expect(ReadyAtOpen.WaitBuckets.bucket(ofSeconds: -3) == 0)
        #expect(ReadyAtOpen.WaitBuckets.bucket(ofSeconds: 0) == 0)
        for bucket in [1, 20, 100, 250] {
            let lower = expm1(Double(bucket) / 20)
            #expect(ReadyAtOpen.WaitBuckets.bucket(ofSeconds: lower * 1.000_001) == bucket)
            #expect(ReadyAtOpen.WaitBuckets.bucket(ofSeconds: lower * 0.999_999) == bucket - 1)
            let middle = ReadyAtOpen.WaitBuckets.seconds(ofBucket: bucket)
            #expect(ReadyAtOpen.WaitBuckets.bucket(ofSeconds: middle) == bucket)
        }
        #expect(ReadyAtOpen.WaitBuckets.percentile(0.5, buckets: [], counts: []) == nil)
    }
}
