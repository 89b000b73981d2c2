import Foundation
import PaperboyCore
import PaperboyDispatch

extension DispatchModel {
    /// `BroadcastRepository.lease`: a batch whose lease expired (or that was given back) first, else one carved from
    /// the cohort due soonest.
    public mutating func lease(
        owner: String,
        now: Date,
        lookahead: TimeInterval,
        duration: TimeInterval,
        batchDuration: TimeInterval,
        maxBatchSize: Int,
        excluding held: [Int64] = [],
        excludingApps apps: [Int] = [],
        excludingProviders providers: [AppProvider] = [],
        takeOver: Bool = true,
        takeOverGrace: TimeInterval = 0
    ) -> LeasedBatch? {
        if let id = takeOverCandidate(
            now: now,
            excluding: held,
            excludingApps: apps,
            excludingProviders: providers,
            expired: takeOver,
            grace: takeOverGrace
        ) {
            batches[id]!.leaseOwner = owner
            batches[id]!.expires = now.addingTimeInterval(duration)
            batches[id]!.leases += 1
            var batch = leased(id)!
            let start = claimSlot(
                broadcast: batch.broadcastID,
                wave: batch.wave,
                planned: batch.plannedTime(index: 0),
                devices: batch.devices,
                now: now
            )
            batches[id]!.slotStart = start
            batch.slotStart = start
            return batch
        }
        for _ in 0..<64 {
            guard let index = dueCohort(dueBy: now.addingTimeInterval(lookahead), excludingApps: apps) else { return nil }
            let cohort = cohorts[index]
            let wave = waves[WaveKey(broadcast: cohort.broadcast, wave: cohort.wave)]!
            let broadcast = broadcasts[cohort.broadcast]!
            let size = max(1, min(maxBatchSize, Int((wave.rate * batchDuration).rounded(.up))))
            // The key of the batch's `size`-th device, then every device up to and including that key.
            let members = keyOrder.compactMap { self.devices[$0] }.filter {
                $0.key >= cohort.nextKey && $0.key < cohort.endKey && self.inAudience($0, of: broadcast, wave: cohort.wave)
            }
            let lastKey = members.count >= size ? members[size - 1].key : cohort.endKey - 1
            let count = members.count { $0.key <= lastKey }
            cohorts[index].nextKey = lastKey + 1
            cohorts[index].nextOrdinal += count
            guard count > 0 else { continue }
            carved[WaveKey(broadcast: cohort.broadcast, wave: cohort.wave), default: []].formUnion(members.filter { $0.key <= lastKey }.map(\.id))
            let planned = cohort.startsAt.addingTimeInterval(Double(cohort.nextOrdinal) / wave.rate)
            let slot = claimSlot(broadcast: cohort.broadcast, wave: cohort.wave, planned: planned, devices: count, now: now)
            let id = nextBatchID
            nextBatchID += 1
            batches[id] = Batch(
                id: id,
                broadcast: cohort.broadcast,
                wave: cohort.wave,
                cohort: cohort.cohort,
                firstKey: cohort.nextKey,
                lastKey: lastKey,
                firstOrdinal: cohort.nextOrdinal,
                devices: count,
                leaseOwner: owner,
                expires: now.addingTimeInterval(duration),
                slotStart: slot
            )
            return leased(id)
        }
        return nil
    }

    /// The oldest open batch whose lease expired, of a running broadcast, not held here, not of an excluded app, and
    /// not given back for providers this worker cannot send through (or held for the app).
    func takeOverCandidate(
        now: Date,
        excluding held: [Int64],
        excludingApps apps: [Int],
        excludingProviders providers: [AppProvider],
        expired: Bool,
        grace: TimeInterval
    ) -> Int64? {
        let excluded = Set(providers)
        return batches.values.filter { batch in
            guard batch.done == nil, batch.leaseOwner.isEmpty || (expired && batch.expires < now.addingTimeInterval(-grace)),
                !held.contains(batch.id),
                let broadcast = broadcasts[batch.broadcast],
                broadcast.state == .running, !apps.contains(broadcast.app)
            else { return false }
            if batch.givenBackProviders.isEmpty { return true }
            return !batch.givenBackProviders.allSatisfy { provider in
                let key = AppProvider(appID: broadcast.app, provider: provider)
                return holds[HoldKey(appID: broadcast.app, environment: .production, provider: provider)] != nil || excluded.contains(key)
            }
        }.map(\.id).min()
    }

    /// The cohort whose next device is due soonest, if by `dueBy`: `dueCohortQuery`.
    func dueCohort(dueBy: Date, excludingApps apps: [Int]) -> Int? {
        var best: (index: Int, due: Date, cohort: Int)?
        for (index, cohort) in cohorts.enumerated() where cohort.nextKey < cohort.endKey {
            guard let broadcast = broadcasts[cohort.broadcast], broadcast.state == .running, !apps.contains(broadcast.app) else { continue }
            let providers = appProviders[broadcast.app] ?? []
            if !providers.isEmpty && providers.allSatisfy({ holds[HoldKey(appID: broadcast.app, environment: .production, provider: $0)] != nil }) {
                continue
            }
            guard let wave = waves[WaveKey(broadcast: cohort.broadcast, wave: cohort.wave)], wave.finishedAt == nil, wave.rate > 0 else { continue }
            let planned = cohort.startsAt.addingTimeInterval(Double(cohort.nextOrdinal) / wave.rate)
            let due = max(planned, wave.nextSlot ?? .distantPast, broadcast.origin.flatMap { origins[$0]?.nextSlot } ?? .distantPast)
            guard due <= dueBy else { continue }
            if best.map({ (planned, cohort.cohort) < ($0.due, $0.cohort) }) ?? true { best = (index, planned, cohort.cohort) }
        }
        return best?.index
    }

