import Foundation
import Logging
import PaperboyCore
import PaperboyStore

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

    init(repository: BroadcastRepository) {
        self.repository = repository
        self.cohorts = CohortRepository(client: repository.client)
    }

    /// Advances every running broadcast once.
    func advance(now: Date, logger: Logger) async throws -> [BroadcastEvent] {
        var events: [BroadcastEvent] = []
        for id in try await repository.runningBroadcastIDs(logger: logger) {
            events += try await advance(id, now: now, logger: logger)
        }
        return events
    }

    /// One broadcast: a locked step; when the policy asks for audience counts, they are taken outside the
    /// lock and the step runs again with them (a few times at most, when other workers move it meanwhile).
    func advance(_ id: UUID, now: Date, logger: Logger) async throws -> [BroadcastEvent] {
        var events: [BroadcastEvent] = []
        var counted: WavePolicy.Counts?
        for _ in 0..<3 {
            let step = try await repository.withLockedBroadcast(id, logger: logger) { locked in
                try await Self.apply(locked, now: now, counted: counted)
            }
            guard let step else { return events }
            events += step.events
            guard let request = step.countRequest else { return events }
            counted = try await count(request, of: step.broadcast, logger: logger)
        }
        return events
    }

    /// What one locked step did, and the counts it needs next, if any.
    struct Step: Sendable {
        var broadcast: Broadcast
        var events: [BroadcastEvent] = []
        var countRequest: (wave: Int, kinds: [BroadcastProgress.Wave.Kind])?
    }

    static func apply(_ locked: LockedBroadcast, now: Date, counted: WavePolicy.Counts?) async throws -> Step {
        let broadcast = locked.broadcast
        let state = WavePolicy.State(
            deadline: broadcast.deadline,
            options: broadcast.options,
            waves: locked.waves,
            lastWaveHasWorkLeft: locked.lastWaveHasWorkLeft
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
        logger: Logger
    ) async throws -> WavePolicy.Counts {
        var counts = WavePolicy.Counts(afterWave: request.wave - 1)
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
