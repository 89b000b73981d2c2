import Foundation
import PaperboyCore
import PaperboyDispatch

/// Dormancy as `PostgresWaveStore`'s statements keep it: a recorded wave-1 batch queues its accepted background pushes
/// (`queuePushes`), and the wave driver counts them after the wave (`countPushes`), before a later wave is counted.
extension DispatchModel {
    /// A row of `device_pushes`.
    public struct PushHistory: Sendable, Equatable {
        /// The edition the device's last counted push was for.
        public var edition: UUID
        /// Editions in a row before `edition` that were pushed and got no receipt.
        public var unanswered: Int

        public init(edition: UUID, unanswered: Int) {
            self.edition = edition
            self.unanswered = unanswered
        }
    }

    /// What earlier mornings left: the device's `device_pushes` row and its `dormant` flag.
    public mutating func setHistory(_ device: Int64, _ history: PushHistory, dormant: Bool) {
        pushHistory[device] = history
        devices[device]?.dormant = dormant
    }

    /// `queuePushes`, in the recording's transaction: a wave-1 background batch's accepted pushes (alerts are none).
    mutating func queuePushes(_ batch: LeasedBatch, outcomes: [BatchOutcome]) {
        guard batch.kind == .background && batch.wave == 1 else { return }
        let accepted = outcomes.compactMap { outcome -> Int64? in
            guard case .accepted = outcome.result, !outcome.alert else { return nil }
            return outcome.deviceID
        }
        if !accepted.isEmpty { uncounted[batch.broadcastID, default: []].append(accepted) }
    }

    /// Whether the broadcast has recorded wave-1 pushes not yet counted.
    public func hasUncountedPushes(_ id: UUID) -> Bool {
        !(uncounted[id]?.isEmpty ?? true)
    }

    /// `endedBroadcastsWithUncountedPushes`: the broadcasts not running with pushes left to count.
    public func endedBroadcastsWithUncountedPushes() -> [Broadcast] {
        uncounted.keys.sorted(by: UUID.inStringOrder).compactMap { id in
            guard hasUncountedPushes(id), let broadcast = broadcasts[id], broadcast.state != .running else { return nil }
            return broadcast
        }
    }

    /// `countPushes`: up to `batches` queued batches counted and deleted, each device once, in id order. A device's
    /// first count starts its row at 0; a later one for another edition starts again at 0 when the edition it was
    /// pushed before has a receipt, else adds one; a device counted for this edition before counts nothing. Dormant
    /// when the count reaches the broadcast's `dormantAfter` (never with 0).
    public mutating func countPushes(_ id: UUID, batches: Int) -> WavePushCount {
        guard let broadcast = broadcasts[id], let queued = uncounted[id], !queued.isEmpty else { return WavePushCount() }
        let taken = queued.prefix(batches)
        uncounted[id] = Array(queued.dropFirst(taken.count))
        var counted = 0
        var dormant = 0
        for device in Set(taken.joined()).sorted() {
            let unanswered: Int
            if let history = pushHistory[device] {
                guard history.edition != broadcast.edition else { continue }
                unanswered = receipts[history.edition]?[device] != nil ? 0 : min(history.unanswered + 1, 10_000)
            } else {
                unanswered = 0
            }
            pushHistory[device] = PushHistory(edition: broadcast.edition, unanswered: unanswered)
            let isDormant = broadcast.options.dormantAfter > 0 && unanswered >= broadcast.options.dormantAfter
            if isDormant && devices[device]?.dormant == false { turnedDormant.insert(device) }
            devices[device]?.dormant = isDormant
            counted += 1
            if isDormant { dormant += 1 }
        }
        return WavePushCount(batches: taken.count, devices: counted, dormant: dormant)
    }
}
