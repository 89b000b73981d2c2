/// What renewing a worker's leases found.
public struct LeaseRenewal: Sendable, Equatable {
    /// The batches still held; a batch missing from it must not be sent on.
    public var held: Set<Int64>
    /// Held batches whose broadcast is no longer running (cancelled): their unsent devices are recorded as skipped.
    public var stopped: Set<Int64>

    public init(held: Set<Int64> = [], stopped: Set<Int64> = []) {
        self.held = held
        self.stopped = stopped
    }
}
