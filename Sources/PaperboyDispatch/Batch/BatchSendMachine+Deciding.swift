import Foundation
import PaperboyCore

extension BatchSendMachine {
    mutating func decide(_ moment: Moment) -> Decision {
        let now = moment.now
        if lease == .lost { return finish(.abandon) }
        if lease == .cancelled && !cancelApplied {
            cancelApplied = true
            skipRest(.cancelled, at: now)
        }
        var withdraw = false
        if drainDeadline != nil && !withdrawn {
            withdrawn = true
            withdraw = true
        }
        if drainDeadline != nil || lease == .cancelled { return wind(moment, withdraw: withdraw) }
        if pending != nil { return Decision(withdraw: withdraw, action: .wait(until: .distantFuture)) }
        if let retry {
            if now < retry.at { return Decision(withdraw: withdraw, action: .wait(until: retry.at)) }
            self.retry = nil
            pending = retry.action
            return Decision(withdraw: withdraw, action: retry.action)
        }
        if let provider = reloadDue {
            pending = .reloadCredentials(provider)
            return Decision(action: .reloadCredentials(provider))
        }

        var sends: [Send] = []
        if !deferred.isEmpty && now >= batch.deadline {
            // The edition's deadline ended the pause for what waited on it: nothing is sent after it.
            for position in deferred { outcomes[position] = skipped(position, .deadline, at: now) }
            deferred = []
            paused = [:]
        }
        while true {
            while cursor < pass.count && stopped[targets[pass[cursor]].provider] != nil { cursor += 1 }
            if cursor < pass.count {
                let index = cursor
                let instant = due(index)
                if now < instant { return Decision(sends: sends, action: .wait(until: instant)) }
                if let wait = waitForProvider(now) { return Decision(sends: sends, action: wait) }
                if resumeNotBefore != nil || now.timeIntervalSince(instant) > configuration.catchUpTolerance {
                    let action = Action.claimSlot(from: pass[index], remaining: pass.count - index, notBefore: resumeNotBefore)
                    pending = action
                    return Decision(sends: sends, action: action)
                }
                if moment.monotonic > trustedUntil {
                    pending = .confirmLease
                    return Decision(sends: sends, action: .confirmLease)
                }
                var end = index + 1
                while end < pass.count && due(end).timeIntervalSince(instant) < configuration.tick { end += 1 }
                let sentAt = max(instant, now)
                sends += group(pass[index..<end], sentAt: sentAt, late: sentAt.timeIntervalSince(instant))
                cursor = end
                continue
            }
            if !inFlight.isEmpty { return Decision(sends: sends, action: .wait(until: .distantFuture)) }
            // What waits for a paused provider waits for its next probe (or the deadline); then it all takes a new
            // slot, in which the first of it due is the probe and the rest is deferred again until the provider
            // answers: probes go out in the plan's slots, never on top of them.
            if let wake = nextProbe, now < wake { return Decision(sends: sends, action: .wait(until: wake)) }
            resend.removeAll { stopped[targets[$0].provider] != nil }
            deferred.removeAll { stopped[targets[$0].provider] != nil }
            var again = deferred
            deferred = []
            if !resend.isEmpty && round < configuration.notSentRounds + extraRounds {
                round += 1
                again += resend
            } else {
                for position in resend {
                    outcomes[position] = BatchOutcome(
                        deviceID: targets[position].deviceID,
                        sentAt: now,
                        result: .notSent,
                        provider: targets[position].provider
                    )
                }
            }
            resend = []
            if !again.isEmpty {
                // A new slot after the work claimed meanwhile: what a pause held back goes out at the plan's rate.
                pass = again.sorted()
                cursor = 0
                let action = Action.claimSlot(from: pass[0], remaining: pass.count, notBefore: nil)
                pending = action
                return Decision(sends: sends, action: action)
            }
            return complete(sends: sends)
        }
    }

    /// When the batch next has to look at a paused provider: its next probe, or the deadline that ends the wait.
    /// Nil when nothing waits for a paused provider.
    var nextProbe: Date? {
        let probes = paused.compactMap { provider, pause -> Date? in
            pause.probe == nil && deferred.contains { targets[$0].provider == provider } ? pause.probeAt : nil
        }
        guard let first = probes.min() else { return nil }
        return min(first, batch.deadline)
    }

