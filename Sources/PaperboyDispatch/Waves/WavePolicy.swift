import Foundation
import PaperboyCore

/// The broadcast's decisions between waves, as pure code: given a running broadcast's rows, the time and
/// (when it asked for them) the next wave's audience counts, what to do. ``WaveDriver`` reads the rows,
/// counts audiences and carries the actions out, over PostgreSQL in production and over the simulation's model in
/// `paperboy-sim`; nothing here does I/O.
///
/// The rules:
/// - A wave with devices left to lease or batches not recorded goes on, until the edition's deadline: then
///   the broadcast expires.
/// - A wave with nothing left is finished. The next background wave starts `waveInterval` after the
///   previous one (counted from wave 1's start) while its start is before the deadline and, with a fixed
///   `maxPushesPerDevice`, fewer background waves than that were sent (with `auto`, the default, the
///   deadline and the interval alone are the limits: at least 20 minutes apart keeps a device within iOS's
///   3 background pushes an hour); after the last background wave, the alert wave when the broadcast asks
///   for a last resort. Each runs at wave 1's rate, the rate the content API was planned for, and keeps
///   wave 1's cohort slots, moved by the waves' interval and aligned at their ends
///   (``StaggerPlan/init(cohortCounts:rate:following:shift:)``): every device goes out at least a whole
///   interval after its wave-1 send, so its fourth push falls an hour after its first, not within it.
/// - A wave that cannot finish before the deadline sends what it can: its devices go out in plan order
///   (each cohort's batches are carved earliest-due first, and the cohort due soonest is carved first), a
///   device due at or after the deadline is skipped (`deadline`, ``SendRules``), and at the deadline the
///   broadcast ends `expired`, the state that says the deadline, not an error, ended it.
/// - Wave 1's pushes are counted towards dormancy after it (a recorded batch leaves them to count, migration
///   0029): a finished wave 1 is followed by nothing, neither a count, a wave nor the end, until they are counted
///   (outside the lock, like an audience): the next wave leaves out the devices that fell dormant.
/// - A wave whose audience is empty is not started; the next candidate is tried. With no candidate left,
///   the broadcast is completed.
/// - Audiences are counted outside the broadcast's lock (seconds at millions of devices, minutes at ten
///   million), so the policy asks for counts first and decides on them the next time round; it asks
///   `countAhead` before the wave's start, so that a wave starts on time however long its count takes.
///   Devices that post a receipt between the count and their slot are left out when their batch is leased.
public enum WavePolicy {
    /// What the policy decides on.
    public struct State: Sendable, Equatable {
        public var deadline: Date
        public var options: BroadcastOptions
        /// The waves so far, in order.
        public var waves: [StoredWave]
        /// Whether the last wave has devices left to lease or batches not yet recorded.
        public var lastWaveHasWorkLeft: Bool
        /// How long before a wave's start its audience is counted (longer than a count takes).
        public var countAhead: TimeInterval
        /// Wave 1's cohort slots as planned: each later wave keeps its devices' spacing from them.
        public var firstWaveCohorts: [StaggerPlan.Cohort]
        /// Whether wave 1 has recorded pushes not yet counted towards dormancy.
        public var firstWavePushesUncounted: Bool

        public init(
            deadline: Date,
            options: BroadcastOptions,
            waves: [StoredWave],
            firstWaveCohorts: [StaggerPlan.Cohort],
            lastWaveHasWorkLeft: Bool,
            firstWavePushesUncounted: Bool = false,
            countAhead: TimeInterval = 0
        ) {
            self.deadline = deadline
            self.options = options
            self.waves = waves
            self.firstWaveCohorts = firstWaveCohorts
            self.lastWaveHasWorkLeft = lastWaveHasWorkLeft
            self.firstWavePushesUncounted = firstWavePushesUncounted
            self.countAhead = countAhead
        }
    }

    /// The audiences counted for the wave after `afterWave`, per cohort, by kind.
    public struct Counts: Sendable, Equatable {
        public var afterWave: Int
        public var perCohort: [BroadcastProgress.Wave.Kind: [Int]]
        /// When the count was asked for; nil: just now.
        public var countedAt: Date?

