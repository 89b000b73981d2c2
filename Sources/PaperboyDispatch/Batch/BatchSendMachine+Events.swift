import Foundation
import PaperboyCore

extension BatchSendMachine {
    /// Takes in what happened at `moment` and decides what to do next.
    public mutating func next(_ event: Event, at moment: Moment) -> Decision {
        if let finished { return Decision(action: .finish(finished)) }
        switch event {
        case .started:
            for (provider, state) in providers {
                switch state {
                case .unavailable(let reason): stop(provider, .unavailable(reason))
                case .held(let reason): stop(provider, .held(reason))
                case .ready, .notConfigured: break
                }
            }
        case .tick:
            break
        case .answered(let answers):
            take(answers, at: moment.now)
        case .slotClaimed(let start):
            guard pending.isClaim else { break }
            pending = nil
            failures = 0
            slot = (start, cursor)
            resumeNotBefore = nil
        case .slotClaimFailed:
            guard case .claimSlot = pending else { break }
            retryLater(pending!, at: moment)
        case .leaseRenewed(let until):
            trustedUntil = max(trustedUntil == .infinity ? until : trustedUntil, until)
            if pending == .confirmLease {
                pending = nil
                failures = 0
            }
        case .leaseConfirmFailed:
            guard pending == .confirmLease else { break }
            retryLater(.confirmLease, at: moment)
        case .leaseLost:
            lease = .lost
        case .broadcastCancelled:
            if lease == .held { lease = .cancelled }
            if pending == .confirmLease { pending = nil }
        case .drainStarted(let deadline):
            drainDeadline = min(drainDeadline ?? deadline, deadline)
        case .reachability(let provider, let isUnreachable, let silence):
            unreachable[provider] = isUnreachable ? (silence, unreachable[provider]?.since ?? moment.now) : nil
        case .credentialsReloaded(let provider, let reload):
            guard pending == .reloadCredentials(provider) else { break }
            pending = nil
            reloadDue = nil
            let held = refused.removeValue(forKey: provider) ?? []
            switch reload {
            case .changed(let generation):
                providers[provider] = .ready(generation: generation)
                reloadedTo[provider] = generation
                resend += held
                // Its "not valid for this app" answers were to the configuration before: the batch is recorded under
                // the one read now, so they are asked again with the new credentials, not held under it (found by the
                // simulation: `paperboy-sim`, seed 6521, a wrong bundle id's answers recorded after the fix and the
                // key's rotation, and applied).
                for position in outcomes.indices {
                    guard let outcome = outcomes[position], outcome.provider == provider, case .rejected(_, .deferred) = outcome.result else {
                        continue
                    }
                    outcomes[position] = nil
                    resend.append(position)
                }
                extraRounds += 1
            case .unchanged:
                stop(provider, .refused("\(provider.displayName) refused this worker's credentials, and reading them again found no change"))
            case .failed(let reason):
                stop(provider, .unavailable(reason))
            }
            if reloadDue == nil, let next = refused.keys.sorted(by: { $0.rawValue < $1.rawValue }).first { reloadDue = next }
        case .misconfigured(let provider, let reason):
            stop(provider, .held(reason))
            // Its "token invalid" answers are not the tokens' word now: they go back, not into the ledger.
            for position in outcomes.indices {
                guard let outcome = outcomes[position], outcome.provider == provider, case .rejected(_, .deferred) = outcome.result else {
                    continue
                }
                outcomes[position] = nil
            }
        }
        return decide(moment)
    }

    // MARK: Answers

