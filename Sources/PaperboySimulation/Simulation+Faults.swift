import Foundation
import PaperboyCore
import PaperboyDispatch

/// The production week's faults, and the workers' per-second duties, as the simulation applies them.
extension Simulation {
    func fault(_ fault: Scenario.Fault) {
        covered.insert(fault.kind)
        note("fault: \(fault)")
        switch fault {
        case .kill(let index, _):
            guard kill(index) else { return }
            schedule(.restart, at: now.addingTimeInterval(random.between(1...30)))
        case .pause(let index, _, let seconds):
            guard workers[index].life == .running else { return }
            workers[index].life = .paused
            workers[index].pausedAt = now
            close(&workers[index].running)
            schedule(.resume(worker: index), at: now.addingTimeInterval(seconds))
        case .deploy(let index, _, let restartAfter):
            guard workers[index].life == .running else { return }
            workers[index].drainAt = now
            deliver(.drainStarted(timeout: options.drainTimeout), to: index)
            schedule(.restart, at: now.addingTimeInterval(restartAfter))
            // Kubernetes' grace period: a pod not gone by then is killed (one stopped mid-drain, say).
            schedule(.graceEnd(worker: index), at: now.addingTimeInterval(Self.terminationGracePeriod))
        case .keyless:
            break
        case .rotate(let app, let provider, _, let revokeAt):
            let key = AppProvider(appID: app, provider: provider)
            let old = keyFiles[key] ?? 1
            keyFiles[key] = old + 1
            self.provider.accepted[key, default: []].insert(old + 1)
            // `apps set-apns` / `set-fcm` with the new key ends a hold, as every change of the configuration does.
            if model.setCredentials(appID: app, provider: provider, now: now) { endHolds(of: key) }
            schedule(.revoke(app: app, provider: provider, generation: old), at: start.addingTimeInterval(revokeAt))
        case .misconfigure(let app, let provider, _, let fixAt):
            provider_misconfigure(AppProvider(appID: app, provider: provider))
            schedule(.fix(app: app, provider: provider), at: start.addingTimeInterval(fixAt))
        case .misconfigureTopic(let app, let provider, _, let fixAt):
            self.provider.topicDisallowed.insert(AppProvider(appID: app, provider: provider))
            schedule(.fix(app: app, provider: provider), at: start.addingTimeInterval(fixAt))
        case .providerOutage(_, let seconds):
            // The workers' channels find the provider unreachable at their next look (``SimulatedChannel/isUnreachable``).
            provider.outage = (now, now.addingTimeInterval(seconds))
            schedule(.outageEnd, at: now.addingTimeInterval(seconds))
        case .providerFailing(_, let seconds):
            provider.failing = (now, now.addingTimeInterval(seconds))
            note("provider: answering 503 for \(Int(seconds))s")
        case .providerThrottling(_, let seconds, let share):
            provider.throttling = (now, now.addingTimeInterval(seconds), share)
            note("provider: answering 429 to \(Int(share * 100)) % for \(Int(seconds))s")
        case .databaseOutage(_, let seconds):
            databaseDown = (now, now.addingTimeInterval(seconds))
        case .cancel(let index, _):
            guard index < scenario.broadcasts.count else { return }
            model.cancel(scenario.broadcasts[index].id, now: now)
        case .clockStep(let index, _, let seconds):
            workers[index].clock.step(by: seconds)
            note(String(format: "%@'s clock stepped %+.2fs", workers[index].name, seconds))
        case .connectionsReset(_, let seconds):
            resetConnections(reconnectingFor: seconds)
        case .importedTokens:
            break
        }
    }

