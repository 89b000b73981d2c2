import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import Synchronization

/// What advancing a broadcast did.
public enum BroadcastEvent: Sendable, Equatable {
    case waveStarted(broadcast: UUID, wave: Int, kind: BroadcastProgress.Wave.Kind, planned: Int, start: Date)
    case waveFinished(broadcast: UUID, wave: Int)
    case completed(broadcast: UUID)
    case expired(broadcast: UUID)
}

/// Moves running broadcasts along by ``WavePolicy``: reads each one's rows under its lock, asks the policy,
/// and carries out what it says. Any worker may run it; a broadcast another worker is advancing is skipped.
struct WaveAdvancer: Sendable {
    let repository: BroadcastRepository
    let cohorts: CohortRepository
    /// How long before a wave's start its audience is counted (``WavePolicy``).
    let countAhead: TimeInterval
    /// Counts taken ahead of a wave's start, kept until the wave starts (this process's: another worker
    /// that advances the broadcast counts for itself).
    private let counted = CountsAhead()

    init(repository: BroadcastRepository, countAhead: TimeInterval = 0) {
        self.repository = repository
        self.cohorts = CohortRepository(client: repository.client)
        self.countAhead = countAhead
    }

    /// Advances every running broadcast once.
    func advance(now: Date, logger: Logger) async throws -> [BroadcastEvent] {
        var events: [BroadcastEvent] = []
        let running = try await repository.runningBroadcastIDs(logger: logger)
        counted.keep(Set(running))
        for id in running {
            events += try await advance(id, now: now, logger: logger)
        }
        return events
    }

    /// One broadcast: a locked step; when the policy asks for audience counts, they are taken outside the
    /// lock and the step runs again with them (a few times at most, when other workers move it meanwhile).
    func advance(_ id: UUID, now: Date, logger: Logger) async throws -> [BroadcastEvent] {
        var events: [BroadcastEvent] = []
        for _ in 0..<3 {
            let counts = counted.get(id)
            let step = try await repository.withLockedBroadcast(id, logger: logger) { [countAhead] locked in
                try await Self.apply(locked, now: now, counted: counts, countAhead: countAhead)
            }
            // Not running any more, or another worker is advancing it: its counts stay until it is no longer running.
            guard let step else { return events }
            events += step.events
            if step.events.contains(where: \.endsCounting) { counted.set(id, nil) }
            guard let request = step.countRequest else { return events }
            counted.set(id, try await count(request, of: step.broadcast, now: now, logger: logger))
        }
        return events
    }

    /// What one locked step did, and the counts it needs next, if any.
    struct Step: Sendable {
        var broadcast: Broadcast
        var events: [BroadcastEvent] = []
        var countRequest: (wave: Int, kinds: [BroadcastProgress.Wave.Kind])?
    }

    static func apply(_ locked: LockedBroadcast, now: Date, counted: WavePolicy.Counts?, countAhead: TimeInterval = 0) async throws -> Step {
        let broadcast = locked.broadcast
        let state = WavePolicy.State(
            deadline: broadcast.deadline,
            options: broadcast.options,
            waves: locked.waves,
            lastWaveHasWorkLeft: locked.lastWaveHasWorkLeft,
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

    /// The audiences asked for, in order, stopping at the first that is not empty (the policy starts that one).
    private func count(
        _ request: (wave: Int, kinds: [BroadcastProgress.Wave.Kind]),
        of broadcast: Broadcast,
        now: Date,
        logger: Logger
    ) async throws -> WavePolicy.Counts {
        var counts = WavePolicy.Counts(afterWave: request.wave - 1, countedAt: now)
        for kind in request.kinds {
            let perCohort = try await cohorts.counts(
                of: WaveAudience(broadcast, wave: request.wave, kind: kind),
                cohorts: broadcast.options.cohorts,
                logger: logger
            )
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
