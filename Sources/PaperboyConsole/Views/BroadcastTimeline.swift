import Foundation
import PaperboyCore
import PaperboyStore

/// What a broadcast's plan says about time: how many sends were due by an instant, the planned rate then, how far
/// behind or ahead of its plan the broadcast is, and when it should end. Pure, from the progress alone (its waves'
/// cohorts hold each slot and its planned count), so the tests need no database.
struct BroadcastTimeline: Sendable {
    var progress: BroadcastProgress

    /// Devices the plan had due by `instant`, over every wave: each cohort's planned devices spread evenly over its slot.
    func plannedDone(at instant: Date) -> Double {
        var due = 0.0
        for wave in progress.waves {
            for cohort in wave.cohorts where cohort.counts.planned > 0 {
                let slot = cohort.endsAt.timeIntervalSince(cohort.startsAt)
                let elapsed = instant.timeIntervalSince(cohort.startsAt)
                guard elapsed > 0 else { continue }
                due += slot <= 0 ? Double(cohort.counts.planned) : Double(cohort.counts.planned) * min(1, elapsed / slot)
            }
        }
        return due
    }

    /// The plan's sends per second as steps: at each cohort's start its rate begins, at its end it stops.
    func plannedRate() -> [(at: Date, value: Double)] {
        var changes: [Date: Double] = [:]
        for wave in progress.waves {
            for cohort in wave.cohorts where cohort.counts.planned > 0 {
                let slot = cohort.endsAt.timeIntervalSince(cohort.startsAt)
                guard slot > 0 else { continue }
                let rate = Double(cohort.counts.planned) / slot
                changes[cohort.startsAt, default: 0] += rate
                changes[cohort.endsAt, default: 0] -= rate
            }
        }
        var level = 0.0
        var points: [(at: Date, value: Double)] = []
        for at in changes.keys.sorted() {
            level += changes[at] ?? 0
            // Rounding leaves -0.000…1 where slots meet.
            points.append((at, max(0, level.magnitude < 1e-9 ? 0 : level)))
        }
        return points
    }

    /// How far the broadcast is from its plan at `now`, in seconds at the current wave's rate: negative behind,
    /// positive ahead (a worker sends a batch's devices at most a batch early). Nil before anything was due or once
    /// it ended. The dispatcher's own measure (`behindSeconds` of a wave that catches up after a stall) wins when
    /// larger: it also counts devices already claimed for a later slot.
    func offPlan(now: Date) -> Double? {
        guard progress.state == .running, let wave = progress.currentWave, wave.rate > 0 else { return nil }
        let due = plannedDone(at: now)
        guard due >= 1 else { return nil }
        let done = Double(progress.totals.done)
        let seconds = (done - due) / wave.rate
        let dispatcherBehind = -(wave.behindSeconds ?? 0)
        return min(seconds, dispatcherBehind == 0 ? seconds : dispatcherBehind)
    }

    /// `on plan`, `12s behind plan`, `3s ahead of plan`.
    static func describe(offPlan seconds: Double?) -> String {
        guard let seconds else { return "" }
        if seconds.magnitude < 2 { return "on plan" }
        let amount = TimeText.duration(seconds.magnitude)
        return seconds < 0 ? "\(amount) behind plan" : "\(amount) ahead of plan"
    }

    /// When the current wave should be done: its last cohort's end, later by how far it is behind; nil once ended.
    func currentWaveEnd(now: Date) -> Date? {
        guard progress.state == .running, let wave = progress.currentWave else { return nil }
        let planEnd = wave.cohorts.map(\.endsAt).max() ?? wave.startsAt.addingTimeInterval(wave.window)
        let behind = max(0, -(offPlan(now: now) ?? 0))
        return max(planEnd.addingTimeInterval(behind), now)
    }

    /// When the broadcast should end at the latest: the end of the last wave its options allow (each wave starts an
    /// interval after the previous and lasts wave 1's window), never after the deadline. It ends sooner when no
    /// device is left to follow up.
    func latestEnd(now: Date) -> Date? {
        guard progress.state == .running else { return progress.finishedAt }
        let first = progress.waves.min { $0.wave < $1.wave }
        let start = first?.startsAt ?? progress.createdAt
        let window = first.map { wave in wave.cohorts.map(\.endsAt).max().map { $0.timeIntervalSince(wave.startsAt) } ?? wave.window } ?? 0
        let lastStart = start.addingTimeInterval(Double(max(0, progress.expectedWaves - 1)) * progress.options.waveInterval)
        let end = min(progress.deadline, lastStart.addingTimeInterval(window))
        return max(end, currentWaveEnd(now: now) ?? end)
    }
}

/// Durations and times as the console writes them: the terminal's formats where they exist.
enum TimeText {
    static func duration(_ seconds: TimeInterval) -> String {
        guard seconds.isFinite else { return "-" }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole)s" }
        let hours = whole / 3600
        let minutes = whole % 3600 / 60
        let rest = whole % 60
        if hours > 0 { return minutes > 0 ? "\(hours)h \(minutes)m" : "\(hours)h" }
        return rest > 0 && minutes < 10 ? "\(minutes)m \(rest)s" : "\(minutes)m"
    }

    /// `in 3m`, `4m ago`, `now`.
    static func relative(_ date: Date, now: Date) -> String {
        let seconds = date.timeIntervalSince(now)
        if seconds.magnitude < 1 { return "now" }
        return seconds > 0 ? "in \(duration(seconds))" : "\(duration(-seconds)) ago"
    }

    /// `2026-11-23 05:01:23` in `timeZone`.
    static func dateTime(_ date: Date, timeZone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    /// `05:01:23` in `timeZone`.
    static func clock(_ date: Date, timeZone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: date)
    }

    /// `2026-11-23T05:01:23Z`, for `<time datetime>`.
    static func iso(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
