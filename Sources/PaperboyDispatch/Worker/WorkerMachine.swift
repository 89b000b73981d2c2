import Foundation
import PaperboyCore

/// Every decision of one worker, as a pure state machine: when to lease, which batches it holds and what each does
/// next (each a ``BatchSendMachine``), when to renew its leases, how long to retry writing a batch's outcomes, which
/// apps and providers it leaves to other workers (``SenderHealth``), when to hold an app's provider for a suspected
/// misconfiguration (``MisconfigurationGuard``), and how a drain ends.
///
/// Every input is a named ``Event`` (an I/O result, time passing, a drain) and every output an ``Action``; the
/// dispatcher runs each action with one small function and reports what came of it as the next event, and the
/// simulation does the same against its models. So the rules below are tested without I/O (`WorkerMachineTests`) and
/// checked against the cases nobody wrote a test for by seeded simulations (`paperboy-sim`).
///
/// The rules:
/// - **Leasing.** At most ``Configuration/maxBatchesInFlight`` batches held; a lease is asked for at once after a
///   batch was leased or ended, else every ``Configuration/pollInterval``. Nothing is leased while draining. Apps whose
///   every provider this worker cannot send through now are left out, and so are batches given back for a provider it
///   cannot send through.
/// - **Leases.** Renewed every third of ``Configuration/leaseDuration``; a lease is trusted until its duration after
///   the renewal was asked for. A batch whose renewal does not find it lost its lease (unless it is being written: it
///   may have just been recorded); one whose broadcast stopped running is cancelled.
/// - **Writing.** A batch's outcomes (or its give-back) are written until they are, for at most
///   ``Configuration/recordPatience`` (a drain: until its deadline and ``Configuration/drainWriteGrace``), retried with
///   a backoff; past that the batch is left to its lease, and another worker sends it again when it expires.
/// - **Health.** A give-back because this worker cannot load or use an app's credentials for a provider starts a
///   backoff for that app and provider; pushes recorded through it end it. Problems are reported once per backoff.
/// - **Misconfiguration.** Answers are tallied per app and provider; past the guard's threshold the provider is held
///   for the app (reported once), and every batch of the app here stops sending through it.
/// - **Draining.** Every batch is told at once; the worker stops when no batch is left, or at the drain's deadline plus
///   the write grace, leaving what is still unwritten to its lease.
public struct WorkerMachine: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var leaseDuration: TimeInterval = 30
        public var lookahead: TimeInterval = 0.5
        public var batchDuration: TimeInterval = 1
        public var maxBatchSize = 1000
        public var maxBatchesInFlight = 4
        public var pollInterval: TimeInterval = 0.2
        public var drainTimeout: TimeInterval = 10
        public var recordPatience: TimeInterval = 300
        /// After a drain's deadline, how long writing outcomes may still take before the worker stops without them:
        /// what is not written by then is sent again by another worker. Eight seconds, so that a slow database (a
        /// failover, a checkpoint) still records what was sent (1.5 s left accepted devices to be sent twice, issue 47);
        /// with the 10 s drain and the process's 5 s of cancellation, 23.5 s: inside Kubernetes' 30 s grace period.
        public var drainWriteGrace: TimeInterval = 8
        public var batch = BatchSendMachine.Configuration()
        public var retry = RetryBackoff()
        public var misconfiguration = MisconfigurationGuard.Configuration()
        /// At most how often the worker tells the database that it sends for an app through a provider.
        public var reportSentInterval: TimeInterval = 30
        /// How long past a lease's expiry another worker may take its batch over, and, after the database failed a
        /// call, how long past its next answer this worker takes over no expired lease at all: a database away for
        /// longer than a lease expired every lease, and their holders, alive, renew them within a second of its return
        /// (found by the simulation: `paperboy-sim`, seeds 857 and 269). A third of the lease (a heartbeat's interval).
        public var takeOverGrace: TimeInterval { leaseDuration / 3 }

        public init() {}
    }

    /// A leased batch as read: its targets, and how each of its providers stands on this worker.
    public struct BatchContents: Sendable, Equatable {
        public var targets: [BatchTarget]
        public var providers: [PushProvider: BatchSendMachine.ProviderState]
        /// Providers whose pushes for this batch include the ready alert.
        public var readyAlertProviders: Set<PushProvider>
        /// The providers the app has credentials for.
        public var appProviders: Set<PushProvider>
        /// The version of the app's configuration read with the batch (`apps.credentials_version`): a hold is raised
        /// only for answers to the current one.
        public var configuration: Int
        /// Providers whose "not valid" answers an operator confirmed as the tokens' truth for this configuration
        /// (`paperboy apps confirm-deactivations`): the guard does not count them, so the hold it ended is not raised
        /// again by the devices answered after it.
        public var confirmed: Set<PushProvider>

        public init(
            targets: [BatchTarget],
            providers: [PushProvider: BatchSendMachine.ProviderState],
            readyAlertProviders: Set<PushProvider> = [],
            appProviders: Set<PushProvider>,
            configuration: Int = 0,
            confirmed: Set<PushProvider> = []
        ) {
            self.targets = targets
            self.providers = providers
            self.readyAlertProviders = readyAlertProviders
            self.appProviders = appProviders
            self.configuration = configuration
            self.confirmed = confirmed
        }
    }

    /// Why a leased batch could not be read.
    public enum ReadFailure: Sendable, Equatable {
        /// The broadcast cannot be sent at all (its app or edition is gone, a push cannot be built): it fails.
        case broadcast(cause: String, reason: String)
        /// The database did not answer: the batch is left to its lease and sent again when it expires.
        case database(String)
    }

    /// What a lease asks the store for.
    public struct LeaseRequest: Sendable, Equatable {
        /// Batches this worker holds already (it may still be writing one whose lease ran out).
        public var excludingBatches: [Int64]
        /// Apps whose new batches are left to the other workers.
        public var excludingApps: [Int]
        /// Batches given back for these apps' providers are left to the other workers.
        public var excludingProviders: [AppProvider]
        /// Whether another worker's expired lease may be taken over (batches given back may always be taken).
        public var takeOver: Bool = true
        /// How long past its expiry a lease may be taken over.
        public var takeOverGrace: TimeInterval = 10
    }

    public enum Event: Sendable, Equatable {
        /// The worker runs: it reports its status, and leases.
        case started
        /// Time passed: an instant the worker asked to be woken at came.
        case tick
        case leased(LeasedBatch?)
        case leaseFailed(String)
        case batchRead(Int64, BatchContents)
        case batchUnreadable(Int64, ReadFailure)
        /// Answers to sends of the batch, as they come.
        case answered(Int64, [BatchSendMachine.Answer])
        case reachability(Int64, PushProvider, unreachable: Bool, silenceLimit: TimeInterval)
        case slotClaimed(Int64, Date)
        case slotClaimFailed(Int64, String)
        /// The batch's lease is another's now (a slot claim, a confirmation or a write found it).
        case leaseLost(Int64)
        /// The heartbeat's renewal.
        case renewed(LeaseRenewal)
        case renewFailed(String)
        /// One batch's lease confirmed before writing under it.
        case leaseConfirmed(Int64, LeaseRenewal)
        case leaseConfirmFailed(Int64, String)
        case credentialsReloaded(Int64, PushProvider, BatchSendMachine.Reload)
        /// The batch's outcomes (or give-back) were written.
        case written(Int64)
        case writeFailed(Int64, String)
        /// The store holds the app's provider now (``Action/raiseHold(_:)``), or refused it as stale (already held, or
        /// the configuration changed since the answers' sends).
        case holdRaised(HoldKey)
        /// The store could not be asked (``Action/raiseHold(_:)`` failed): the suspicion stands and is raised again at
        /// the next heartbeat; meanwhile this worker's batches keep treating the provider as held.
        case holdNotRaised(HoldKey, String)
        /// SIGTERM (or the worker was cancelled): written requests may take `timeout` to be answered.
        case drainStarted(timeout: TimeInterval)
    }

    public enum Action: Sendable, Equatable {
        case lease(LeaseRequest)
        /// Read the batch's targets, app and edition; then report `batchRead` or `batchUnreadable`.
        case read(LeasedBatch)
        case send(Int64, BatchSendMachine.Send)
        /// Withdraw every send of the batch not written yet.
        case withdraw(Int64)
        case claimSlot(LeasedBatch, from: Int, remaining: Int, notBefore: Date?)
        case renew([LeasedBatch])
        case confirmLease(LeasedBatch)
        /// Read the app's credentials for the provider again, after a refusal of credentials of this generation.
        case reloadCredentials(LeasedBatch, PushProvider, refusedGeneration: Int)
        /// Record the batch's outcomes, or give it back; then report `written`, `leaseLost` or `writeFailed`.
        case write(LeasedBatch, BatchSendMachine.Completion)
        /// End the batch's broadcast as failed: nothing of it can be sent.
        case failBroadcast(LeasedBatch, cause: String, reason: String)
        /// This worker cannot send for the app through the provider (news: once per backoff).
        case reportProblem(SenderHealth.Problem)
        /// This worker sends for the app through the provider; `recovered` when a problem it had is over.
        case reportSent(AppProvider, recovered: Bool)
        /// Hold the app's provider for a suspected misconfiguration; then report `holdRaised`.
        case raiseHold(MisconfigurationGuard.Suspicion)
        /// Tell the `workers` table how this worker stands.
        case reportStatus
        /// The batch is no longer held, and why.
        case ended(LeasedBatch, BatchEnd)
        /// The drain is over: the worker stops.
        case stop
    }

    /// How a batch left the worker.
    public enum BatchEnd: Sendable, Equatable {
        case recorded([BatchOutcome])
        case givenBack(recorded: [BatchOutcome], returned: Int, because: BatchSendMachine.GiveBack)
        /// Its lease was lost before it was written: its new holder sends it.
        case lost
        /// It could not be read (the database); it is sent again when its lease expires.
        case unreadable(String)
        /// Its broadcast cannot be sent.
        case failed
        /// Its outcomes could not be written in time; it is sent again when its lease expires.
        case unwritten(String)
    }

    struct Held: Sendable {
        var batch: LeasedBatch
        var phase: Phase
        /// Until when (monotonic) the lease surely holds.
        var trustedUntil: TimeInterval
        var lost = false
        var cancelled = false
        /// When the confirmation in flight was asked for (monotonic).
        var confirmAskedAt: TimeInterval?
        /// The app's configuration version read with the batch.
        var configuration = 0
        /// The providers whose "not valid" answers an operator confirmed for that version.
        var confirmed: Set<PushProvider> = []
    }

    enum Phase: Sendable {
        case reading
        /// With the instant the batch waits for (nil: news alone).
        case sending(BatchSendMachine, wake: Date?)
        case writing(BatchSendMachine.Completion, failures: Int, retryAt: Date?, giveUpAt: TimeInterval)
    }

    // MARK: State

    public let configuration: Configuration
    var held: [Int64: Held] = [:]
    /// The order batches were leased in, so that actions come out in a stable order.
    var order: [Int64] = []
    public internal(set) var health = SenderHealth()
    var misconfigurations: MisconfigurationGuard
    /// Holds this worker raised that the store has not confirmed yet: its batches treat them as held meanwhile.
    var raisedHolds: [HoldKey: MisconfigurationGuard.Suspicion] = [:]
    /// Of those, the ones the store could not be asked for: raised again at the next heartbeat.
    var holdsToRaiseAgain: Set<HoldKey> = []
    var leasing = false
    /// When the lease in flight was asked for (monotonic): a batch it brings is trusted from then.
    var leaseAskedAt: TimeInterval?
    var nextLeaseAt: Date?
    /// When the heartbeat's renewal in flight was asked for (monotonic), and for which batches.
    var renewing: TimeInterval?
    var renewingIDs: [Int64] = []
    var nextHeartbeat: Date?
    var drainDeadline: Date?
    var stopAt: TimeInterval?
    /// The database failed a call and has not answered since; when it answered again after failing (monotonic).
    var databaseFailing = false
    var databaseBack: TimeInterval?
    /// When the database last answered this worker, and since when it has answered with no silence longer than
    /// ``Configuration/takeOverGrace`` (monotonic).
    var databaseAnsweredAt: TimeInterval?
    var databaseHeardSince: TimeInterval?
    public internal(set) var stopped = false

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.misconfigurations = MisconfigurationGuard(configuration: configuration.misconfiguration)
    }

    /// The batches held now.
    public var batchesHeld: Int { held.count }

    /// Whether batch `id` is sending: only then does it take what its providers' reachability is (before, while it is
    /// read, the event would be dropped, and the change lost with it).
    public func isSending(_ id: Int64) -> Bool {
        if case .sending = held[id]?.phase { return true }
        return false
    }

    /// The providers that batches here found busy or failing (``BatchSendMachine``'s pause), per app and environment,
    /// since the earliest batch's first transient answer: what the worker shows while it waits for them.
    public var providerPauses: [ProviderPause] {
        var since: [ProviderPause.Key: Date] = [:]
        for entry in held.values {
            guard case .sending(let machine, _) = entry.phase else { continue }
            for (provider, start) in machine.pausedProviders {
                let key = ProviderPause.Key(appID: entry.batch.appID, environment: entry.batch.environment, provider: provider)
                since[key] = min(since[key] ?? start, start)
            }
        }
        return since.map { ProviderPause(key: $0.key, since: $0.value) }.sorted { ($0.since, $0.key) < ($1.since, $1.key) }
    }

    /// Keeps track of the database's failures and its return, for ``Configuration/recoveryGrace``.
    mutating func noteDatabase(_ event: Event, at moment: Moment) {
        switch event {
        case .leaseFailed, .batchUnreadable(_, .database), .slotClaimFailed, .renewFailed, .leaseConfirmFailed, .writeFailed, .holdNotRaised:
            databaseFailing = true
        case .leased, .batchRead, .slotClaimed, .renewed, .leaseConfirmed, .written, .holdRaised:
            if databaseFailing {
                databaseFailing = false
                databaseBack = moment.monotonic
            }
            if databaseAnsweredAt.map({ moment.monotonic - $0 > configuration.takeOverGrace }) ?? true {
                databaseHeardSince = moment.monotonic
            }
            databaseAnsweredAt = moment.monotonic
        default:
            break
        }
    }

    /// Whether another worker's expired lease may be taken over now: only by a worker that has heard the database
    /// answer, with no silence longer than the grace, for a whole grace. One that heard nothing for a while (stopped
    /// with SIGSTOP, starved, just started) cannot tell a dead holder from one that the database did not answer
    /// meanwhile: a worker stopped through a database outage took a live holder's batch the moment it woke, the
    /// holder's write of its accepted pushes still waiting for its next try, and sent it again (`paperboy-sim`, seed
    /// 9518).
    func mayTakeOver(at moment: Moment) -> Bool {
        let grace = configuration.takeOverGrace
        guard !databaseFailing, let answered = databaseAnsweredAt, let heard = databaseHeardSince else { return false }
        return moment.monotonic - answered <= grace && moment.monotonic >= heard + grace
            && (databaseBack.map { moment.monotonic >= $0 + grace } ?? true)
    }

    /// Whether the worker drains.
    public var isDraining: Bool { drainDeadline != nil }

    /// When the worker wants to be woken with ``Event/tick`` if nothing else happens first; nil when it waits for news.
    public var nextWake: Date? {
        var wake: [Date?] = [nextHeartbeat]
        if !leasing && !isDraining && held.count < configuration.maxBatchesInFlight { wake.append(nextLeaseAt) }
        for entry in held.values {
            switch entry.phase {
            case .reading: break
            case .sending(_, let instant): wake.append(instant)
            case .writing(_, _, let retryAt, _): wake.append(retryAt)
            }
        }
        if let drainDeadline { wake.append(drainDeadline.addingTimeInterval(configuration.drainWriteGrace)) }
        return wake.compactMap { $0 }.min()
    }

    /// Takes in what happened at `moment` and returns what to do, in order.
    public mutating func handle(_ event: Event, at moment: Moment) -> [Action] {
        guard !stopped else { return [] }
        var actions: [Action] = []
        noteDatabase(event, at: moment)
        switch event {
        case .started:
            nextHeartbeat = moment.now.addingTimeInterval(configuration.leaseDuration / 3)
            nextLeaseAt = moment.now
            actions.append(.reportStatus)
        case .tick:
            break
        case .leased(let batch):
            leasing = false
            if let batch {
                take(batch, at: moment, &actions)
                nextLeaseAt = moment.now
            } else {
                nextLeaseAt = moment.now.addingTimeInterval(configuration.pollInterval)
            }
        case .leaseFailed:
            leasing = false
            nextLeaseAt = moment.now.addingTimeInterval(configuration.pollInterval)
        case .batchRead(let id, let contents):
            start(id, contents, at: moment, &actions)
        case .batchUnreadable(let id, let failure):
            unreadable(id, failure, at: moment, &actions)
        case .answered(let id, let answers):
            answered(id, answers, at: moment, &actions)
        case .reachability(let id, let provider, let unreachable, let silence):
            forward(.reachability(provider, unreachable: unreachable, silenceLimit: silence), to: id, at: moment, &actions)
        case .slotClaimed(let id, let start):
            forward(.slotClaimed(start), to: id, at: moment, &actions)
        case .slotClaimFailed(let id, _):
            forward(.slotClaimFailed, to: id, at: moment, &actions)
        case .leaseLost(let id):
            leaseLost(id, at: moment, &actions)
        case .renewed(let renewal):
            renewed(renewal, at: moment, &actions)
        case .renewFailed:
            // Tried again in a second: after a database outage, the holder renews before anyone may take its batches
            // over (the store waits a grace after a lease expires).
            renewing = nil
            renewingIDs = []
            nextHeartbeat = min(nextHeartbeat ?? moment.now, moment.now.addingTimeInterval(min(1, configuration.leaseDuration / 6)))
        case .leaseConfirmed(let id, let renewal):
            confirmed(id, renewal, at: moment, &actions)
        case .leaseConfirmFailed(let id, _):
            held[id]?.confirmAskedAt = nil
            forward(.leaseConfirmFailed, to: id, at: moment, &actions)
        case .credentialsReloaded(let id, let provider, let reload):
            forward(.credentialsReloaded(provider, reload), to: id, at: moment, &actions)
        case .written(let id):
            written(id, at: moment, &actions)
        case .writeFailed(let id, let error):
            writeFailed(id, error, at: moment, &actions)
        case .holdRaised(let key):
            raisedHolds[key] = nil
            holdsToRaiseAgain.remove(key)
        case .holdNotRaised(let key, _):
            if raisedHolds[key] != nil { holdsToRaiseAgain.insert(key) }
        case .drainStarted(let timeout):
            drain(timeout: timeout, at: moment, &actions)
        }
        due(at: moment, &actions)
        return actions
    }
}
