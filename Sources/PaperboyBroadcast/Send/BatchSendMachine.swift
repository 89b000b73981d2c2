import Foundation
import PaperboyCore
import PaperboyStore

/// One leased batch's sending, as pure decisions: given the batch's targets, how its providers stand, and what
/// happened last (time passed, answers came back, a slot was claimed, credentials were read again, the worker
/// began to drain), what the dispatcher does next. ``Dispatcher`` carries the actions out; nothing here does I/O,
/// so every rule below has a test that needs no database, provider or clock (`BatchSendMachineTests`).
///
/// The rules:
/// - **Pacing.** The batch goes out in its slot of the wave's shared timeline: its `n`-th target at the slot's
///   start plus `n / rate` (the wave's rate, or the content origin's capacity when it shares one: its slot is then
///   exclusive on the origin's timeline too); targets due within ``Configuration/tick`` of each other go out together. A batch found
///   more than ``Configuration/catchUpTolerance`` behind its slot (the worker was paused or starved, the database
///   or a provider stalled) claims a new slot for the rest, after the work other workers claimed meanwhile, so a
///   backlog never goes out faster than the plan.
/// - **Skips.** Nothing at or after the edition's deadline; no background push past the device's hourly budget;
///   nothing through a provider the app has no credentials for (``SendRules``). A device whose reader asked to be
///   told gets the ready alert instead of its last background follow-up.
/// - **An unreachable provider.** The batch holds its sends (requests sent then would queue in the client and all
///   go out the moment the provider is back) for up to ``Configuration/unreachablePatience``; then the rest takes a
///   new slot that starts a silence limit later, so that what the provider processes at once on its return and the
///   paced sends do not fall in the same second.
/// - **Never received.** Targets the provider never received (`notSent`) are sent again in a later slot, up to
///   ``Configuration/notSentRounds`` more times; then they are recorded as `notSent`.
/// - **Credentials.** A provider whose credentials cannot be loaded on this worker: the batch is given back whole
///   before anything is sent, for a worker that can. A provider that refuses this worker's credentials (the
///   answer's ``PushVerdict`` is `credentialsRejected`, never a token's fault): before anything else, the
///   credentials are read again once; if they changed, the refused targets are sent again with them; if not, the
///   batch stops and is given back.
/// - **The lease.** Nothing is written under a lease that may have expired: past its local expiry the lease is
///   confirmed first. A lost lease ends the batch at once with nothing recorded (its new holder sends it). A
///   cancelled broadcast records the rest as skipped (`cancelled`).
/// - **Draining** (SIGTERM, or the worker cancelled). Nothing more is written; requests already written are awaited
///   until the drain deadline (then their fate is unknown); every target not yet written, and every pending
///   re-send, is given back to the cohort under the lease: not counted as a push, sent once by another worker.
public struct BatchSendMachine: Sendable {
    struct Configuration: Sendable, Equatable {
        /// Targets due within this many seconds of each other go out together.
        var tick: TimeInterval = 0.02
        /// A batch found this far behind its slot takes a new one for the rest.
        var catchUpTolerance: TimeInterval = 0.05
        /// How long the batch holds its sends for an unreachable provider before it sends anyway.
        var unreachablePatience: TimeInterval = 60
        /// How many more times targets the provider never received are sent, each in a later slot.
        var notSentRounds: Int = 2
    }

    /// How one of the batch's providers stands on this worker when the batch starts.
    enum ProviderState: Sendable, Equatable {
        /// Its client is ready.
        case ready
        /// The app has no credentials for it: its devices are skipped (`apnsNotConfigured`, `fcmNotConfigured`).
        case notConfigured
        /// The app has credentials for it, but this worker cannot load them (a file missing or unreadable, an
        /// environment variable not set): another worker may.
        case unavailable(String)
    }

