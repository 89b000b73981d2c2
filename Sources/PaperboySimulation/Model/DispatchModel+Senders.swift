import Foundation
import PaperboyCore
import PaperboyDispatch

extension DispatchModel {
    /// `SenderStatusRepository.reportProblem`: the problem's start kept while it lasts.
    public mutating func reportProblem(appID: Int, provider: PushProvider, worker: String, problem: String, now: Date) {
        let key = StatusKey(app: appID, provider: provider, worker: worker)
        var status = statuses[key] ?? SenderStatus(appID: appID, provider: provider, worker: worker, updatedAt: now)
        status.problem = problem
        status.problemSince = status.problemSince ?? now
        status.updatedAt = now
        statuses[key] = status
    }

    /// `SenderStatusRepository.reportSent`: the problem over.
    public mutating func reportSent(appID: Int, provider: PushProvider, worker: String, now: Date) {
        let key = StatusKey(app: appID, provider: provider, worker: worker)
        var status = statuses[key] ?? SenderStatus(appID: appID, provider: provider, worker: worker, updatedAt: now)
        status.lastSentAt = now
        status.problem = nil
        status.problemSince = nil
        status.updatedAt = now
        statuses[key] = status
    }

    /// `givenBackBroadcasts`: running broadcasts with open batches given back for providers not held, with the oldest
    /// give-back per provider and every worker's status for it.
    public func givenBackBroadcasts() -> [GivenBackBroadcast] {
        var found: [UUID: GivenBackBroadcast] = [:]
        for batch in batches.values where batch.done == nil {
            guard let since = batch.givenBackSince, let broadcast = broadcasts[batch.broadcast], broadcast.state == .running else { continue }
            for provider in batch.givenBackProviders where holds[AppProvider(appID: broadcast.app, provider: provider)] == nil {
                var entry = found[broadcast.id] ?? GivenBackBroadcast(broadcastID: broadcast.id, appID: broadcast.app, statuses: [])
                entry.givenBackSince[provider] = min(entry.givenBackSince[provider] ?? since, since)
                found[broadcast.id] = entry
            }
        }
        for id in found.keys {
            let app = found[id]!.appID
            found[id]!.statuses = statuses.values.filter { $0.appID == app && found[id]!.givenBackSince[$0.provider] != nil }
                .sorted { ($0.provider.rawValue, $0.worker) < ($1.provider.rawValue, $1.worker) }
        }
        return found.values.sorted { $0.broadcastID.uuidString < $1.broadcastID.uuidString }
    }

    /// `fail`: a planned or running broadcast ends as failed.
    public mutating func fail(_ id: UUID, reason: String, now: Date) -> Bool {
        guard broadcasts[id]?.state == .running else { return false }
        broadcasts[id]!.state = .failed
        broadcasts[id]!.failure = reason
        broadcasts[id]!.finishedAt = now
        return true
    }

    /// `ProviderHoldRepository.raise`: kept as it was when held already; none for an older configuration.
    @discardableResult
    public mutating func raiseHold(appID: Int, provider: PushProvider, answer: String, reason: String, by worker: String, version: Int) -> Bool {
        let key = AppProvider(appID: appID, provider: provider)
        guard holds[key] == nil, appVersions[appID, default: 0] == version else { return false }
        holds[key] = Hold(answer: answer, reason: reason, raisedBy: worker)
        return true
    }

    /// `AppRepository.setAPNs` / `setFCM` (a rotation): a new configuration version, the provider's hold ended and its
    /// held deactivations dropped.
    public mutating func setCredentials(appID: Int, provider: PushProvider) {
        releaseHold(appID: appID, provider: provider)
    }

    /// `ProviderHoldRepository.release`: the hold ends and its held deactivations are dropped.
    @discardableResult
    public mutating func releaseHold(appID: Int, provider: PushProvider) -> (released: Bool, dropped: Int) {
        appVersions[appID, default: 0] += 1
        let released = holds.removeValue(forKey: AppProvider(appID: appID, provider: provider)) != nil
        let dropped = heldDeactivations.filter { $0.value.app == appID && $0.value.provider == provider }.map(\.key)
        for id in dropped { heldDeactivations[id] = nil }
        return (released, dropped.count)
    }

    /// `ProviderHoldRepository.applyDue`: held deactivations older than `cutoff` of providers not held, oldest first.
    @discardableResult
    public mutating func applyHeldDeactivations(before cutoff: Date, limit: Int = 1000) -> Int {
        let due = heldDeactivations.filter {
            $0.value.answeredAt < cutoff && holds[AppProvider(appID: $0.value.app, provider: $0.value.provider)] == nil
        }
        .sorted {
            ($0.value.app, $0.value.provider.rawValue, $0.value.answeredAt, $0.key) < (
                $1.value.app, $1.value.provider.rawValue, $1.value.answeredAt, $1.key
            )
        }
        .prefix(limit)
        for (id, held) in due {
            heldDeactivations[id] = nil
            deactivate(id, at: held.answeredAt)
        }
        return due.count
    }

    /// The statuses of one app and provider, for tests.
    public func statuses(appID: Int, provider: PushProvider) -> [SenderStatus] {
        statuses.values.filter { $0.appID == appID && $0.provider == provider }.sorted { $0.worker < $1.worker }
    }
}

extension DispatchModel {
    /// An operator cancels the broadcast.
    public mutating func cancel(_ id: UUID, now: Date) {
        end(id, as: .cancelled, now: now)
    }

    /// The broadcast ends in `state` (the wave advancer's completion and expiry, an operator's cancel).
    public mutating func end(_ id: UUID, as state: BroadcastProgress.State, now: Date) {
        guard broadcasts[id]?.state == .running else { return }
        broadcasts[id]!.state = state
        broadcasts[id]!.finishedAt = now
    }

    /// Every cohort of the broadcast carved and every batch of it done: its single wave is over.
    public func isDone(_ id: UUID) -> Bool {
        cohorts.allSatisfy { $0.broadcast != id || $0.nextKey >= $0.endKey } && batches.values.allSatisfy { $0.broadcast != id || $0.done != nil }
    }
}