    /// `claimSlot`: the wave's next free slot for `devices`, after the work claimed, `planned` and `now`; on the
    /// origin's timeline too, exclusively, when the broadcast shares one.
    mutating func claimSlot(broadcast id: UUID, wave number: Int, planned: Date, devices: Int, now: Date) -> Date {
        let key = WaveKey(broadcast: id, wave: number)
        guard let wave = waves[key], wave.rate > 0 else { return max(planned, now) }
        let origin = broadcasts[id]?.origin
        let originNext = origin.flatMap { origins[$0]?.nextSlot }
        let start = max(wave.nextSlot ?? .distantPast, planned, now, originNext ?? .distantPast)
        waves[key]!.nextSlot = start.addingTimeInterval(Double(devices) / wave.rate)
        if let origin, let capacity = origins[origin]?.capacity {
            origins[origin]!.nextSlot = start.addingTimeInterval(Double(devices) / capacity)
        }
        return start
    }

    /// `reclaimSlot`: a new slot for the rest of a batch from `index`; nil when `owner` no longer holds this lease.
    public mutating func reclaimSlot(_ batch: LeasedBatch, from index: Int, remaining: Int, owner: String, now: Date, notBefore: Date? = nil) -> Date?
    {
        guard let row = batches[batch.id], row.leaseOwner == owner, row.leases == batch.leases, row.done == nil else { return nil }
        let planned = max(batch.plannedTime(index: index), notBefore ?? .distantPast)
        return claimSlot(broadcast: batch.broadcastID, wave: batch.wave, planned: planned, devices: max(1, remaining), now: now)
    }

    /// `renew`: the leases `owner` holds of `batches` (by id and lease number) extended by `duration`.
    public mutating func renew(_ list: [LeasedBatch], owner: String, duration: TimeInterval, now: Date) -> LeaseRenewal {
        var renewal = LeaseRenewal()
        for batch in list {
            guard let row = batches[batch.id], row.leaseOwner == owner, row.leases == batch.leases, row.done == nil else { continue }
            batches[batch.id]!.expires = now.addingTimeInterval(duration)
            renewal.held.insert(batch.id)
            if broadcasts[row.broadcast]?.state != .running { renewal.stopped.insert(batch.id) }
        }
        return renewal
    }

    /// `nextDue`: `lookahead` before the next batch comes due, or when an expired lease may be taken over, after `now`.
    public func nextDue(now: Date, lookahead: TimeInterval = 0, takeOverGrace: TimeInterval = 0) -> Date? {
        var due: [Date] = []
        for cohort in cohorts where cohort.nextKey < cohort.endKey {
            guard let broadcast = broadcasts[cohort.broadcast], broadcast.state == .running,
                let wave = waves[WaveKey(broadcast: cohort.broadcast, wave: cohort.wave)], wave.finishedAt == nil, wave.rate > 0
            else { continue }
            let planned = cohort.startsAt.addingTimeInterval(Double(cohort.nextOrdinal) / wave.rate)
            due.append(
                max(planned, wave.nextSlot ?? .distantPast, broadcast.origin.flatMap { origins[$0]?.nextSlot } ?? .distantPast)
                    .addingTimeInterval(-lookahead)
            )
        }
        for batch in batches.values where batch.done == nil && !batch.leaseOwner.isEmpty && broadcasts[batch.broadcast]?.state == .running {
            let takeOver = batch.expires.addingTimeInterval(takeOverGrace)
            if takeOver >= now { due.append(takeOver) }
        }
        return due.min()
    }

    /// The batch as leased: `batchQuery`.
    func leased(_ id: Int64) -> LeasedBatch? {
        guard let row = batches[id], let broadcast = broadcasts[row.broadcast], let wave = waves[WaveKey(broadcast: row.broadcast, wave: row.wave)],
            let cohort = cohorts.first(where: { $0.broadcast == row.broadcast && $0.wave == row.wave && $0.cohort == row.cohort })
        else { return nil }
        let planned = wave.rate > 0 ? cohort.startsAt.addingTimeInterval(Double(row.firstOrdinal) / wave.rate) : cohort.startsAt
        return LeasedBatch(
            id: row.id,
            broadcastID: row.broadcast,
            wave: row.wave,
            kind: wave.kind,
            cohort: row.cohort,
            firstKey: row.firstKey,
            lastKey: row.lastKey,
            firstOrdinal: row.firstOrdinal,
            devices: row.devices,
            cohortStart: cohort.startsAt,
            rate: wave.rate,
            editionID: broadcast.edition,
            appID: broadcast.app,
            publicationID: 1,
            environment: .production,
            maxPushesPerDevice: broadcast.options.maxPushesPerDevice.audienceCap(wave: row.wave),
            deadline: broadcast.deadline,
            leases: row.leases,
            slotStart: row.slotStart ?? planned,
            readyAlertsFrom: wave.kind == .background ? broadcast.options.lastBackgroundFollowUp(wave: row.wave, deadline: broadcast.deadline) : nil,
            givenBack: row.giveBacks > 0,
            originCapacity: broadcast.origin.flatMap { origins[$0]?.capacity }
        )
    }
}
