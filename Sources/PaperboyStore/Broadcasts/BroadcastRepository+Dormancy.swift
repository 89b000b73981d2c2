import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Wave 1's pushes counted towards dormancy after the wave (migration 0029): a recorded wave-1 batch leaves its
/// accepted background pushes in `uncounted_pushes` (one row); once the wave has nothing left to send, or the
/// broadcast ended, a worker counts them a few batches at a time. The broadcast's next wave waits for it
/// (``LockedBroadcast/firstWavePushesUncounted``), so that its audience leaves out the devices that fell dormant.
extension BroadcastRepository {
    /// What one count of recorded batches did.
    public struct PushCount: Sendable, Equatable {
        /// Recorded batches counted; 0 when none was left to this worker (another may be counting the rest).
        public var batches: Int
        /// Devices whose push counted: a device counted before for the edition (another broadcast of it) is not.
        public var devices: Int
        /// Of those, the devices dormant now (their wave-1 cohorts' `dormant` grew by as many).
        public var dormant: Int

        public init(batches: Int = 0, devices: Int = 0, dormant: Int = 0) {
            self.batches = batches
            self.devices = devices
            self.dormant = dormant
        }

        public static func + (lhs: PushCount, rhs: PushCount) -> PushCount {
            PushCount(batches: lhs.batches + rhs.batches, devices: lhs.devices + rhs.devices, dormant: lhs.dormant + rhs.dormant)
        }
    }

    /// Counts up to `batches` of `broadcast`'s recorded wave-1 batches towards dormancy, in one statement that also
    /// deletes what it counted (``RequestStatements/countPushes(broadcastID:editionID:dormantAfter:batches:)``):
    /// every push is counted once, whichever worker counts it and however often this is retried.
    public func countPushes(of broadcast: Broadcast, batches: Int, logger: Logger) async throws -> PushCount {
        let query = RequestStatements.countPushes(
            broadcastID: broadcast.id,
            editionID: broadcast.editionID,
            dormantAfter: broadcast.options.dormantAfter,
            batches: batches
        )
        var count = PushCount()
        for try await (taken, devices, dormant) in try await client.query(query, logger: logger).decode((Int, Int, Int).self) {
            count = PushCount(batches: taken, devices: devices, dormant: dormant)
        }
        return count
    }

    /// Counts `broadcast`'s recorded wave-1 batches, `batches` per statement, until none is left or `rounds`
    /// statements ran (at 1,000 devices a batch, 16 rounds of 16 are about 250,000 devices, two to three seconds
    /// here: the worker's other duties are not held up for longer).
    public func countAllPushes(of broadcast: Broadcast, batches: Int = 16, rounds: Int = 16, logger: Logger) async throws -> PushCount {
        var total = PushCount()
        for _ in 0..<rounds {
            let count = try await countPushes(of: broadcast, batches: batches, logger: logger)
            guard count.batches > 0 else { break }
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