    /// The lease as the worker knows it.
    enum LeaseState: Sendable, Equatable {
        case held
        /// Its local expiry passed (the worker was paused or starved): it may have been taken over.
        case unconfirmed
        /// Taken over by another lease: stop, record nothing.
        case lost
        /// The broadcast is no longer running (cancelled): the rest is skipped.
        case cancelled
    }

    /// What the worker sees whenever it reports an event.
    struct Conditions: Sendable, Equatable {
        var now: Date
        var lease: LeaseState = .held
        /// A provider of the batch that cannot be reached or does not answer now.
        var unreachable: PushProvider?
        /// The longer silence limit of the batch's providers, in seconds: what a hung provider processes at once
        /// when it is back.
        var silenceLimit: TimeInterval = 0
        /// Set once the worker drains: written requests are awaited until then, nothing more is written.
        var drainDeadline: Date?

        /// Whether the batch may go on sending: its lease held (or to be confirmed), no drain.
        var keepsSending: Bool { (lease == .held || lease == .unconfirmed) && drainDeadline == nil }
    }

    /// What a provider said of one target.
    public struct Answer: Sendable, Equatable {
        public var position: Int
        public var result: BatchOutcome.Result
        /// The provider refused this worker's credentials: the target was not delivered, and nothing is wrong with
        /// its token.
        public var credentialsRejected = false

        public init(position: Int, result: BatchOutcome.Result, credentialsRejected: Bool = false) {
            self.position = position
            self.result = result
            self.credentialsRejected = credentialsRejected
        }
    }

    /// What reading an app's credentials again found.
    enum Reload: Sendable, Equatable {
        /// Different credentials (a rotated key, a new service account): send again with them.
        case changed
        /// The same credentials that were refused.
        case unchanged
        /// They could not be loaded.
        case failed(String)
    }

    enum Event: Sendable, Equatable {
        /// The batch's targets were read and its providers loaded.
        case started
        /// The time waited for came, or the worker was woken (drain, lease news).
        case woke
        case answered([Answer])
        /// A new slot starts here; nil when the lease was lost meanwhile.
        case slotClaimed(Date?)
        /// The wait for an unreachable provider ended (it is back, or patience ran out).
        case providerWaitEnded
        case credentialsReloaded(PushProvider, Reload)
        /// Whether a renewal found the lease still held.
        case leaseConfirmed(Bool)
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
    struct Send: Sendable, Equatable {
        var provider: PushProvider
        var pushes: [Push]
        var sentAt: Date
        /// How long after its planned instant it goes out (within ``Configuration/catchUpTolerance``).
        var late: TimeInterval = 0
    }

    enum Action: Sendable, Equatable {
        /// Wait until this instant, an answer, or news of the lease or a drain, whichever comes first; then
        /// report `.woke` (with any answers first).
        case wait(until: Date)
        /// Wait while the provider is unreachable, at most until this instant; then report `.providerWaitEnded`.
        case waitForProvider(PushProvider, until: Date)
        /// Claim the wave's next free slot for `remaining` targets from target `from`, starting no earlier than
        /// `notBefore`; then report `.slotClaimed`.
        case claimSlot(from: Int, remaining: Int, notBefore: Date?)
        /// Read the app's credentials for this provider again; then report `.credentialsReloaded`.
        case reloadCredentials(PushProvider)
        /// Renew the lease now; then report `.leaseConfirmed`.
        case confirmLease
        /// The batch is over.
        case finish(Completion)
    }

    /// Why targets go back to the cohort.
    enum GiveBack: Sendable, Equatable {
        case draining
        /// This worker cannot send through this provider for the app.
        case credentials(PushProvider, String)
    }

    enum Completion: Sendable, Equatable {
        /// Every target has its outcome.
        case record([BatchOutcome])
        /// Record these, and give the targets at `returned` back to the cohort under the lease.
        case giveBack(recorded: [BatchOutcome], returned: [Int], because: GiveBack)
        /// The lease was lost: record nothing.
        case abandon
    }

