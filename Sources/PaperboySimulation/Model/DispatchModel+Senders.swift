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
            for provider in batch.givenBackProviders where holds[HoldKey(appID: broadcast.app, environment: .production, provider: provider)] == nil {
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
        return found.values.sorted { UUID.inStringOrder($0.broadcastID, $1.broadcastID) }
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
    public mutating func raiseHold(
        appID: Int,
        environment: APNsEnvironment = .production,
        provider: PushProvider,
        answer: String,
        reason: String,
        by worker: String,
        version: Int
    ) -> Bool {
        let key = HoldKey(appID: appID, environment: environment, provider: provider)
        guard holds[key] == nil, appVersions[appID, default: 0] == version else { return false }
        holds[key] = Hold(answer: answer, reason: reason, raisedBy: worker)
        return true
    }

    /// `AppRepository.setAPNs` / `setFCM` (a rotation): a new configuration version, the provider's hold ended and its
    /// held deactivations dropped, in every environment.
    /// - Returns: whether it ended a hold.
    @discardableResult
    public mutating func setCredentials(appID: Int, provider: PushProvider, now: Date) -> Bool {
        releaseHold(appID: appID, provider: provider, now: now).released
    }

    /// `ProviderHoldRepository.newConfiguration`: the app's version goes up for a change of `provider`'s in
    /// `environment` (both when nil); its evidence is forgotten, the confirmations of its other providers and
    /// environments current before are current after, and its given-back batches count from now
    /// (`configurationChanged`).
    private mutating func newConfiguration(appID: Int, changed provider: PushProvider, environment: APNsEnvironment?, now: Date) {
        let old = appVersions[appID, default: 0]
        appVersions[appID] = old + 1
        tallies = tallies.filter { $0.key.app != appID || $0.key.provider != provider }
        let changed = covers(appID, provider, environment)
        for (key, confirmation) in confirmations where key.appID == appID && confirmation.version == old && !changed(key) {
            confirmations[key]!.version = old + 1
        }
        // `restartGivenBackCount`: the app's open batches given back naming the provider count from now (the model's
        // broadcasts are production's).
        guard (environment ?? .production) == .production else { return }
        for (id, batch) in batches
        where batch.done == nil && batch.givenBackSince != nil && batch.givenBackProviders.contains(provider)
            && broadcasts[batch.broadcast].map({ $0.app == appID && $0.state == .running }) ?? false
        {
            batches[id]!.givenBackSince = now
        }
    }

    /// The holds and held deactivations of `appID`'s `provider` in `environment` (every one when nil).
    private func covers(_ appID: Int, _ provider: PushProvider, _ environment: APNsEnvironment?) -> (HoldKey) -> Bool {
        { $0.appID == appID && $0.provider == provider && (environment == nil || $0.environment == environment) }
    }

    /// `ProviderHoldRepository.release`: the hold ends, its held deactivations are dropped and its evidence forgotten.
    @discardableResult
    public mutating func releaseHold(
        appID: Int,
        provider: PushProvider,
        environment: APNsEnvironment? = nil,
        now: Date
    ) -> (released: Bool, dropped: Int) {
        newConfiguration(appID: appID, changed: provider, environment: environment, now: now)
        let covered = covers(appID, provider, environment)
        let released = holds.keys.filter(covered)
        for key in released { holds[key] = nil }
        let dropped = heldDeactivations.filter { covered($0.value.key) }.map(\.key)
        for id in dropped { heldDeactivations[id] = nil }
        return (!released.isEmpty, dropped.count)
    }

    /// `ProviderHoldRepository.confirm`: the held deactivations applied, the hold ended, a new configuration version,
    /// and "not valid" answers to it confirmed as the tokens' truth from `now`.
    /// - Returns: whether there was a hold, and how many devices were deactivated.
    @discardableResult
    public mutating func confirm(
        appID: Int,
        provider: PushProvider,
        environment: APNsEnvironment? = nil,
        now: Date
    ) -> (released: Bool, deactivated: Int) {
        newConfiguration(appID: appID, changed: provider, environment: environment, now: now)
        for confirmed in environment.map({ [$0] }) ?? APNsEnvironment.allCases {
            confirmations[HoldKey(appID: appID, environment: confirmed, provider: provider)] = (appVersions[appID, default: 0], now)
        }
        let covered = covers(appID, provider, environment)
        let released = holds.keys.filter(covered)
        for key in released { holds[key] = nil }
        var deactivated = 0
        for (id, held) in heldDeactivations where covered(held.key) {
            heldDeactivations[id] = nil
            if let device = devices[id], device.active, device.registeredAt <= held.answeredAt { deactivated += 1 }
            deactivate(id, at: held.answeredAt)
        }
        return (!released.isEmpty, deactivated)
    }

    /// `ProviderHoldRepository.confirmed`: the app's providers confirmed for its configuration now, within 24 hours.
    public func confirmed(appID: Int, environment: APNsEnvironment = .production, now: Date) -> Set<PushProvider> {
        Set(
            confirmations.filter {
                $0.key.appID == appID && $0.key.environment == environment && $0.value.version == appVersions[appID, default: 0]
                    && $0.value.at > now.addingTimeInterval(-86_400)
            }.map(\.key.provider)
        )
    }

    /// `ProviderHoldRepository.fleetAnswers`: the evidence of each app's provider and environment with held
    /// deactivations and no hold.
    public func fleetAnswers(before cutoff: Date, now: Date, smallFleet: Int = 20) -> [FleetAnswers] {
        var fleets: [FleetAnswers] = []
        for key in Set(heldDeactivations.values.map(\.key)).filter({ holds[$0] == nil }).sorted() {
            let held = heldDeactivations.values.filter { $0.key == key }
            let from = AnswerEvidence.period(of: held.map(\.sentAt).min()!)
            let rows = tallies.filter {
                $0.key.app == key.appID && $0.key.environment == key.environment && $0.key.provider == key.provider && $0.key.period >= from
            }
            let top = rows.filter { $0.value.invalid > 0 }.max { ($0.value.invalid, $0.key.period) < ($1.value.invalid, $1.key.period) }
            let version = appVersions[key.appID, default: 0]
            let confirmation = confirmations[key]
            // The model's devices are production.
            let active =
                key.environment == .production ? devices.values.count { $0.app == key.appID && $0.token.provider == key.provider && $0.active } : 0
            fleets.append(
                FleetAnswers(
                    appID: key.appID,
                    environment: key.environment,
                    provider: key.provider,
                    version: version,
                    held: held.count,
                    due: held.count { $0.answeredAt < cutoff },
                    answers: rows.map { $0.key.period == from ? $0.value.sinceInvalid : $0.value.answers }.reduce(0, +),
                    invalid: rows.values.map(\.invalid).reduce(0, +),
                    reason: top?.value.reason ?? "",
                    hint: top?.value.hint ?? "",
                    activeDevices: min(smallFleet, active),
                    confirmed: confirmation.map { $0.version == version && $0.at > now.addingTimeInterval(-86_400) } ?? false,
                    lastAccepted: rows.values.compactMap(\.lastAccepted).max()
                )
            )
        }
        return fleets
    }

    /// `ProviderHoldRepository.applyDue`: held deactivations older than `cutoff` of providers not held, oldest first,
    /// of the apps' providers and environments in `only`, each answered before its time (nil: any).
    @discardableResult
    public mutating func applyHeldDeactivations(before cutoff: Date, limit: Int = 1000, only keys: [HoldKey: Date]? = nil) -> Int {
        let due = heldDeactivations.filter { held in
            held.value.answeredAt < cutoff && holds[held.value.key] == nil
                && (keys.map { keys in keys[held.value.key].map { held.value.answeredAt < $0 } ?? false } ?? true)
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
}
