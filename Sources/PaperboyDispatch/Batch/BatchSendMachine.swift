import Foundation
import PaperboyCore

/// One leased batch's sending, as pure decisions: every input is a named event (time passed, answers came back, a
/// slot was claimed or could not be, the lease was renewed, lost or its broadcast cancelled, a drain began, a provider
/// went quiet, credentials were read again, a misconfiguration was suspected), and every output is what the worker
/// does next. ``WorkerMachine`` feeds it and carries its actions out; nothing here does I/O, so every rule below has
/// a test that needs no database, provider or clock (`BatchSendMachineTests`), and the simulation drives it as it is.
///
/// The rules:
/// - **Pacing.** The batch goes out in its slot of the wave's shared timeline: its `n`-th target at the slot's
///   start plus `n / rate` (the wave's rate, or the content origin's capacity when it shares one: its slot is then
///   exclusive on the origin's timeline too); targets due within ``Configuration/tick`` of each other go out together.
///   A batch found more than ``Configuration/catchUpTolerance`` behind its slot (the worker was paused or starved, the
///   database or a provider stalled) claims a new slot for the rest, after the work other workers claimed meanwhile,
///   so a backlog never goes out faster than the plan. A claim that fails is tried again after a backoff.
/// - **Skips.** Nothing at or after the edition's deadline; no background push past the device's hourly budget;
///   nothing through a provider the app has no credentials for (``SkipRules``). A device whose reader asked to be told
///   gets the ready alert instead of its last background follow-up.
/// - **An unreachable provider.** The batch holds its sends (requests sent then would queue in the client and all go
///   out the moment the provider is back) for up to ``Configuration/unreachablePatience``; then the rest takes a new
///   slot that starts a silence limit later, so that what the provider processes at once on its return and the paced
///   sends do not fall in the same second. A target answered `notSent` while the provider cannot be reached spends no
///   round: it waits with the rest, and the wait starts again, so an outage of any length is a hold until the
///   provider is back or the edition's deadline comes, with one send a patience apart.
/// - **A provider that is down is a pause, never an outcome.** An answer the provider calls transient (429, 500,
///   503, FCM's `UNAVAILABLE`, `INTERNAL`, `QUOTA_EXCEEDED`: ``Answer/providerUnavailable``) is never recorded: the
///   target is deferred and sent again in a later slot; ``Configuration/pauseAfter`` of them in a row pause the
///   provider for the batch, and its other targets are deferred as their instants come, untouched. One target at a time goes to it as a probe, ``Configuration/probe`` apart; the first answer that is
///   not transient ends the pause, and the deferred targets take a new slot after the work claimed meanwhile, so the
///   return is paced at the plan's rate, never a burst. The lease is renewed meanwhile; the edition's deadline skips
///   what is still deferred then; a drain gives it back.
/// - **Never received.** Targets the provider never received (`notSent`) while it could be reached are sent again in a
///   later slot, up to ``Configuration/notSentRounds`` more times; then they are recorded as `notSent`.
/// - **Credentials, per provider.** A provider whose credentials cannot be loaded on this worker, or that is held for a
///   suspected misconfiguration: its targets are given back, the others sent. A provider that refuses this worker's
///   credentials (never a token's fault): the credentials are read again once; if they changed, the refused targets
///   are sent again with them; if not, that provider stops and its targets go back. Every send carries its
///   credentials' generation: a refusal of a send made with older credentials than the current ones is sent again,
///   never counted as a refusal of the new ones.
/// - **The app misconfigured at the provider** (``Answer/appMisconfigured``: `TopicDisallowed`, `BadTopic`, FCM's
///   `THIRD_PARTY_AUTH_ERROR`, a proxy's 404 in the provider's place): never a device's outcome. The provider stops
///   for the batch and its unanswered targets go back, as for credentials this worker cannot use: the worker reports
///   it (`misconfigured`), and the broadcast fails only if nobody can send for `--fail-after`.
/// - **A suspected misconfiguration** (``MisconfigurationGuard``): the provider stops, and its targets answered "token
///   invalid" are given back, not recorded, so that no device is deactivated and each is sent again once fixed.
/// - **The lease.** Nothing is written under a lease that may have expired: past its trusted time the lease is
///   confirmed first. A lost lease ends the batch at once with nothing recorded (its new holder sends it). A
///   cancelled broadcast records the rest as skipped (`cancelled`), answers that came back unsent included.
/// - **Draining** (SIGTERM, or the worker cancelled). Nothing more is written and what was not written is withdrawn
///   at once; requests already written are awaited until the drain deadline (then, and only then, their fate is
///   unknown); every target not written, and every pending re-send, is given back to the cohort under the lease:
///   not counted as a push, sent once by another worker.
///
/// Every target ends in exactly one outcome or goes back: the machine's `completion` accounts for every position.
public struct BatchSendMachine: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Targets due within this many seconds of each other go out together.
        public var tick: TimeInterval = 0.02
        /// A batch found this far behind its slot takes a new one for the rest.
        public var catchUpTolerance: TimeInterval = 0.05
        /// How long the batch holds its sends for an unreachable provider before it sends anyway.
        public var unreachablePatience: TimeInterval = 60
        /// How many more times targets the provider never received are sent, each in a later slot.
        public var notSentRounds: Int = 2
        /// How often the batch looks again at a provider it waits for (the worker learns of reachability when it
        /// wakes).
        public var reachabilityPoll: TimeInterval = 0.05
        /// After a slot claim or a lease confirmation failed (the database), when it is tried again.
        public var retry = RetryBackoff()
        /// While a provider answers that it is busy or failing, when the next single probe goes to it: after the
        /// first such answer, doubling with each probe it fails, up to the limit.
        public var probe = RetryBackoff(first: 1, limit: 30)
        /// How many transient answers in a row, with no other answer between them, pause a provider. Fewer (a
        /// device's own 429, a few 503s of a provider that mostly answers) are sent again in a later slot without
        /// a pause: pausing on every one made a provider failing half its answers crawl at a probe a second.
        public var pauseAfter = 10

        public init() {}
    }

    /// How one of the batch's providers stands on this worker when the batch starts.
    public enum ProviderState: Sendable, Equatable {
        /// Its client is ready, with the credentials of this generation (``Answer/generation``).
        case ready(generation: Int)
        /// The app has no credentials for it: its devices are skipped (`apnsNotConfigured`, `fcmNotConfigured`).
        case notConfigured
        /// The app has credentials for it, but this worker cannot load them (a file missing or unreadable, an
        /// environment variable not set): another worker may. Its targets go back.
        case unavailable(String)
        /// Sending through it for this app is held for a suspected misconfiguration (``MisconfigurationGuard``): its
        /// targets go back until an operator fixes or confirms it.
        case held(String)
    }

    /// What a provider said of one target.
    public struct Answer: Sendable, Equatable {
        public var position: Int
        public var result: BatchOutcome.Result
        /// The provider refused this worker's credentials: the target was not delivered, and nothing is wrong with
        /// its token.
        public var credentialsRejected: Bool
        /// The provider is busy or failing (429, 500, 503, FCM's `UNAVAILABLE`): it did not take the message, and the
        /// target is sent again once the provider answers. Never recorded.
        public var providerUnavailable: Bool
        /// The app's configuration at the provider, or the endpoint, is wrong (`TopicDisallowed`, `BadTopic`, FCM's
        /// `THIRD_PARTY_AUTH_ERROR`, a proxy's 404): no push of the app can succeed through it, whatever the device.
        /// Never recorded: the provider stops for the batch and its targets go back.
        public var appMisconfigured: Bool
        /// The generation of the credentials it was sent with (``Send/generation``).
        public var generation: Int
        /// Set when the provider said the token is not valid for this app (its deactivation is then `deferred`):
        /// what that means when every device hears it, e.g. "the app's bundle id is not the one its devices
        /// registered with" (``MisconfigurationGuard``).
        public var misconfigurationHint: String?

        public init(
            position: Int,
            result: BatchOutcome.Result,
            credentialsRejected: Bool = false,
            providerUnavailable: Bool = false,
            appMisconfigured: Bool = false,
            generation: Int = 0,
            misconfigurationHint: String? = nil
        ) {
            self.position = position
            self.result = result
            self.credentialsRejected = credentialsRejected
            self.providerUnavailable = providerUnavailable
            self.appMisconfigured = appMisconfigured
            self.generation = generation
            self.misconfigurationHint = misconfigurationHint
        }
    }

    /// What reading an app's credentials again found.
    public enum Reload: Sendable, Equatable {
        /// Credentials newer than the ones refused (a rotated key, a new service account), of this generation.
        case changed(generation: Int)
        /// The same credentials that were refused.
        case unchanged
        /// They could not be loaded.
        case failed(String)
    }

    public enum Event: Sendable, Equatable {
        /// The batch's targets were read and its providers loaded.
        case started
        /// Time passed: an instant the batch waited for came.
        case tick
        case answered([Answer])
        /// A new slot starts here.
        case slotClaimed(Date)
        /// The database could not claim a slot: tried again after a backoff.
        case slotClaimFailed
        /// The lease was renewed (or confirmed): it holds until this monotonic instant.
        case leaseRenewed(trustedUntil: TimeInterval)
        /// Another worker holds the batch now.
        case leaseLost
        /// The broadcast is no longer running.
        case broadcastCancelled
        /// A confirmation of the lease could not be made (the database): tried again after a backoff.
        case leaseConfirmFailed
        /// The worker drains: nothing more is written, and what was written is awaited until `deadline`.
        case drainStarted(deadline: Date)
        /// A provider can be reached again, or cannot (with how long its connections may stay silent).
        case reachability(PushProvider, unreachable: Bool, silenceLimit: TimeInterval)
        case credentialsReloaded(PushProvider, Reload)
        /// The worker suspects the app's configuration for this provider (``MisconfigurationGuard``).
        case misconfigured(PushProvider, String)
    }

    /// What goes in one send to a provider: a target and which push it gets.
    public struct Push: Sendable, Equatable {
        /// The target's index in the batch.
        public var position: Int
        /// The ready alert in place of a background follow-up.
        public var readyAlert: Bool

        public init(position: Int, readyAlert: Bool) {
            self.position = position
            self.readyAlert = readyAlert
        }
    }

    /// Targets handed to one provider at one instant.
    public struct Send: Sendable, Equatable {
        public var provider: PushProvider
        public var pushes: [Push]
        public var sentAt: Date
        /// How long after its planned instant it goes out (within ``Configuration/catchUpTolerance``).
        public var late: TimeInterval = 0
        /// The credentials to send with: their answers carry it back.
        public var generation: Int = 0
    }

    public enum Action: Sendable, Equatable {
        /// Wait until this instant, an answer, or other news, whichever comes first. `distantFuture`: for news alone.
        case wait(until: Date)
        /// Claim the wave's next free slot for `remaining` targets from target `from`, starting no earlier than
        /// `notBefore`; then report `slotClaimed`, `slotClaimFailed` or `leaseLost`.
        case claimSlot(from: Int, remaining: Int, notBefore: Date?)
        /// Read the app's credentials for this provider again; then report `credentialsReloaded`.
        case reloadCredentials(PushProvider)
        /// Renew the lease now; then report `leaseRenewed`, `leaseLost`, `broadcastCancelled` or `leaseConfirmFailed`.
        case confirmLease
        /// The batch is over.
        case finish(Completion)
    }

    /// What the worker does now: sends to hand to the providers (without waiting for their answers), whether to
    /// withdraw what was handed over and not written yet, then the action.
    public struct Decision: Sendable, Equatable {
        public var sends: [Send] = []
        /// Withdraw every send of the batch not written yet (their answers come back `notSent` at once).
        public var withdraw = false
        public var action: Action

        public init(sends: [Send] = [], withdraw: Bool = false, action: Action) {
            self.sends = sends
            self.withdraw = withdraw
            self.action = action
        }
    }

    // MARK: State

    public let batch: LeasedBatch
    public let targets: [BatchTarget]
    let configuration: Configuration
    /// Providers whose pushes include the ready alert.
    let readyAlertProviders: Set<PushProvider>

    var providers: [PushProvider: ProviderState]
    var outcomes: [BatchOutcome?]
    /// Targets handed to a provider and not answered yet, with what was sent.
    var inFlight: [Int: InFlight] = [:]
    /// The positions of this pass, and the next one to send.
    var pass: [Int]
    var cursor = 0
    /// The pass's pacing: `pass[position]` is due at `start + (index - position) / rate`.
    var slot: (start: Date, position: Int)
    var round = 0
    /// Extra rounds granted to targets re-sent with new credentials.
    var extraRounds = 0
    /// Targets to send again in the next round (never received, or refused for credentials that then changed).
    var resend: [Int] = []
    /// Targets refused for credentials, waiting for them to be read again.
    var refused: [PushProvider: [Int]] = [:]
    var reloadDue: PushProvider?
    /// The generation each provider's credentials were read again to, after a refusal.
    var reloadedTo: [PushProvider: Int] = [:]
    /// Providers that stopped for this batch, and why: their targets go back.
    var stopped: [PushProvider: Unsendable] = [:]
    /// An action whose event has not come yet: nothing else is asked meanwhile.
    var pending: Action?
    /// An action to ask again at this instant, after it failed, and how many times in a row it failed.
    var retry: (action: Action, at: Date)?
    var failures = 0
    var lease = LeaseState.held
    /// Until when (monotonic) the lease surely holds.
    var trustedUntil: TimeInterval
    var drainDeadline: Date?
    var withdrawn = false
    var cancelApplied = false
    /// Providers answering that they are busy or failing: since when, when the next probe goes, how many probes
    /// failed, and the probe in flight.
    var paused: [PushProvider: Pause] = [:]
    /// Transient answers in a row per provider, since its last other answer.
    var transientStreak: [PushProvider: Int] = [:]
    /// Targets not sent, or answered transiently, while their provider was paused: sent again once it answers.
    var deferred: [Int] = []
    /// Providers that cannot be reached now: their silence limits, and since when the batch knows it.
    var unreachable: [PushProvider: (silence: TimeInterval, since: Date)] = [:]
    /// Set while the batch waits for an unreachable provider: until when, and the silence limit read when it began.
    var providerWait: (until: Date, silence: TimeInterval)?
    var waitedForProvider = false
    var resumeNotBefore: Date?
    var finished: Completion?

    struct Pause: Sendable, Equatable {
        var since: Date
        var probeAt: Date
        var failures: Int
        var probe: Int?
    }

    struct InFlight: Sendable {
        var provider: PushProvider
        var sentAt: Date
        var readyAlert: Bool
        var generation: Int
    }

    enum LeaseState: Sendable, Equatable {
        case held
        /// Taken over by another lease: stop, record nothing.
        case lost
        /// The broadcast is no longer running (cancelled): the rest is skipped.
        case cancelled
    }

    /// - Parameters:
    ///   - trustedUntil: until when (monotonic) the lease surely holds: from before it was asked for, plus its duration.
    ///   - readyAlertProviders: the providers whose pushes include the ready alert (none when the batch is not in the
    ///     last background follow-up's reach).
    public init(
        batch: LeasedBatch,
        targets: [BatchTarget],
        providers: [PushProvider: ProviderState],
        readyAlertProviders: Set<PushProvider> = [],
        trustedUntil: TimeInterval = .infinity,
        configuration: Configuration = Configuration()
    ) {
        self.batch = batch
        self.targets = targets
        self.providers = providers
        self.readyAlertProviders = readyAlertProviders.filter { if case .ready = providers[$0] { true } else { false } }
        self.trustedUntil = trustedUntil
        self.configuration = configuration
        self.outcomes = Array(repeating: nil, count: targets.count)
        self.pass = Array(targets.indices)
        self.slot = (batch.slotStart, 0)
    }

    /// What is left when the batch is over.
    public var completion: Completion? { finished }

    /// The providers this batch found busy or failing, and since when: nothing but a probe goes to them. And those it
    /// holds its sends for because they cannot be reached (a connect refused or timed out), since it heard so: a hold
    /// of any length now, so it is shown as a pause is (the status, `/metrics`, the alert), not left to be inferred from
    /// a broadcast falling behind.
    public var pausedProviders: [PushProvider: Date] {
        var since = paused.mapValues(\.since)
        for (provider, away) in away { since[provider] = min(since[provider] ?? away.since, away.since) }
        return since
    }

    /// The unreachable providers the batch still sends through (not stopped, with credentials): those it waits for.
    var away: [PushProvider: (silence: TimeInterval, since: Date)] {
        unreachable.filter { stopped[$0.key] == nil && generation(of: $0.key) != nil }
    }

    /// Whether the batch holds requests written to a provider and not answered yet.
    public var hasInFlight: Bool { !inFlight.isEmpty }

    /// The generation of the credentials the batch sends with through `provider`, if it sends through it.
    public func generation(of provider: PushProvider) -> Int? {
        if case .ready(let generation) = providers[provider] { return generation }
        return nil
    }
}
