import Foundation
import Logging
import PaperboyCore
import Synchronization

/// Moves running broadcasts along by ``WavePolicy``: reads each one's rows under its lock, asks the policy, and
/// carries out what it says, over any ``WaveStore`` (PostgreSQL in production, the model in the simulation). Any
/// worker may run it; a broadcast another worker is advancing is skipped.
///
/// Wave 1's pushes are counted towards dormancy after the wave, outside the lock, by whichever worker advances the
/// broadcast (or, once it ended, by any worker): each recorded batch is counted once, by one of them.
///
/// A later wave's audience is counted by one worker for all: it claims the count in the store, counts outside any
/// lock, and stores the counts; the others read them (minutes of database work at 10 million devices, which every
/// worker used to repeat at the same time). A claim lapses after `claimSeconds`, so a worker that dies while counting
/// delays the wave by that long at most.
public struct WaveDriver<Store: WaveStore>: Sendable {
    public let store: Store
    /// How long before a wave's start its audience is counted (``WavePolicy``).
    public let countAhead: TimeInterval
    /// This worker's name on its count claims.
    public let owner: String
    /// How long a count claim holds (wall-clock seconds, the store's clock).
    public let claimSeconds: Double
    /// Counts taken or read ahead of a wave's start, kept until the wave starts.
    private let counted = CountsAhead()

    public init(store: Store, countAhead: TimeInterval, owner: String, claimSeconds: Double) {
        self.store = store
        self.countAhead = countAhead
        self.owner = owner
        self.claimSeconds = claimSeconds
    }

    /// Advances every running broadcast once, after counting the pushes that broadcasts which ended (cancelled,
    /// expired, failed) left uncounted.
    public func advance(now: Date, logger: Logger) async throws -> [BroadcastEvent] {
        var events: [BroadcastEvent] = []
        for ended in try await store.endedBroadcastsWithUncountedPushes(logger: logger) {
            try await countPushes(of: ended, logger: logger)
        }
        let running = try await store.runningBroadcastIDs(logger: logger)
        counted.keep(Set(running))
        for id in running {
            events += try await advance(id, now: now, logger: logger)
        }
        return events
    }

    /// One broadcast: a locked step; when the policy asks for audience counts, they are taken outside the lock and
    /// the step runs again with them (a few times at most, when other workers move it meanwhile).
    public func advance(_ id: UUID, now: Date, logger: Logger) async throws -> [BroadcastEvent] {
        var events: [BroadcastEvent] = []
        var readStored = false
        for _ in 0..<4 {
            let counts = counted.get(id)
            let step = try await store.withLockedBroadcast(id, logger: logger) { [countAhead] locked in
                try await Self.apply(locked, now: now, counted: counts, countAhead: countAhead)
            }
            // Not running any more, or another worker is advancing it: its counts stay until it is no longer running.
            guard let step else { return events }
            events += step.events
            if step.events.contains(where: \.endsCounting) { counted.set(id, nil) }
            if step.countPushes {
                try await countPushes(of: step.broadcast, logger: logger)
                continue
            }
            guard let request = step.countRequest else { return events }
            // Counts another worker stored, if newer than this worker's: the policy judges whether they will do.
            if !readStored {
                readStored = true
                if let stored = try await store.storedCounts(broadcastID: id, wave: request.wave, logger: logger),
                    (stored.countedAt ?? now) > (counts?.countedAt ?? .distantPast)
                {
                    counted.set(id, stored)
                    continue
                }
            }
            // Another worker is counting: its counts are read on a later round.
            guard try await store.claimCount(broadcastID: id, wave: request.wave, owner: owner, seconds: claimSeconds, logger: logger)
            else { return events }
            let fresh = try await count(request, of: step.broadcast, now: now, logger: logger)
            try await store.storeCounts(fresh, broadcastID: id, wave: request.wave, owner: owner, now: now, logger: logger)
            counted.set(id, fresh)
        }
        return events
    }

