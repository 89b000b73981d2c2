import Foundation
import PaperboyCore
import PaperboyDispatch

extension DispatchModel {
    /// `targets(of:)`: the batch's audience devices in key order, with their background pushes of the hour before
    /// `now`; a batch given back before leaves out the devices delivered in its wave.
    public func targets(of batch: LeasedBatch, now: Date) -> [BatchTarget] {
        guard let broadcast = broadcasts[batch.broadcastID] else { return [] }
        let since = now.addingTimeInterval(-3600)
        return keyOrder.compactMap { devices[$0] }.filter { device in
            device.key >= batch.firstKey && device.key <= batch.lastKey && inAudience(device, of: broadcast, wave: batch.wave)
                && !(batch.givenBack && deliveries[DeliveryKey(device: device.id, broadcast: batch.broadcastID, wave: batch.wave)] != nil)
        }.map { device in
            BatchTarget(
                deviceID: device.id,
                token: device.token,
                platform: device.platform,
                tier: device.tier,
                recentBackgroundPushes: recentPushes[device.id, default: []].filter { $0 > since }.sorted(),
                notifyWhenReady: device.notifyWhenReady && device.alertsAuthorized && batch.wave > 1
                    && !editionDeliveries(of: device.id, edition: broadcast.edition).contains { !$0.background }
            )
        }
    }

    /// `record`: the outcomes written and the batch done, under its lease; done by this lease before, nothing again.
    /// - Returns: false when the lease is another's.
    public mutating func record(_ batch: LeasedBatch, outcomes: [BatchOutcome], owner: String, configuration: Int? = nil, now: Date) -> Bool {
        guard let row = batches[batch.id] else { return false }
        if row.done == nil && row.leaseOwner == owner && row.leases == batch.leases {
            batches[batch.id]!.done = now
            write(batch, outcomes: outcomes, owner: owner, configuration: configuration, now: now)
            return true
        }
        return row.done != nil && row.leaseOwner == owner && row.leases == batch.leases
    }

    /// `giveBack`: the recorded outcomes written, the rest back to the cohort, the batch left to nobody and expired;
    /// done by this lease before, nothing again.
    /// - Returns: false when the lease is another's.
    public mutating func giveBack(
        _ batch: LeasedBatch,
        recorded: [BatchOutcome],
        firstReturned: Int,
        returned: Int,
        because reason: String,
        providers: [PushProvider],
        held: [PushProvider] = [],
        owner: String,
        configuration: Int? = nil,
        now: Date
    ) -> Bool {
        guard var row = batches[batch.id] else { return false }
        guard row.done == nil && row.leaseOwner == owner && row.leases == batch.leases else {
            return row.givenBackBy == owner && row.givenBackLease == batch.leases
        }
        row.giveBacks += 1
        row.givenBackFor = reason
        row.devices = max(1, returned)
        row.firstOrdinal += firstReturned
        row.slotStart = nil
        row.givenBackProviders = providers.sorted { $0.rawValue < $1.rawValue }
        row.givenBackSince = providers.allSatisfy(held.contains) ? nil : (row.givenBackSince ?? now)
        row.givenBackBy = row.leaseOwner
        row.givenBackLease = row.leases
        row.leaseOwner = ""
        row.expires = now.addingTimeInterval(-0.001)
        batches[batch.id] = row
        write(batch, outcomes: recorded, owner: owner, configuration: configuration, now: now)
        return true
    }

    /// The ledger (a device once per wave), the cohort's counters, deactivations, held deactivations and the fleet's
    /// evidence; the last two only for answers to the app's configuration now (`configuration`, nil: any).
    mutating func write(_ batch: LeasedBatch, outcomes: [BatchOutcome], owner: String, configuration: Int?, now: Date) {
        guard let index = cohorts.firstIndex(where: { $0.broadcast == batch.broadcastID && $0.wave == batch.wave && $0.cohort == batch.cohort })
        else { return }
        let current = configuration.map { $0 == appVersions[batch.appID, default: 0] } ?? true
        if current { tally(outcomes, appID: batch.appID, environment: batch.environment, worker: owner) }
        for outcome in outcomes {
            let result: String
            var reason: String?
            finals[WaveKey(broadcast: batch.broadcastID, wave: batch.wave), default: [:]][outcome.deviceID, default: 0] += 1
            switch outcome.result {
            case .skipped(let why):
                cohorts[index].skipped[why.rawValue, default: 0] += 1
                continue
            case .accepted:
                result = "accepted"
                cohorts[index].accepted += 1
            case .rejected(let why, let deactivation):
                result = "rejected"
                reason = why
                cohorts[index].rejected[why, default: 0] += 1
                switch deactivation {
                case .at(let time): deactivate(outcome.deviceID, at: time)
                case .whenRecorded: deactivate(outcome.deviceID, at: now)
                case .deferred:
                    if current, heldDeactivations[outcome.deviceID] == nil, let device = devices[outcome.deviceID] {
                        heldDeactivations[outcome.deviceID] = HeldDeactivation(
                            app: device.app,
                            provider: outcome.provider,
                            environment: batch.environment,
                            reason: why,
                            answeredAt: now,
                            sentAt: outcome.sentAt
                        )
                    }
                case nil: break
                }
            case .fateUnknown:
                result = "fateUnknown"
                cohorts[index].rejected["fateUnknown", default: 0] += 1
            case .notSent:
                result = "notSent"
                cohorts[index].rejected["notSent", default: 0] += 1
            }
            cohorts[index].sent += 1
            let provider = outcome.provider.rawValue
            cohorts[index].providers[provider + "/sent", default: 0] += 1
            cohorts[index].providers[provider + "/" + (result == "rejected" ? reason! : result), default: 0] += 1
            let key = DeliveryKey(device: outcome.deviceID, broadcast: batch.broadcastID, wave: batch.wave)
            if deliveries[key] == nil {
                let background = batch.kind == .background && !outcome.alert
                deliveries[key] = Delivery(
                    device: outcome.deviceID,
                    broadcast: batch.broadcastID,
                    wave: batch.wave,
                    sentAt: outcome.sentAt,
                    outcome: result,
                    reason: reason,
                    background: background
                )
                if background && result != "notSent" { recentPushes[outcome.deviceID, default: []].append(outcome.sentAt) }
            }
        }
        queuePushes(batch, outcomes: outcomes)
    }

    /// `unregister`: inactive unless registered again after `time`.
    mutating func deactivate(_ id: Int64, at time: Date) {
        guard let device = devices[id] else { return }
        devices[id]!.unregisteredAt = max(device.unregisteredAt ?? .distantPast, time)
        devices[id]!.active = device.active && device.registeredAt > time
        if device.active && !devices[id]!.active { deactivations.append((id, time)) }
    }
}

extension DispatchModel {
    /// The statement `AnswerEvidence.tallyQuery` runs: this worker's rows of the ten seconds the answers were sent in gain them.
    mutating func tally(_ outcomes: [BatchOutcome], appID: Int, environment: APNsEnvironment, worker: String) {
        for (evidence, counts) in AnswerEvidence(outcomes).counts {
            let key = TallyKey(app: appID, environment: environment, provider: evidence.provider, period: evidence.period, worker: worker)
            tallies[key] = AnswerEvidence.merged(tallies[key] ?? AnswerEvidence.Counts(), counts)
        }
    }
}
