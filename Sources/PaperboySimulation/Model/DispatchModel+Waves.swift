import Foundation
import PaperboyCore
import PaperboyDispatch

/// What ``WaveDriver`` does to the tables between waves (`PostgresWaveStore`'s statements), and the readers'
/// receipts arriving.
extension DispatchModel {
    /// `POST /v1/receipts` with a successful result: stored once per device and edition, the first one kept.
    public mutating func receive(device: Int64, edition: UUID, now: Date) {
        if receipts[edition]?[device] == nil { receipts[edition, default: [:]][device] = now }
    }

    /// A registration's alert settings: `alerts_authorized`, `edition_alerts`, `notify_when_ready`.
    public mutating func setAlerts(_ device: Int64, authorized: Bool, editionAlerts: Bool, notifyWhenReady: Bool) {
        devices[device]?.alertsAuthorized = authorized
        devices[device]?.editionAlerts = editionAlerts
        devices[device]?.notifyWhenReady = notifyWhenReady
    }

    public func runningBroadcastIDs() -> [UUID] {
        broadcasts.values.filter { $0.state == .running }.map(\.id).sorted(by: UUID.inStringOrder)
    }

    /// The rows ``WavePolicy`` decides on (`withLockedBroadcast`), nil when not running.
    public func locked(_ id: UUID) -> (broadcast: Broadcast, waves: [StoredWave], workLeft: Bool)? {
        guard let broadcast = broadcasts[id], broadcast.state == .running else { return nil }
        let stored = storedWaves(id)
        var workLeft = false
        if let last = stored.last, !last.finished {
            workLeft =
                cohorts.contains { $0.broadcast == id && $0.wave == last.wave && $0.nextKey < $0.endKey }
                || batches.values.contains { $0.broadcast == id && $0.wave == last.wave && $0.done == nil }
        }
        return (broadcast, stored, workLeft)
    }

    /// The broadcast's waves, in order.
    public func storedWaves(_ id: UUID) -> [StoredWave] {
        var stored: [StoredWave] = []
        var number = 1
        while let wave = waves[WaveKey(broadcast: id, wave: number)] {
            stored.append(StoredWave(wave: number, kind: wave.kind, start: wave.startsAt, rate: wave.rate, finished: wave.finishedAt != nil))
            number += 1
        }
        return stored
    }

    public mutating func finishWave(_ id: UUID, wave: Int, now: Date) {
        waves[WaveKey(broadcast: id, wave: wave)]?.finishedAt = now
    }

    /// `insertWave`: the wave at the plan's rate, each cohort over wave 1's key range from its planned slot; a cohort
    /// planned empty has nothing to carve.
    public mutating func startWave(_ id: UUID, wave: Int, kind: BroadcastProgress.Wave.Kind = .background, plan: StaggerPlan, now: Date) {
        guard let ranges = cohortRanges[id] else { return }
        waves[WaveKey(broadcast: id, wave: wave)] = Wave(kind: kind, rate: plan.rate, startsAt: plan.start)
        for cohort in plan.cohorts where cohort.index < ranges.count {
            let range = ranges[cohort.index]
            cohorts.append(
                Cohort(
                    broadcast: id,
                    wave: wave,
                    cohort: cohort.index,
                    startsAt: cohort.start,
                    nextKey: cohort.devices == 0 ? range.end : range.first,
                    endKey: range.end
                )
            )
        }
    }

    /// `claimCount`: true unless another counter's claim holds; a claim ends when its counts are stored.
    public mutating func claimCount(_ id: UUID, wave: Int, owner: String, seconds: Double, now: Date) -> Bool {
        let key = WaveKey(broadcast: id, wave: wave)
        if let row = counts[key], let until = row.until, until >= now, row.owner != owner { return false }
        counts[key] = (owner, now.addingTimeInterval(seconds), counts[key]?.counts)
        return true
    }

    public mutating func storeCounts(_ stored: WavePolicy.Counts, broadcast id: UUID, wave: Int, owner: String) {
        let key = WaveKey(broadcast: id, wave: wave)
        guard counts[key]?.owner == owner else { return }
        counts[key] = (owner, nil, stored)
    }

    public func storedCounts(_ id: UUID, wave: Int) -> WavePolicy.Counts? {
        counts[WaveKey(broadcast: id, wave: wave)]?.counts
    }

    /// `recordMembers`: the later wave's audience of `kind` now, recorded as its members, counted per cohort.
    public mutating func recordMembers(_ id: UUID, wave: Int, kind: BroadcastProgress.Wave.Kind = .background, now: Date) -> [Int] {
        guard let broadcast = broadcasts[id], let ranges = cohortRanges[id] else { return [] }
        let key = WaveKey(broadcast: id, wave: wave)
        let found = devices.values.filter { inLaterAudience($0, of: broadcast, wave: wave, kind: kind) }
        members[key] = Set(found.map(\.id))
        countedAt[key] = now
        return ranges.map { range in found.count { $0.key >= range.first && $0.key < range.end } }
    }
}

extension UUID {
    /// `a.uuidString < b.uuidString`, from the bytes: the same order (uppercase hex, byte by byte) without formatting
    /// two strings per comparison (their `sprintf` was a tenth of a seed's time when the duties sorted every second).
    static func inStringOrder(_ a: UUID, _ b: UUID) -> Bool {
        withUnsafeBytes(of: a.uuid) { x in withUnsafeBytes(of: b.uuid) { y in x.lexicographicallyPrecedes(y) } }
    }
}