    /// What the worker does now: sends to hand to the providers (without waiting for their answers), then the action.
    struct Decision: Sendable, Equatable {
        var sends: [Send] = []
        var action: Action
    }

    // MARK: State

    let batch: LeasedBatch
    let targets: [BatchTarget]
    let providers: [PushProvider: ProviderState]
    /// Whether the ready alert can be sent (the batch is in the last background follow-up's reach, and APNs ready).
    let readyAlerts: Bool
    let configuration: Configuration

    private var outcomes: [BatchOutcome?]
    /// Targets written to a provider and not answered yet, with what was sent.
    private var inFlight: [Int: (provider: PushProvider, sentAt: Date, readyAlert: Bool)] = [:]
    /// The positions of this pass, and the next one to send.
    private var pass: [Int]
    private var cursor = 0
    /// The pass's pacing: `pass[position]` is due at `start + (index - position) / rate`.
    private var slot: (start: Date, position: Int)
    private var round = 0
    /// Extra rounds granted to targets re-sent with new credentials.
    private var extraRounds = 0
    /// Targets to send again in the next round (never received, or refused for credentials that then changed).
    private var resend: [Int] = []
    /// Targets refused for credentials, waiting for them to be read again.
    private var refused: [PushProvider: [Int]] = [:]
    private var reloadDue: PushProvider?
    private var reloaded: Set<PushProvider> = []
    private var waitedForProvider = false
    /// Set while the batch waits for an unreachable provider: the silence limit read when the wait began.
    private var providerWaitSilence: TimeInterval?
    private var resumeNotBefore: Date?
    private var cancelled = false
    private var stopping: (reason: GiveBack, deadline: Date?)?
    private var finished: Completion?

    init(
        batch: LeasedBatch,
        targets: [BatchTarget],
        providers: [PushProvider: ProviderState],
        readyAlerts: Bool,
        configuration: Configuration
    ) {
        self.batch = batch
        self.targets = targets
        self.providers = providers
        self.readyAlerts = readyAlerts && providers[.apns] == .ready
        self.configuration = configuration
        self.outcomes = Array(repeating: nil, count: targets.count)
        self.pass = Array(targets.indices)
        self.slot = (batch.slotStart, 0)
    }

    // MARK: Events

    /// Takes in what happened and decides what to do next.
    mutating func next(_ event: Event, _ conditions: Conditions) -> Decision {
        if let finished { return Decision(action: .finish(finished)) }
        switch event {
        case .started:
            if let (provider, reason) = unavailableProvider() {
                stopping = (.credentials(provider, reason), nil)
            }
        case .woke:
            break
        case .answered(let answers):
            take(answers)
        case .slotClaimed(let start):
            guard let start else { return finish(.abandon) }
            slot = (start, cursor)
            resumeNotBefore = nil
        case .providerWaitEnded:
            resumeNotBefore = conditions.now.addingTimeInterval(providerWaitSilence ?? 0)
            providerWaitSilence = nil
        case .credentialsReloaded(let provider, let reload):
            reloadDue = nil
            reloaded.insert(provider)
            let held = refused.removeValue(forKey: provider) ?? []
            switch reload {
            case .changed:
                resend += held
                extraRounds += 1
            case .unchanged:
                stop(.credentials(provider, "\(provider.displayName) refused this worker's credentials, and reading them again found no change"))
                resend += held
            case .failed(let reason):
                stop(.credentials(provider, reason))
                resend += held
            }
        case .leaseConfirmed(let held):
            guard held else { return finish(.abandon) }
        }
        return decide(conditions)
    }

    /// What is left when the batch is over, for tests.
    var completion: Completion? { finished }

    // MARK: Deciding