    /// The provider closes every connection: each push written and not answered yet is answered by nobody (the client
    /// reports its fate unknown: processed or not, nobody knows), and pushes handed over for `seconds` wait for a new
    /// connection before they are written.
    func resetConnections(reconnectingFor seconds: TimeInterval) {
        var cut = 0
        for (id, send) in sends.sorted(by: { $0.key < $1.key }) {
            var send = send
            var changed = false
            for index in send.pushes.indices where !send.pushes[index].done && send.pushes[index].answerAt > now {
                guard let written = send.pushes[index].writtenAt, written <= now else { continue }
                let push = send.pushes[index]
                send.pushes[index].answer = AnswerRules.answer(
                    verdict: .fateUnknown,
                    reason: nil,
                    position: push.answer.position,
                    generation: push.answer.generation
                )
                send.pushes[index].answerAt = now
                send.pushes[index].delivered = push.delivered && random.chance(0.5)
                changed = true
                cut += 1
            }
            guard changed else { continue }
            sends[id] = send
            schedule(.answers(send: id, at: now), at: now)
        }
        provider.reconnecting = now.addingTimeInterval(seconds)
        note("provider: every connection closed, \(cut) pushes in flight cut off; \(String(format: "%.2f", seconds))s to reconnect")
    }

    /// The app's provider's holds ended now (a change of its configuration, a release, a confirm), for the invariants.
    func endHolds(of key: AppProvider) {
        for index in holdTimes.indices where holdTimes[index].key == key && holdTimes[index].until == nil { holdTimes[index].until = now }
    }

    /// Kubernetes' default `terminationGracePeriodSeconds`: SIGKILL this long after SIGTERM.
    static let terminationGracePeriod: TimeInterval = 30

    /// SIGKILL: what the worker had not written yet dies with it; what it wrote is answered to nobody.
    /// - Returns: whether it was alive.
    @discardableResult
    func kill(_ index: Int) -> Bool {
        guard workers[index].life == .running || workers[index].life == .paused else { return false }
        workers[index].life = .dead
        workers[index].killedAt = now
        workers[index].incarnation += 1
        close(&workers[index].running)
        for (id, send) in sends where send.worker == index {
            var send = send
            for push in send.pushes.indices where send.pushes[push].writtenAt.map({ $0 > now }) ?? true { send.pushes[push].done = true }
            sends[id] = send.pushes.allSatisfy(\.done) ? nil : send
        }
        return true
    }

    private func provider_misconfigure(_ key: AppProvider) {
        provider.misconfigured.insert(key)
    }

    /// SIGCONT: the events that came while it was stopped, in order, then the time that passed.
    func resume(_ index: Int) {
        guard workers[index].life == .paused else { return }
        workers[index].life = .running
        workers[index].running.append((now, nil))
        note("\(workers[index].name) resumed")
        // A lease that ran out while the process was stopped is a dead worker's: another may take the batch over
        // while this one, waking, finishes what it had written before it stopped. Those devices may be pushed twice,
        // the documented bound of a worker stopped past its lease.
        for id in workers[index].held {
            if let batch = model.batches[id], batch.leaseOwner == workers[index].name, batch.expires <= now {
                workers[index].abandoned.insert(id)
                covered.insert("pausedPastLease")
            }
        }
        let buffered = workers[index].buffered
        workers[index].buffered = []
        for event in buffered { deliver(event, to: index) }
        deliver(.tick, to: index)
    }