    /// Holding the sends while a provider of the batch cannot be reached: at most ``Configuration/unreachablePatience``,
    /// looking again every ``Configuration/reachabilityPoll``; once it ended, the rest takes a slot a silence limit
    /// later. Nil when nothing holds the batch.
    mutating func waitForProvider(_ now: Date) -> Action? {
        let away = self.away
        if let wait = providerWait {
            if !away.isEmpty && now < wait.until {
                return .wait(until: min(wait.until, now.addingTimeInterval(configuration.reachabilityPoll)))
            }
            providerWait = nil
            resumeNotBefore = now.addingTimeInterval(wait.silence)
            return nil
        }
        if !away.isEmpty && !waitedForProvider {
            waitedForProvider = true
            providerWait = (now.addingTimeInterval(configuration.unreachablePatience), away.values.map(\.silence).max() ?? 0)
            return .wait(until: min(providerWait!.until, now.addingTimeInterval(configuration.reachabilityPoll)))
        }
        waitedForProvider = waitedForProvider && !away.isEmpty
        return nil
    }

    /// Stopping (draining, or cancelled): nothing more is written; written requests are awaited until the drain's
    /// deadline, then whatever was not given back is recorded.
    mutating func wind(_ moment: Moment, withdraw: Bool) -> Decision {
        if !inFlight.isEmpty {
            if let deadline = drainDeadline {
                if moment.now < deadline { return Decision(withdraw: withdraw, action: .wait(until: deadline)) }
                // The drain's deadline passed: what was written may have been delivered, so it is never sent again.
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
            } else {
                // Cancelled: the answers of what was written come (the clients time out), and are recorded.
                return Decision(withdraw: withdraw, action: .wait(until: .distantFuture))
            }
        }
        var decision = complete(sends: [])
        decision.withdraw = withdraw
        return decision
    }

    /// The batch is over: every target has its outcome, or goes back.
    mutating func complete(sends: [Send]) -> Decision {
        let returned = outcomes.indices.filter { outcomes[$0] == nil }
        guard !returned.isEmpty else { return finish(.record(outcomes.compactMap { $0 }), sends: sends) }
        // What goes back is what has no delivery: the next holder reads the batch's targets again, leaving out the
        // devices delivered in this wave. A skipped device has no delivery, so it goes back too (and is judged again
        // then), never counted twice.
        let given = returned + outcomes.indices.filter { outcomes[$0].map(\.isSkip) ?? false }
        let because = GiveBack(draining: drainDeadline != nil, providers: drainDeadline != nil ? [:] : stopped)
        return finish(
            .giveBack(recorded: outcomes.compactMap { $0?.isSkip == false ? $0 : nil }, returned: given.sorted(), because: because),
            sends: sends
        )
    }

    mutating func finish(_ completion: Completion, sends: [Send] = []) -> Decision {
        finished = completion
        return Decision(sends: sends, action: .finish(completion))
    }

    func due(_ index: Int) -> Date {
        batch.sendRate > 0 ? slot.start.addingTimeInterval(Double(index - slot.position) / batch.sendRate) : slot.start
    }

    /// The targets at `positions`, due at `sentAt`: skipped ones get their outcome, those of a paused provider are
    /// deferred but for one probe once its instant came, the rest are grouped by provider.
    mutating func group(_ positions: ArraySlice<Int>, sentAt: Date, late: TimeInterval) -> [Send] {
        var byProvider: [PushProvider: [Push]] = [:]
        for position in positions {
            let target = targets[position]
            guard stopped[target.provider] == nil else { continue }
            let readyAlert =
                readyAlertProviders.contains(target.provider) && target.notifyWhenReady && batch.readyAlertsFrom.map { sentAt >= $0 } == true
            if let reason = SkipRules.skipReason(
                for: target,
                kind: readyAlert ? .alert : batch.kind,
                at: sentAt,
                deadline: batch.deadline,
                configured: { provider in
                    if case .notConfigured = providers[provider] ?? .notConfigured { return false }
                    return true
                }
            ) {
                outcomes[position] = BatchOutcome(deviceID: target.deviceID, sentAt: sentAt, result: .skipped(reason), provider: target.provider)
                continue
            }
            if let pause = paused[target.provider] {
                guard pause.probe == nil && sentAt >= pause.probeAt else {
                    deferred.append(position)
                    continue
                }
                paused[target.provider]?.probe = position
            }
            byProvider[target.provider, default: []].append(Push(position: position, readyAlert: readyAlert))
            inFlight[position] = InFlight(
                provider: target.provider,
                sentAt: sentAt,
                readyAlert: readyAlert,
                generation: generation(of: target.provider) ?? 0
            )
        }
        return PushProvider.allCases.compactMap { provider in
            byProvider[provider].map {
                Send(provider: provider, pushes: $0, sentAt: sentAt, late: late, generation: generation(of: provider) ?? 0)
            }
        }
    }

    /// Records every target not written and not answered as skipped for `reason`.
    mutating func skipRest(_ reason: SkipReason, at now: Date) {
        for position in outcomes.indices where outcomes[position] == nil && inFlight[position] == nil {
            outcomes[position] = skipped(position, reason, at: now)
        }
        cursor = pass.count
        resend = []
        deferred = []
        paused = [:]
        refused = [:]
        reloadDue = nil
        retry = nil
    }
}