    private mutating func decide(_ conditions: Conditions) -> Decision {
        switch conditions.lease {
        case .lost:
            return finish(.abandon)
        case .cancelled where !cancelled:
            cancelled = true
            skipRest(.cancelled, at: conditions.now)
        default:
            break
        }
        if let deadline = conditions.drainDeadline, stopping?.reason != .draining {
            // A drain outranks a give-back for credentials: both give back, the drain has a deadline.
            stopping = (.draining, deadline)
        }
        if stopping == nil, let provider = reloadDue {
            return Decision(action: .reloadCredentials(provider))
        }
        if stopping != nil || cancelled { return wind(conditions) }

        var sends: [Send] = []
        while true {
            if cursor < pass.count {
                let index = cursor
                let instant = due(index)
                if conditions.now < instant { return Decision(sends: sends, action: .wait(until: instant)) }
                if let away = conditions.unreachable, !waitedForProvider {
                    waitedForProvider = true
                    providerWaitSilence = conditions.silenceLimit
                    let giveUp = conditions.now.addingTimeInterval(configuration.unreachablePatience)
                    return Decision(sends: sends, action: .waitForProvider(away, until: giveUp))
                }
                waitedForProvider = waitedForProvider && conditions.unreachable != nil
                if resumeNotBefore != nil || conditions.now.timeIntervalSince(instant) > configuration.catchUpTolerance {
                    return Decision(sends: sends, action: .claimSlot(from: pass[index], remaining: pass.count - index, notBefore: resumeNotBefore))
                }
                if conditions.lease == .unconfirmed { return Decision(sends: sends, action: .confirmLease) }
                var end = index + 1
                while end < pass.count && due(end).timeIntervalSince(instant) < configuration.tick { end += 1 }
                let sentAt = max(instant, conditions.now)
                sends += group(pass[index..<end], sentAt: sentAt, late: sentAt.timeIntervalSince(instant))
                cursor = end
                continue
            }
            if !inFlight.isEmpty { return Decision(sends: sends, action: .wait(until: .distantFuture)) }
            if !resend.isEmpty && round < configuration.notSentRounds + extraRounds {
                round += 1
                pass = resend.sorted()
                resend = []
                cursor = 0
                return Decision(sends: sends, action: .claimSlot(from: pass[0], remaining: pass.count, notBefore: nil))
            }
            for position in resend {
                outcomes[position] = BatchOutcome(
                    deviceID: targets[position].deviceID,
                    sentAt: conditions.now,
                    result: .notSent,
                    provider: targets[position].provider
                )
            }
            resend = []
            return finish(.record(outcomes.compactMap { $0 }), sends: sends)
        }
    }

    /// Stopping (draining, giving back, cancelled): nothing more is written; written requests are awaited until
    /// the deadline, then whatever was not given back is recorded.
    private mutating func wind(_ conditions: Conditions) -> Decision {
        if !inFlight.isEmpty {
            if let deadline = stopping?.deadline, conditions.now < deadline {
                return Decision(action: .wait(until: deadline))
            } else if stopping?.deadline == nil {
                return Decision(action: .wait(until: .distantFuture))
            }
            // The drain deadline passed: what was written may have been delivered, so it is never sent again.
            for (position, sent) in inFlight {
                outcomes[position] = BatchOutcome(
                    deviceID: targets[position].deviceID,
                    sentAt: sent.sentAt,
                    result: .fateUnknown,
                    provider: sent.provider,
                    alert: sent.readyAlert
                )
            }
            inFlight = [:]
        }
        let returned = outcomes.indices.filter { outcomes[$0] == nil }
        guard let stopping, !returned.isEmpty else { return finish(.record(outcomes.compactMap { $0 })) }
        // What goes back is what has no delivery: the next holder reads the batch's targets again, leaving out the
        // devices delivered in this wave. A skipped device has no delivery, so it goes back too (and is judged again
        // then), never counted twice.
        let given = returned + outcomes.indices.filter { outcomes[$0].map(\.isSkip) ?? false }
        return finish(
            .giveBack(recorded: outcomes.compactMap { $0?.isSkip == false ? $0 : nil }, returned: given.sorted(), because: stopping.reason)
        )
    }