    mutating func take(_ answers: [Answer], at now: Date) {
        for answer in answers {
            guard let sent = inFlight.removeValue(forKey: answer.position) else { continue }
            let provider = sent.provider
            if lease == .cancelled
                && (answer.credentialsRejected || answer.providerUnavailable || answer.appMisconfigured || answer.result == .notSent)
            {
                outcomes[answer.position] = skipped(answer.position, .cancelled, at: sent.sentAt)
                continue
            }
            if answer.appMisconfigured {
                // Not the device's outcome: every push of the app through this provider would answer the same.
                let reason: String
                if case .rejected(let said, _) = answer.result { reason = said } else { reason = "\(answer.result)" }
                stop(
                    provider,
                    .misconfigured(
                        "\(provider.displayName) answered \(reason): the app's configuration at \(provider.displayName), or the endpoint, is wrong"
                    )
                )
                continue
            }
            if answer.providerUnavailable {
                // Not the device's outcome: sent again once the provider answers, given back when stopping.
                if stopped[provider] != nil || drainDeadline != nil { continue }
                deferred.append(answer.position)
                transientStreak[provider, default: 0] += 1
                if paused[provider] != nil || transientStreak[provider, default: 0] >= configuration.pauseAfter {
                    pause(provider, failedProbe: paused[provider]?.probe == answer.position, at: now)
                }
                continue
            }
            if paused[provider]?.probe == answer.position {
                switch answer.result {
                case .accepted, .rejected:
                    break
                case .notSent, .fateUnknown, .skipped:
                    // The probe never reached the provider, or got no answer: the provider has not answered yet. A
                    // probe never sent waits with the rest; one written is recorded (it may have been delivered).
                    pause(provider, failedProbe: true, at: now)
                    if answer.result == .notSent {
                        deferred.append(answer.position)
                        continue
                    }
                }
            }
            // Any answer from the provider itself (not one the client made up without reaching it) ends its pause.
            switch answer.result {
            case .accepted, .rejected:
                paused[provider] = nil
                transientStreak[provider] = 0
            case .notSent, .fateUnknown, .skipped:
                break
            }
            if answer.credentialsRejected {
                if stopped[provider] != nil { continue }
                if let current = generation(of: provider), answer.generation < current {
                    // Refused with older credentials than the batch has now: sent again with the new ones.
                    resend.append(answer.position)
                } else if reloadedTo[provider] != nil && reloadedTo[provider] == generation(of: provider) {
                    // Refused again after they were read anew: this worker cannot send through this provider.
                    stop(provider, .refused("\(provider.displayName) refused this worker's credentials again after they were read anew"))
                } else {
                    refused[provider, default: []].append(answer.position)
                    if reloadDue == nil { reloadDue = provider }
                }
                continue
            }
            if answer.result == .notSent {
                // Never received: sent again in a later round, or given back when stopping.
                if stopped[provider] != nil || drainDeadline != nil { continue }
                if unreachable[provider] != nil {
                    // Because the provider cannot be reached: not the target's round. It waits with the rest of the
                    // batch until the provider is back (the wait starts again), and goes out then in a new slot.
                    deferred.append(answer.position)
                    waitedForProvider = false
                    continue
                }
                if round < configuration.notSentRounds + extraRounds {
                    resend.append(answer.position)
                    continue
                }
            }
            if case .held = stopped[provider], case .rejected(_, .deferred) = answer.result { continue }
            outcomes[answer.position] = BatchOutcome(
                deviceID: targets[answer.position].deviceID,
                sentAt: sent.sentAt,
                result: answer.result,
                provider: provider,
                alert: sent.readyAlert,
                hint: answer.misconfigurationHint
            )
        }
    }

    // MARK: Helpers

    /// The provider answered that it is busy or failing: paused from now, with a probe after ``Configuration/probe``'s
    /// first step; a failed probe doubles the wait for the next.
    mutating func pause(_ provider: PushProvider, failedProbe: Bool, at now: Date) {
        guard var pause = paused[provider] else {
            paused[provider] = Pause(since: now, probeAt: now.addingTimeInterval(configuration.probe.delay(after: 1)), failures: 1)
            return
        }
        if failedProbe {
            pause.probe = nil
            pause.failures += 1
            pause.probeAt = now.addingTimeInterval(configuration.probe.delay(after: pause.failures))
        }
        paused[provider] = pause
    }

    mutating func stop(_ provider: PushProvider, _ why: Unsendable) {
        if stopped[provider] == nil { stopped[provider] = why }
        if reloadDue == provider { reloadDue = nil }
        paused[provider] = nil
        refused[provider] = nil
        resend.removeAll { targets[$0].provider == provider }
    }

    mutating func retryLater(_ action: Action, at moment: Moment) {
        failures += 1
        pending = nil
        retry = (action, moment.now.addingTimeInterval(configuration.retry.delay(after: failures)))
    }

    func skipped(_ position: Int, _ reason: SkipReason, at instant: Date) -> BatchOutcome {
        BatchOutcome(deviceID: targets[position].deviceID, sentAt: instant, result: .skipped(reason), provider: targets[position].provider)
    }
}

extension Optional where Wrapped == BatchSendMachine.Action {
    var isClaim: Bool {
        if case .claimSlot = self { return true }
        return false
    }
}
