import Foundation
import Logging
import PaperboyCore

/// Every statement a worker runs, as one protocol: the seam between ``WorkerExecutor`` and what it keeps its state
/// in. Production's conformance is PostgreSQL (`PostgresWorkerStore`, in PaperboyBroadcast); the simulation's is its
/// model of the same tables (`SimulatedStore`). The same contract suite runs against both.
///
/// Every call may throw: the executor reports a throw to the worker's machine as the call's failure, which retries or
/// leaves the batch to its lease. A call that committed and then threw (its answer lost) is one the machines must
/// survive too.
public protocol WorkerStore: Sendable {
    /// An app as the worker reads it with each batch: what its providers' transport needs to send for it.
    associatedtype App: WorkerApp
    /// An edition as the worker reads it with each batch: what its pushes are made from.
    associatedtype Edition: Sendable

    /// Whether the instants this store answers with (a lease's `leasedAt`, a status report's answer) are its own
    /// clock, which the workers then pace on (PostgreSQL's `now()`); false when they are the worker's own.
    var answersOnItsClock: Bool { get }

    /// Leases the next due batch, or takes one over (``LeaseQuery``); nil when nothing is due.
    func lease(_ query: LeaseQuery, logger: Logger) async throws -> StoreLease?
    /// The batch's devices, in the order its positions name them.
    func targets(of batch: LeasedBatch, now: Date, logger: Logger) async throws -> [BatchTarget]
    func app(id: Int, logger: Logger) async throws -> App?
    func edition(id: UUID, logger: Logger) async throws -> Edition?
    /// The app's holds in `environment` and the providers whose deactivations an operator confirmed there.
    func standing(appID: Int, environment: APNsEnvironment, logger: Logger) async throws -> ProviderStanding
    /// A new slot for the rest of a late batch, from `index`; nil when the lease is not this worker's any more.
    func reclaimSlot(
        _ batch: LeasedBatch,
        from index: Int,
        remaining: Int,
        owner: String,
        now: Date,
        notBefore: Date?,
        logger: Logger
    ) async throws -> Date?
    func renew(_ batches: [LeasedBatch], owner: String, duration: TimeInterval, now: Date, logger: Logger) async throws -> LeaseRenewal
    /// Records every target's outcome and ends the lease; false when the lease is not this worker's any more.
    /// - Parameter configuration: the app's credentials version the batch was sent under.
    func record(
        _ batch: LeasedBatch,
        outcomes: [BatchOutcome],
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool
    /// Records `recorded` and gives the targets at `returned` back to the cohort; false when the lease is lost.
    func giveBack(
        _ batch: LeasedBatch,
        recorded: [BatchOutcome],
        returned: [Int],
        because: BatchSendMachine.GiveBack,
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger
    ) async throws -> Bool
    /// Ends a running broadcast as failed; false when it was not running.
    func fail(broadcast: UUID, reason: String, now: Date, logger: Logger) async throws -> Bool
    func reportProblem(_ problem: SenderHealth.Problem, worker: String, now: Date, logger: Logger) async throws
    func reportSent(_ key: AppProvider, worker: String, now: Date, logger: Logger) async throws
    /// Holds the app's provider for a suspected misconfiguration; false when held already or its configuration changed.
    func raise(_ suspicion: MisconfigurationGuard.Suspicion, by worker: String, logger: Logger) async throws -> Bool
    /// Stores the worker's heartbeat. - Returns: the store's clock when it wrote it (see ``answersOnItsClock``).
    func report(_ status: WorkerStatus, logger: Logger) async throws -> Date?
}

/// What a worker needs of an app to send for it.
public protocol WorkerApp: Sendable {
    var id: Int { get }
    /// Raised by every change of the app's credentials: "not valid" answers to sends under an older one are not the
    /// tokens'.
    var credentialsVersion: Int { get }
}

/// What one lease asks for (``WorkerMachine/LeaseRequest`` with the worker's settings).
public struct LeaseQuery: Sendable, Equatable {
    public var owner: String
    public var now: Date
    public var lookahead: TimeInterval
    public var duration: TimeInterval
    public var batchDuration: TimeInterval
    public var maxBatchSize: Int
    public var excludingBatches: [Int64]
    public var excludingApps: [Int]
    public var excludingProviders: [AppProvider]
    public var takeOver: Bool
    public var takeOverGrace: TimeInterval

    public init(
        owner: String,
        now: Date,
        lookahead: TimeInterval,
        duration: TimeInterval,
        batchDuration: TimeInterval,
        maxBatchSize: Int,
        excludingBatches: [Int64] = [],
        excludingApps: [Int] = [],
        excludingProviders: [AppProvider] = [],
        takeOver: Bool = true,
        takeOverGrace: TimeInterval = 0
    ) {
        self.owner = owner
        self.now = now
        self.lookahead = lookahead
        self.duration = duration
        self.batchDuration = batchDuration
        self.maxBatchSize = maxBatchSize
        self.excludingBatches = excludingBatches
        self.excludingApps = excludingApps
        self.excludingProviders = excludingProviders
        self.takeOver = takeOver
        self.takeOverGrace = takeOverGrace
    }
}

/// A leased batch, with its targets when the lease read them in the same statement (nil: read them with
/// ``WorkerStore/targets(of:now:logger:)``).
public struct StoreLease: Sendable {
    public var batch: LeasedBatch
    public var targets: [BatchTarget]?

    public init(batch: LeasedBatch, targets: [BatchTarget]? = nil) {
        self.batch = batch
        self.targets = targets
    }
}

/// How an app's providers stand in one environment: held (with the hold's reason), and confirmed by an operator.
public struct ProviderStanding: Sendable, Equatable {
    public var held: [PushProvider: String]
    public var confirmed: Set<PushProvider>

    public init(held: [PushProvider: String] = [:], confirmed: Set<PushProvider> = []) {
        self.held = held
        self.confirmed = confirmed
    }
}