    private mutating func finish(_ completion: Completion, sends: [Send] = []) -> Decision {
        finished = completion
        return Decision(sends: sends, action: .finish(completion))
    }

    private mutating func stop(_ reason: GiveBack) {
        if stopping == nil { stopping = (reason, nil) }
    }

    private func due(_ index: Int) -> Date {
        batch.sendRate > 0 ? slot.start.addingTimeInterval(Double(index - slot.position) / batch.sendRate) : slot.start
    }

    private func unavailableProvider() -> (PushProvider, String)? {
        let used = Set(targets.map(\.provider))
        for provider in PushProvider.allCases where used.contains(provider) {
            if case .unavailable(let reason) = providers[provider] { return (provider, reason) }
        }
        return nil
    }

    /// The targets at `positions`, due at `sentAt`: skipped ones get their outcome, the rest are grouped by provider.
    private mutating func group(_ positions: ArraySlice<Int>, sentAt: Date, late: TimeInterval) -> [Send] {
        var byProvider: [PushProvider: [Push]] = [:]
        for position in positions {
            let target = targets[position]
            let readyAlert =
                readyAlerts && target.provider == .apns && target.notifyWhenReady && batch.readyAlertsFrom.map { sentAt >= $0 } == true
            if let reason = SendRules.skipReason(
                for: target,
                kind: readyAlert ? .alert : batch.kind,
                at: sentAt,
                deadline: batch.deadline,
                configured: { providers[$0] == .ready }
            ) {
                outcomes[position] = BatchOutcome(deviceID: target.deviceID, sentAt: sentAt, result: .skipped(reason), provider: target.provider)
                continue
            }
            byProvider[target.provider, default: []].append(Push(position: position, readyAlert: readyAlert))
            inFlight[position] = (target.provider, sentAt, readyAlert)
        }
        return PushProvider.allCases.compactMap { provider in
            byProvider[provider].map { Send(provider: provider, pushes: $0, sentAt: sentAt, late: late) }
        }
    }

    private mutating func take(_ answers: [Answer]) {
        for answer in answers {
            guard let sent = inFlight.removeValue(forKey: answer.position) else { continue }
            if answer.credentialsRejected {
                if reloaded.contains(sent.provider) {
                    // Refused again after they were read anew: this worker cannot send through this provider.
                    stop(
                        .credentials(sent.provider, "\(sent.provider.displayName) refused this worker's credentials again after they were read anew")
                    )
                    resend.append(answer.position)
                } else {
                    refused[sent.provider, default: []].append(answer.position)
                    if reloadDue == nil { reloadDue = sent.provider }
                }
                continue
            }
            if answer.result == .notSent && (stopping != nil || round < configuration.notSentRounds + extraRounds) {
                // Never received: sent again in a later round, or given back when stopping.
                resend.append(answer.position)
                continue
            }
            outcomes[answer.position] = BatchOutcome(
                deviceID: targets[answer.position].deviceID,
                sentAt: sent.sentAt,
                result: answer.result,
                provider: sent.provider,
                alert: sent.readyAlert
            )
        }
    }

    /// Records every target not written and not answered as skipped for `reason`.
    private mutating func skipRest(_ reason: SkipReason, at now: Date) {
        for position in outcomes.indices where outcomes[position] == nil && inFlight[position] == nil {
            outcomes[position] = BatchOutcome(
                deviceID: targets[position].deviceID,
                sentAt: now,
                result: .skipped(reason),
                provider: targets[position].provider
            )
        }
        cursor = pass.count
        resend = []
        refused = [:]
        reloadDue = nil
    }
}

extension PushProvider {
    /// The provider's name in messages: "APNs", "FCM".
    var displayName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        }
    }
}

extension BatchOutcome {
    /// Skipped: nothing was sent, so nothing is recorded in the delivery ledger.
    var isSkip: Bool {
        if case .skipped = result { return true }
        return false
    }
}
