import Foundation
import Logging
import PaperboyCore

/// Every statement that moves a broadcast from wave to wave, as one protocol: the seam between ``WaveDriver`` and what
/// it keeps its state in. Production's conformance is PostgreSQL (`PostgresWaveStore`, in PaperboyBroadcast); the
/// simulation's is its model of the same tables (`SimulatedWaveStore`), so that `paperboy-sim` runs the same driver and
/// the same ``WavePolicy`` through whole mornings: later waves, receipts arriving between them, completion and expiry.
public protocol WaveStore: Sendable {
    associatedtype Broadcast: WaveBroadcast
    associatedtype Locked: LockedWaves where Locked.Broadcast == Broadcast

    /// Broadcasts that ended (cancelled, expired, failed) with wave-1 pushes not yet counted towards dormancy.
    func endedBroadcastsWithUncountedPushes(logger: Logger) async throws -> [Broadcast]
    /// Counts some of `broadcast`'s recorded wave-1 pushes towards dormancy (a few batches a call).
    func countPushes(of broadcast: Broadcast, logger: Logger) async throws -> WavePushCount
    func runningBroadcastIDs(logger: Logger) async throws -> [UUID]
    /// Runs `body` with the broadcast locked, when it is running and nobody else holds it; nil otherwise, at once.
    func withLockedBroadcast<Result: Sendable>(_ id: UUID, logger: Logger, _ body: (Locked) async throws -> Result) async throws -> Result?
    /// The counts another driver stored for wave `wave`, if any.
    func storedCounts(broadcastID: UUID, wave: Int, logger: Logger) async throws -> WavePolicy.Counts?
    /// Claims the count of `wave` for `owner` for `seconds`: false while another driver's claim holds.
    func claimCount(broadcastID: UUID, wave: Int, owner: String, seconds: Double, logger: Logger) async throws -> Bool
    /// Stores the counts `owner` took and ends its claim (nothing when its claim was taken over).
    func storeCounts(_ counts: WavePolicy.Counts, broadcastID: UUID, wave: Int, owner: String, now: Date, logger: Logger) async throws
    /// Records wave `wave`'s members of `kind` (the devices its batches will be carved from) and returns how many per
    /// cohort.
    func recordMembers(of broadcast: Broadcast, wave: Int, kind: BroadcastProgress.Wave.Kind, logger: Logger) async throws -> [Int]
}

/// What the driver reads of a broadcast.
public protocol WaveBroadcast: Sendable {
    var id: UUID { get }
    var deadline: Date { get }
    var options: BroadcastOptions { get }
}

/// A running broadcast held under its lock: the rows ``WavePolicy`` decides on and the writes that may follow.
public protocol LockedWaves: Sendable {
    associatedtype Broadcast: WaveBroadcast
    var broadcast: Broadcast { get }
    /// Its waves, in order.
    var waves: [StoredWave] { get }
    /// Wave 1's cohorts as planned, in cohort order.
    var firstWaveCohorts: [StaggerPlan.Cohort] { get }
    /// Whether the last wave still has devices to carve into batches, or batches not yet recorded.
    var lastWaveHasWorkLeft: Bool { get }
    /// Whether wave 1 has recorded pushes not yet counted towards dormancy.
    var firstWavePushesUncounted: Bool { get }
    func finishWave(_ wave: Int, now: Date) async throws
    /// Stores wave `wave` with its plan and cohorts.
    func startWave(_ wave: Int, kind: BroadcastProgress.Wave.Kind, plan: StaggerPlan, now: Date) async throws
    /// Ends the broadcast in `state` (`completed` or `expired`).
    func finish(_ state: BroadcastProgress.State, now: Date) async throws
}

/// What one count of recorded wave-1 batches towards dormancy did.
public struct WavePushCount: Sendable, Equatable {
    /// Recorded batches taken: counted (the model), or sorted by key to be counted by range (PostgreSQL).
    public var batches: Int
    /// Key ranges of sorted batches counted (PostgreSQL; the model counts batches as they are).
    public var ranges: Int
    /// Devices whose push counted.
    public var devices: Int
    /// Of those, the devices dormant now.
    public var dormant: Int

    public init(batches: Int = 0, ranges: Int = 0, devices: Int = 0, dormant: Int = 0) {
        self.batches = batches
        self.ranges = ranges
        self.devices = devices
        self.dormant = dormant
    }

    /// Nothing was left to this driver.
    public var isEmpty: Bool { batches == 0 && ranges == 0 }
}

/// What moving a broadcast along did.
public enum BroadcastEvent: Sendable, Equatable {
    case waveStarted(broadcast: UUID, wave: Int, kind: BroadcastProgress.Wave.Kind, planned: Int, start: Date)
    case waveFinished(broadcast: UUID, wave: Int)
    case completed(broadcast: UUID)
    case expired(broadcast: UUID)
}