    /// What one locked step did, and the counts it needs next, if any.
    struct Step: Sendable {
        var broadcast: Store.Broadcast
        var events: [BroadcastEvent] = []
        var countRequest: (wave: Int, kinds: [BroadcastProgress.Wave.Kind])?
        /// Wave 1's pushes are to be counted towards dormancy before the broadcast goes on.
        var countPushes = false
    }

    static func apply(_ locked: Store.Locked, now: Date, counted: WavePolicy.Counts?, countAhead: TimeInterval = 0) async throws -> Step {
        let broadcast = locked.broadcast
        let state = WavePolicy.State(
            deadline: broadcast.deadline,
            options: broadcast.options,
            waves: locked.waves,
            firstWaveCohorts: locked.firstWaveCohorts,
            lastWaveHasWorkLeft: locked.lastWaveHasWorkLeft,
            firstWavePushesUncounted: locked.firstWavePushesUncounted,
            countAhead: countAhead
        )
        var step = Step(broadcast: broadcast)
        for action in try WavePolicy.next(state, now: now, counted: counted) {
            switch action {
            case .expire:
                try await locked.finish(.expired, now: now)
                step.events.append(.expired(broadcast: broadcast.id))
            case .finishWave(let wave):
                try await locked.finishWave(wave, now: now)
                step.events.append(.waveFinished(broadcast: broadcast.id, wave: wave))
            case .complete:
                try await locked.finish(.completed, now: now)
                step.events.append(.completed(broadcast: broadcast.id))
            case .countPushes:
                step.countPushes = true
            case .count(let wave, let kinds):
                step.countRequest = (wave, kinds)
            case .startWave(let wave, let kind, let plan):
                try await locked.startWave(wave, kind: kind, plan: plan, now: now)
                let planned = plan.cohorts.reduce(0) { $0 + $1.devices }
                step.events.append(.waveStarted(broadcast: broadcast.id, wave: wave, kind: kind, planned: planned, start: plan.start))
            }
        }
        return step
    }

    /// Counts `broadcast`'s recorded wave-1 pushes towards dormancy, and logs what it counted.
    private func countPushes(of broadcast: Store.Broadcast, logger: Logger) async throws {
        let count = try await store.countPushes(of: broadcast, logger: logger)
        guard !count.isEmpty else { return }
        logger.info(
            "counted wave 1's pushes towards dormancy",
            metadata: [
                LogKey.broadcast: "\(broadcast.id.uuidString.lowercased())", LogKey.batches: "\(count.batches)", LogKey.ranges: "\(count.ranges)",
                LogKey.devices: "\(count.devices)", LogKey.dormant: "\(count.dormant)",
            ]
        )
    }

    /// The audiences asked for, in order, stopping at the first that is not empty (the policy starts that one), each
    /// recorded as the wave's members as it is counted: the wave's batches are carved from them.
    private func count(
        _ request: (wave: Int, kinds: [BroadcastProgress.Wave.Kind]),
        of broadcast: Store.Broadcast,
        now: Date,
        logger: Logger
    ) async throws -> WavePolicy.Counts {
        var counts = WavePolicy.Counts(afterWave: request.wave - 1, countedAt: now)
        for kind in request.kinds {
            let perCohort = try await store.recordMembers(of: broadcast, wave: request.wave, kind: kind, logger: logger)
            counts.perCohort[kind] = perCohort
            if perCohort.contains(where: { $0 > 0 }) { break }
        }
        return counts
    }
}

extension BroadcastEvent {
    /// After this, counts taken for the broadcast are of no more use.
    var endsCounting: Bool {
        switch self {
        case .waveStarted, .completed, .expired: true
        case .waveFinished: false
        }
    }
}

/// The counts a worker took ahead of waves' starts, per broadcast.
private final class CountsAhead: Sendable {
    private let counts = Mutex<[UUID: WavePolicy.Counts]>([:])
    func get(_ id: UUID) -> WavePolicy.Counts? { counts.withLock { $0[id] } }
    func set(_ id: UUID, _ value: WavePolicy.Counts?) { counts.withLock { $0[id] = value } }
    func keep(_ ids: Set<UUID>) { counts.withLock { $0 = $0.filter { ids.contains($0.key) } } }
}
