import Foundation

/// When an ended broadcast's receipt tallies are recounted from the receipts (PaperboyStore's `ReceiptTallies`).
///
/// The steps count each receipt in the wave that had last reached its device when it was counted; a broadcast
/// is recounted once, after it has ended, so that its final counts are exactly those of a full count. Not at
/// the instant it ends: a batch a worker holds then (the broadcast cancelled, expired or failed under it) still
/// records its sends when they are answered, and keeps trying while the database cannot take them, for the worker's
/// record patience. After ``settle`` (PaperboyBroadcast's `init(dispatcher:)`: all of that) its deliveries no longer change, so a
/// recount then stays exact: the steps count its later receipts against final deliveries. One recount per call,
/// the most recently ended first (the one an operator is watching); the others, such as broadcasts that ended
/// before the tallies existed, follow one per step.
public struct ReceiptTallyPolicy: Sendable, Equatable {
    /// How long after a broadcast's end its deliveries may still change.
    public var settle: TimeInterval

    /// A broadcast that has ended, as the store reads it for ``due(_:now:)``.
    public struct EndedBroadcast: Sendable, Equatable {
        public var id: UUID
        /// When it ended (the clock of the worker that ended it).
        public var finishedAt: Date
        /// Its last recount (the clock of the worker that recounted it), if any.
        public var recountedAt: Date?

        public init(id: UUID, finishedAt: Date, recountedAt: Date?) {
            self.id = id
            self.finishedAt = finishedAt
            self.recountedAt = recountedAt
        }
    }

    public init(settle: TimeInterval) {
        self.settle = settle
    }

    /// The broadcast to recount at `now`, and the instant a recount must be at or after to be final (the one
    /// another worker may have done meanwhile counts when it is); nil when none is due.
    public func due(_ ended: [EndedBroadcast], now: Date) -> (id: UUID, recountedBefore: Date)? {
        let due = ended.filter { broadcast in
            let settled = broadcast.finishedAt.addingTimeInterval(settle)
            guard settled <= now else { return false }
            guard let recounted = broadcast.recountedAt else { return true }
            return recounted < settled
        }
        guard let latest = due.max(by: { ($0.finishedAt, $0.id.uuidString) < ($1.finishedAt, $1.id.uuidString) }) else { return nil }
        return (latest.id, latest.finishedAt.addingTimeInterval(settle))
    }
}
