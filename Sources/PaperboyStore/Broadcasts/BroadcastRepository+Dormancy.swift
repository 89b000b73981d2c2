import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Wave 1's pushes counted towards dormancy after the wave (migration 0029): a recorded wave-1 batch leaves its
/// accepted background pushes in `uncounted_pushes` (one row); once the wave has nothing left to send, or the
/// broadcast ended, a worker sorts them by key and counts them a key range at a time (migration 0039). The
/// broadcast's next wave waits for it (``LockedBroadcast/firstWavePushesUncounted``), so that its audience leaves out
/// the devices that fell dormant.
extension BroadcastRepository {
    /// What counting recorded batches did.
    public struct PushCount: Sendable, Equatable {
        /// Recorded batches sorted by key, to be counted by range (migration 0039).
        public var sorted: Int
        /// Key ranges counted.
        public var ranges: Int
        /// Devices whose push counted: a device counted before for the edition (another broadcast of it) is not.
        public var devices: Int
        /// Of those, the devices dormant now (their wave-1 cohorts' `dormant` grew by as many).
        public var dormant: Int

        public init(sorted: Int = 0, ranges: Int = 0, devices: Int = 0, dormant: Int = 0) {
            self.sorted = sorted
            self.ranges = ranges
            self.devices = devices
            self.dormant = dormant
        }

        /// Nothing was left to this worker: another may be counting the rest.
        public var isEmpty: Bool { sorted == 0 && ranges == 0 }

        public static func + (lhs: PushCount, rhs: PushCount) -> PushCount {
            PushCount(
                sorted: lhs.sorted + rhs.sorted,
                ranges: lhs.ranges + rhs.ranges,
                devices: lhs.devices + rhs.devices,
                dormant: lhs.dormant + rhs.dormant
            )
        }
    }

    /// One statement of the count: while recorded batches are left, sorts up to `batches` of them by key
    /// (``RequestStatements/sortPushes(broadcastID:batches:)``); then counts one key range towards dormancy, in a
    /// statement that also deletes what it counted (``RequestStatements/countPushes(broadcastID:editionID:dormantAfter:)``):
    /// every push is counted once, whichever worker counts it and however often this is retried. Sorting first
    /// makes the count read each page once for the neighbours on it, not once per device.
    public func countPushes(of broadcast: Broadcast, batches: Int = 64, logger: Logger) async throws -> PushCount {
        let sort = RequestStatements.sortPushes(broadcastID: broadcast.id, batches: batches)
        var sorted = 0
        for try await (taken, _) in try await client.query(sort, logger: logger).decode((Int, Int).self) { sorted = taken }
        guard sorted == 0 else { return PushCount(sorted: sorted) }
        let query = RequestStatements.countPushes(
            broadcastID: broadcast.id,
            editionID: broadcast.editionID,
            dormantAfter: broadcast.options.dormantAfter
        )
        var count = PushCount()
        for try await (taken, devices, dormant) in try await client.query(query, logger: logger).decode((Int, Int, Int).self) where taken > 0 {
            count = PushCount(ranges: 1, devices: devices, dormant: dormant)
        }
        return count
    }

    /// Counts `broadcast`'s recorded wave-1 batches, a statement at a time (``countPushes(of:batches:logger:)``),
    /// until none is left or `rounds` statements ran: at most 1,024 batches sorted, or 16 key ranges of up to 16,384
    /// devices counted, a second or two here, so that the worker's other duties are not held up for longer.
    public func countAllPushes(of broadcast: Broadcast, batches: Int = 64, rounds: Int = 16, logger: Logger) async throws -> PushCount {
        var total = PushCount()
        for _ in 0..<rounds {
            let count = try await countPushes(of: broadcast, batches: batches, logger: logger)
            guard !count.isEmpty else { break }
            total = total + count
        }
        return total
    }

    /// The broadcasts that are no longer running (cancelled, expired, failed) with recorded wave-1 pushes not yet
    /// counted: the running ones are counted as their wave policy asks.
    public func endedBroadcastsWithUncountedPushes(logger: Logger) async throws -> [Broadcast] {
        try await select(RequestStatements.endedBroadcastsWithUncountedPushes, logger: logger)
    }
}