        public init(afterWave: Int, perCohort: [BroadcastProgress.Wave.Kind: [Int]] = [:], countedAt: Date? = nil) {
            self.afterWave = afterWave
            self.perCohort = perCohort
            self.countedAt = countedAt
        }
    }

    /// What to do, in order.
    public enum Action: Sendable, Equatable {
        /// The deadline passed with work left: end the broadcast as expired.
        case expire
        /// Mark this wave finished.
        case finishWave(Int)
        /// Nothing is left to send: end the broadcast as completed.
        case complete
        /// Count wave 1's recorded pushes towards dormancy, outside the lock; then decide again.
        case countPushes
        /// Count the audience of wave `wave` for these kinds, in this order (a later kind is needed only when
        /// the earlier ones are empty), outside the lock; then decide again with the counts.
        case count(wave: Int, kinds: [BroadcastProgress.Wave.Kind])
        /// Store wave `wave` with this plan.
        case startWave(wave: Int, kind: BroadcastProgress.Wave.Kind, plan: StaggerPlan)
    }

    /// What to do with a running broadcast at `now`; empty when nothing is due.
    /// - Parameter counted: the audience counts asked for last time, if any; ignored unless they are for the
    ///   wave after the current last one and cover every cohort.
    public static func next(_ state: State, now: Date, counted: Counts?) throws -> [Action] {
        guard let first = state.waves.first, let last = state.waves.last else { return [] }
        var actions: [Action] = []
        if !last.finished {
            if state.lastWaveHasWorkLeft {
                return now >= state.deadline ? [.expire] : []
            }
            actions.append(.finishWave(last.wave))
        }
        if state.firstWavePushesUncounted { return actions + [.countPushes] }

        let options = state.options
        let candidates = nextKinds(state)
        guard !candidates.isEmpty else { return actions + [.complete] }
        let start = nextStart(state)
        let countFrom = start.addingTimeInterval(-state.countAhead)
        guard countFrom <= now else { return actions }

        for kind in candidates {
            guard let counted, counted.afterWave == last.wave, let counts = counted.perCohort[kind], counts.count == options.cohorts,
                (counted.countedAt ?? now) >= countFrom
            else {
                return actions + [.count(wave: last.wave + 1, kinds: candidates)]
            }
            guard counts.contains(where: { $0 > 0 }) else { continue }
            // Counted ahead: the wave starts at its time, not when counted.
            guard start <= now else { return actions }
            let plan = try StaggerPlan(
                cohortCounts: counts,
                rate: first.rate,
                following: state.firstWaveCohorts,
                shift: start.timeIntervalSince(first.start)
            )
            return actions + [.startWave(wave: last.wave + 1, kind: kind, plan: plan)]
        }
        // Nobody is left to wake.
        return actions + [.complete]
    }

    /// When the wave after the last one starts: `waveInterval` after the previous background wave's slot,
    /// counted from wave 1's start.
    public static func nextStart(_ state: State) -> Date {
        guard let first = state.waves.first else { return .distantFuture }
        let backgroundWaves = state.waves.filter { $0.kind == .background }.count
        return first.start.addingTimeInterval(Double(backgroundWaves) * state.options.waveInterval)
    }

    /// The kinds the next wave may be, in the order they are tried; empty when the broadcast is done.
    static func nextKinds(_ state: State) -> [BroadcastProgress.Wave.Kind] {
        guard let first = state.waves.first, let last = state.waves.last else { return [] }
        guard last.kind == .background, first.rate > 0, nextStart(state) < state.deadline else { return [] }
        var kinds: [BroadcastProgress.Wave.Kind] = []
        let backgroundWaves = state.waves.filter { $0.kind == .background }.count
        // The previous background wave's slot: `waveInterval` before the next one's.
        let lastSlot = nextStart(state).addingTimeInterval(-state.options.waveInterval)
        if state.options.allowsBackgroundWave(after: backgroundWaves, lastStart: lastSlot, deadline: state.deadline) {
            kinds.append(.background)
        }
        if state.options.alertLastResort { kinds.append(.alert) }
        return kinds
    }
}