    /// What every worker does each second beside sending (``BroadcastDuties``), applied once by the world: broadcasts
    /// expired at their deadline or completed, the unsendable rule, held deactivations nobody suspects applied.
    func duties() async {
        guard workers.contains(where: { $0.life == .running }) else { return }
        // Production's wave driver and ``WavePolicy``: waves finished and started, broadcasts completed or expired.
        if let events = try? await waves.advance(now: now, logger: Self.logger) {
            for event in events { advanced(event) }
        }
        let rules = UnsendablePolicy.Configuration(failAfter: options.failAfter)
        for failure in UnsendablePolicy.failures(model.givenBackBroadcasts(), now: now, configuration: rules) {
            if model.fail(failure.broadcastID, reason: failure.reason, now: now) {
                covered.insert("failedUnsendable")
                note("broadcast \(failure.broadcastID) failed: \(failure.reason)")
            }
        }
        // `BroadcastDuties.applyHeldDeactivations`: every worker's answers judged by the guard's fleet rule first.
        let cutoff = now.addingTimeInterval(-600)
        var clear: [HoldKey: Date] = [:]
        waiting = [:]
        for fleet in model.fleetAnswers(before: cutoff, now: now) {
            switch MisconfigurationGuard.judge(fleet) {
            case .apply:
                // Those answered after the latest accepted push wait for the provider to accept one sent after them.
                let key = HoldKey(appID: fleet.appID, environment: fleet.environment, provider: fleet.provider)
                let before = MisconfigurationGuard.appliedBefore(fleet) ?? .distantPast
                clear[key] = before
                waiting[key] = before
                if model.heldDeactivations.values.contains(where: { $0.key == key && $0.answeredAt < cutoff && $0.answeredAt >= before }) {
                    covered.insert("heldUnvouched")
                }
            case .wait:
                covered.insert("fleetWait")
                waiting[HoldKey(appID: fleet.appID, environment: fleet.environment, provider: fleet.provider)] = .distantFuture
            case .hold(let suspicion):
                if raiseHold(suspicion, by: "every worker's answers") { covered.insert("fleetHold") }
            }
        }
        let applied = model.applyHeldDeactivations(before: cutoff, only: clear)
        if applied > 0 {
            covered.insert("heldApplied")
            note("\(applied) held deactivations applied")
        }
    }
}

extension Simulation {
    /// `ProviderHoldRepository.raise` on the model, for `suspicion`, noted with when it began.
    /// - Returns: whether it raised the hold.
    @discardableResult
    func raiseHold(_ suspicion: MisconfigurationGuard.Suspicion, by raiser: String) -> Bool {
        let raised = database.raiseHold(suspicion, by: raiser)
        if raised {
            holdTimes.append((AppProvider(appID: suspicion.appID, provider: suspicion.provider), now, nil))
            note("hold raised by \(raiser): app \(suspicion.appID) \(suspicion.environment) \(suspicion.provider.rawValue): \(suspicion.reason)")
        }
        return raised
    }

    /// What the wave driver did, noted; a broadcast completed with devices its next wave could still wake is a
    /// violation (the policy completes one only when nobody is left to wake).
    func advanced(_ event: BroadcastEvent) {
        switch event {
        case .waveStarted(let id, let wave, _, let planned, let start):
            covered.insert("wave\(min(wave, 3))")
            note("broadcast \(id) wave \(wave) started: \(planned) devices from \(String(format: "%.1f", start.timeIntervalSince(self.start)))s")
        case .waveFinished(let id, let wave):
            note("broadcast \(id) wave \(wave) finished")
        case .expired(let id):
            covered.insert("expired")
            note("broadcast \(id) expired")
        case .completed(let id):
            note("broadcast \(id) completed")
            guard let broadcast = model.broadcasts[id] else { return }
            let stored = model.storedWaves(id)
            let background = stored.count { $0.kind == .background }
            let nextStart = (stored.first?.start ?? now).addingTimeInterval(Double(stored.count) * broadcast.options.waveInterval)
            guard !stored.contains(where: { $0.kind == .alert }), nextStart < broadcast.deadline else { return }
            let next = stored.count + 1
            var kind = BroadcastProgress.Wave.Kind.background
            var left: [Int64] = []
            if broadcast.options.maxPushesPerDevice.allowsWave(after: background) {
                left = model.devices.values.filter { model.inLaterAudience($0, of: broadcast, wave: next, kind: .background) }.map(\.id).sorted()
            }
            if left.isEmpty && broadcast.options.alertLastResort {
                kind = .alert
                left = model.devices.values.filter { model.inLaterAudience($0, of: broadcast, wave: next, kind: .alert) }.map(\.id).sorted()
            }
            if !left.isEmpty {
                let audience = kind == .alert ? "no receipt, alerts allowed and none sent yet" : "no receipt, fewer pushes than the cap"
                found.append(
                    "broadcast \(id) completed after \(stored.count) waves with \(left.count) devices its \(kind.rawValue) wave \(next) could still "
                        + "wake (\(audience), before the deadline), e.g. \(left.prefix(5).map(String.init).joined(separator: ", "))"
                )
            }
        }
    }
}
