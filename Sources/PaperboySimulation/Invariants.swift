import Foundation
import PaperboyCore
import PaperboyDispatch

/// What every run, real or simulated, must keep (docs/DESIGN's invariants), checked after a simulated one. Each
/// violation is one line naming what broke and the device, batch, worker or second it broke at.
struct Invariants {
    let simulation: Simulation

    func check() -> [String] {
        var violations: [String] = []
        violations += exactlyOneOutcome()
        violations += countsEqualTheLedger()
        violations += pushedOncePerWave()
        violations += transientNeverFinal()
        violations += unreachableNeverFinal()
        violations += configurationNeverFinal()
        violations += deactivations()
        violations += confirmEndsTheHold()
        violations += failures()
        violations += drains()
        violations += pace()
        violations += ended()
        violations += laterWavesLeaveOutReceipts()
        violations += pushesWithinTheCap()
        violations += dormantLeftOut()
        violations += alertsOnlyAsked()
        violations += oneAlertPerEdition()
        return violations
    }

    var model: DispatchModel { simulation.model }

    /// The batches each worker (by name) left unwritten to their leases, whose pushes may be sent again by a takeover.
    var abandonedBatches: [String: Set<Int64>] {
        Dictionary(grouping: simulation.workers.flatMap { worker in worker.abandoned.map { (worker.name, $0) } }, by: \.0)
            .mapValues { Set($0.map(\.1)) }
    }

    /// Every target of a wave ends in exactly one final outcome: never two, and in a broadcast that completed, one for
    /// every device counted into a batch of it.
    func exactlyOneOutcome() -> [String] {
        var violations: [String] = []
        for (key, finals) in model.finals {
            for (device, count) in finals.sorted(by: { $0.key < $1.key }) where count > 1 {
                violations.append("device \(device) has \(count) final outcomes in wave \(key.wave) of broadcast \(key.broadcast)")
            }
        }
        // A device deactivated by an answer to another broadcast's push leaves the audience between the carving and the
        // read: no outcome is due for it.
        let deactivated = Set(model.deactivations.map(\.device))
        // And a later wave's device whose receipt came after the carve and before the batch's targets were read: the
        // reader has the edition, and the read leaves it out (`WaveAudience`, re-evaluated by every read).
        // Or one that a count of another broadcast's wave-1 pushes (the same app's) made dormant meanwhile.
        for (key, carved) in model.carved where model.broadcasts[key.broadcast]?.state == .completed {
            let finals = model.finals[key] ?? [:]
            let received = key.wave > 1 ? model.broadcasts[key.broadcast].flatMap { model.receipts[$0.edition] } ?? [:] : [:]
            let dormant = key.wave > 1 && model.broadcasts[key.broadcast].map { $0.options.dormantAfter > 0 } == true ? model.turnedDormant : []
            let missing = carved.filter { finals[$0] == nil && !deactivated.contains($0) && received[$0] == nil && !dormant.contains($0) }.sorted()
            if !missing.isEmpty {
                violations.append(
                    "broadcast \(key.broadcast) completed with \(missing.count) devices of wave \(key.wave) without an outcome, e.g. \(missing.prefix(5))"
                )
            }
        }
        return violations
    }

    /// An answer the provider calls transient (busy, failing) is never a device's final outcome: the provider is paused
    /// and the device sent again, until the deadline skips it.
    func transientNeverFinal() -> [String] {
        model.deliveries.values.filter { $0.outcome == "rejected" && SimulatedProvider.transientReasons.contains($0.reason ?? "") }
            .sorted { ($0.broadcast.uuidString, $0.device) < ($1.broadcast.uuidString, $1.device) }.prefix(5)
            .map { "device \($0.device) recorded rejected \($0.reason ?? "") in broadcast \($0.broadcast): the provider's answer was transient" }
    }

    /// A push the provider never received because it could not be reached (an outage: every connect refused) is never
    /// a device's final outcome: the batch holds until the provider is back or the deadline.
    func unreachableNeverFinal() -> [String] {
        // An outage lasts, for a worker's pool that failed a connect, until its first attempt after the provider is back.
        let outages = simulation.scenario.faults.compactMap { fault -> ClosedRange<Date>? in
            guard case .providerOutage(let at, let seconds) = fault else { return nil }
            let start = simulation.start.addingTimeInterval(at)
            let end = start.addingTimeInterval(seconds)
            let reconnects = simulation.poolFailures.filter { abs($0.outage.timeIntervalSince(start)) < 0.001 }
                .map { Simulation.reconnect(since: $0.since, end: end) }
            return start...max(end, reconnects.max() ?? end)
        }
        return model.deliveries.values.filter { delivery in
            delivery.outcome == "notSent" && outages.contains { $0.contains(delivery.sentAt) }
        }
        .sorted { ($0.broadcast.uuidString, $0.device) < ($1.broadcast.uuidString, $1.device) }.prefix(5)
        .map { "device \($0.device) recorded notSent in broadcast \($0.broadcast), sent at \($0.sentAt) while the provider could not be reached" }
    }

    /// An answer that the app's configuration is wrong (`TopicDisallowed`, `THIRD_PARTY_AUTH_ERROR`) is never a device's
    /// outcome: the batch gives the provider's targets back, and they are sent once it is fixed.
    func configurationNeverFinal() -> [String] {
        model.deliveries.values.filter { $0.outcome == "rejected" && SimulatedProvider.configurationReasons.contains($0.reason ?? "") }
            .sorted { ($0.broadcast.uuidString, $0.device) < ($1.broadcast.uuidString, $1.device) }.prefix(5)
            .map {
                "device \($0.device) recorded rejected \($0.reason ?? "") in broadcast \($0.broadcast): the app's configuration was wrong, not the device"
            }
    }

    /// The cohorts' counters equal the ledger.
    func countsEqualTheLedger() -> [String] {
        var violations: [String] = []
        for id in model.broadcasts.keys {
            let sent = model.cohorts.filter { $0.broadcast == id }.map(\.sent).reduce(0, +)
            let accepted = model.cohorts.filter { $0.broadcast == id }.map(\.accepted).reduce(0, +)
            let rows = model.deliveries.values.filter { $0.broadcast == id }
            if sent != rows.count { violations.append("broadcast \(id): the cohorts count \(sent) sent, the ledger has \(rows.count) rows") }
            let acceptedRows = rows.count { $0.outcome == "accepted" }
            if accepted != acceptedRows {
                violations.append("broadcast \(id): the cohorts count \(accepted) accepted, the ledger \(acceptedRows)")
            }
        }
        return violations
    }

    /// A device is pushed at most once per wave, except a dead worker's bounded in-flight work: the earlier of two pushes
    /// must be of a batch taken over while its holder was killed or stopped (SIGSTOP), or one its holder left unwritten
    /// to its lease (the database away past the record patience or a drain's deadline).
    func pushedOncePerWave() -> [String] {
        var violations: [String] = []
        var seen: [String: SimulatedProvider.Push] = [:]
        var allowed = 0
        let abandoned = abandonedBatches
        for push in simulation.provider.log.sorted(by: { $0.writtenAt < $1.writtenAt }) where push.delivered {
            let key = "\(push.device)/\(push.broadcast)/\(push.wave)"
            if let first = seen[key] {
                if abandoned[first.worker]?.contains(first.batch) == true {
                    allowed += 1
                    simulation.covered.insert("duplicateAfterCrash")
                } else {
                    violations.append(
                        "device \(push.device) pushed twice in wave \(push.wave) of \(push.broadcast): by \(first.worker) (batch \(first.batch), lease \(first.lease)) "
                            + "and by \(push.worker) (batch \(push.batch), lease \(push.lease))"
                    )
                }
            } else {
                seen[key] = push
            }
        }
        let configuration = Simulation.workerConfiguration
        let crashes = simulation.workers.filter { !$0.abandoned.isEmpty }.count
        if allowed > crashes * configuration.maxBatchesInFlight * configuration.maxBatchSize {
            violations.append("\(allowed) devices pushed twice after \(crashes) crashes: more than the batches they held")
        }
        return violations
    }

    /// No device is deactivated without its provider's own per-device answer, none by an answer a misconfiguration
    /// caused, and none while a misconfiguration of its app's provider is held.
    func deactivations() -> [String] {
        var violations: [String] = []
        let answers = Dictionary(grouping: simulation.provider.log.filter(\.deactivates), by: \.device)
        for (device, at) in model.deactivations {
            let own = answers[device] ?? []
            if own.isEmpty {
                violations.append("device \(device) deactivated at \(at) without an answer of its provider saying its token is dead")
            } else if own.allSatisfy(\.byMisconfiguration) {
                violations.append("device \(device) deactivated by an answer its app's misconfiguration caused")
            }
        }
        return violations
    }

    /// A hold has a way out an operator command reaches: once an operator confirmed an app's provider's deactivations
    /// (its tokens really are invalid), the hold standing ends then, and none is raised again for it.
    func confirmEndsTheHold() -> [String] {
        var violations: [String] = []
        for (key, confirmed) in simulation.confirmedAt.sorted(by: { $0.key < $1.key }) {
            for hold in simulation.holdTimes where hold.key == key {
                if hold.from > confirmed {
                    violations.append(
                        "app \(key.appID) \(key.provider.rawValue) held again at \(hold.from) after the operator confirmed its deactivations at \(confirmed)"
                    )
                } else if (hold.until ?? simulation.now) > confirmed {
                    violations.append("app \(key.appID) \(key.provider.rawValue)'s hold did not end when the operator confirmed at \(confirmed)")
                }
            }
        }
        return violations
    }

    /// A broadcast fails only when no worker has been able to send it for the whole `--fail-after`: no worker that
    /// had the app's key and a working provider ran for 30 s of that time.
    func failures() -> [String] {
        var violations: [String] = []
        for (id, broadcast) in model.broadcasts where broadcast.state == .failed && broadcast.failure?.hasPrefix("no worker could send") == true {
            guard let failedAt = broadcast.finishedAt else { continue }
            let window = failedAt.addingTimeInterval(-simulation.options.failAfter)...failedAt
            for worker in simulation.workers where !worker.keyless.contains(broadcast.app) {
                for interval in worker.running {
                    let from = max(interval.from, window.lowerBound)
                    let until = min(interval.until ?? simulation.now, window.upperBound)
                    if until.timeIntervalSince(from) >= 30 && capable(app: broadcast.app, from: from, until: until) {
                        violations.append(
                            "broadcast \(id) failed at \(failedAt) while \(worker.name) could send for app \(broadcast.app) from \(from) to \(until)"
                        )
                        break
                    }
                }
            }
        }
        return violations
    }

    /// Whether sends for `app` could succeed through every provider it has from `from` to `until`: no misconfiguration
    /// and no outage then.
    func capable(app: Int, from: Date, until: Date) -> Bool {
        for fault in simulation.scenario.faults {
            switch fault {
            case .misconfigure(let faulty, _, let at, let fixAt) where faulty == app,
                .misconfigureTopic(let faulty, _, let at, let fixAt) where faulty == app:
                let start = simulation.start.addingTimeInterval(at)
                let end = simulation.start.addingTimeInterval(fixAt)
                if start < until && end > from { return false }
            case .rotate(let rotated, _, let at, let revokeAt) where rotated == app && revokeAt < at:
                let start = simulation.start.addingTimeInterval(revokeAt)
                let end = simulation.start.addingTimeInterval(at)
                if start < until && end > from { return false }
            case .providerOutage(let at, let seconds), .providerFailing(let at, let seconds), .providerThrottling(let at, let seconds, _):
                let start = simulation.start.addingTimeInterval(at)
                if start < until && start.addingTimeInterval(seconds) > from { return false }
            case .databaseOutage(let at, let seconds):
                let start = simulation.start.addingTimeInterval(at)
                if start < until && start.addingTimeInterval(seconds) > from { return false }
            default:
                break
            }
        }
        return true
    }

    /// A drain ends within its timeout (and the write grace) of the worker's running time, and records as unknown only
    /// what was written. Time the process was stopped (SIGSTOP) does not count: it cannot act then, and Kubernetes
    /// kills it at the end of its grace period (``Simulation/terminationGracePeriod``), which ends the drain too.
    func drains() -> [String] {
        var violations: [String] = []
        let configuration = Simulation.workerConfiguration
        for worker in simulation.workers {
            guard let drainAt = worker.drainAt else { continue }
            let limit = simulation.options.drainTimeout + configuration.drainWriteGrace + 0.1
            let end = worker.exitedAt ?? worker.killedAt ?? simulation.now
            let ran = worker.running.reduce(0.0) { total, interval in
                let from = max(interval.from, drainAt)
                let until = min(interval.until ?? end, end)
                return total + max(0, until.timeIntervalSince(from))
            }
            if ran > limit {
                let ended =
                    worker.exitedAt != nil ? "drained" : worker.killedAt != nil ? "was still draining when killed, after" : "was still draining after"
                violations.append("\(worker.name) \(ended) \(ran)s of running time, more than \(limit)s")
            }
        }
        let written = Set(simulation.provider.log.map { "\($0.device)/\($0.broadcast)/\($0.wave)" })
        for delivery in model.deliveries.values where delivery.outcome == "fateUnknown" {
            if !written.contains("\(delivery.device)/\(delivery.broadcast)/\(delivery.wave)") {
                violations.append("device \(delivery.device) recorded as fate unknown in \(delivery.broadcast), but nothing was written for it")
            }
        }
        return violations
    }

    /// No second above the plan's rate (× 1.10 for clock and scheduling noise, one push for rounding): each broadcast
    /// at its wave's rate, and a shared origin at its capacity in total.
    func pace() -> [String] {
        var violations: [String] = []
        var origin: [Int: Int] = [:]
        for (id, seconds) in simulation.handedOver {
            guard let plan = simulation.scenario.broadcasts.first(where: { $0.id == id }) else { continue }
            // On a shared origin a batch sends at the origin's capacity within its exclusive slot: the origin's total
            // is the promise, the wave's rate only its average.
            let limit = plan.origin == nil ? plan.rate * 1.10 + 1 : .infinity
            for (second, count) in seconds.sorted(by: { $0.key < $1.key }) where Double(count) > limit {
                violations.append(
                    "broadcast \(id) handed \(count) pushes to the providers in second \(second), over \(Int(limit)) (its rate \(Int(plan.rate))/s)"
                )
            }
            if plan.origin != nil { for (second, count) in seconds { origin[second, default: 0] += count } }
        }
        if let capacity = simulation.scenario.originCapacity {
            let limit = capacity * 1.10 + 1
            for (second, count) in origin.sorted(by: { $0.key < $1.key }) where Double(count) > limit {
                violations.append("the origin got \(count) pushes in second \(second), over \(Int(limit)) (its capacity \(Int(capacity))/s)")
            }
        }
        return violations
    }

    /// Every broadcast ended by the end of the run: none stuck with work nobody takes.
    func ended() -> [String] {
        model.broadcasts.values.filter { $0.state == .running }.map { "broadcast \($0.id) still running at the end of the run" }
    }

    /// A later wave goes only to devices with no receipt when it was counted: a reader whose edition is on the phone is
    /// never woken for it again. (A receipt stored between the count and the batch's carve leaves the device out too;
    /// one stored after the carve may meet its push on the way.)
    func laterWavesLeaveOutReceipts() -> [String] {
        var violations: [String] = []
        for push in simulation.provider.log where push.wave > 1 {
            guard let edition = model.broadcasts[push.broadcast]?.edition, let received = model.receipts[edition]?[push.device],
                let counted = model.countedAt[DispatchModel.WaveKey(broadcast: push.broadcast, wave: push.wave)], received < counted
            else { continue }
            violations.append(
                "device \(push.device) pushed in wave \(push.wave) of \(push.broadcast) though its receipt was stored at "
                    + "\(String(format: "%.1f", received.timeIntervalSince(simulation.start)))s, before the wave was counted at "
                    + "\(String(format: "%.1f", counted.timeIntervalSince(simulation.start)))s"
            )
            if violations.count >= 5 { break }
        }
        return violations
    }

    /// No device is woken by more of a broadcast's waves than its `maxPushesPerDevice`.
    func pushesWithinTheCap() -> [String] {
        struct Reader: Hashable {
            var device: Int64
            var broadcast: UUID
        }
        var waves: [Reader: Set<Int>] = [:]
        // Background pushes only: the cap is on them, and the ready alert takes a follow-up's place.
        for push in simulation.provider.log where !push.alert {
            waves[Reader(device: push.device, broadcast: push.broadcast), default: []].insert(push.wave)
        }
        var violations: [String] = []
        let broadcasts = model.broadcasts
        let over = waves.filter { key, pushed in
            guard let cap = broadcasts[key.broadcast]?.options.maxPushesPerDevice.audienceCap(wave: pushed.max() ?? 1) else { return false }
            return pushed.count > cap
        }
        for (key, pushed) in over.sorted(by: { ($0.key.broadcast.uuidString, $0.key.device) < ($1.key.broadcast.uuidString, $1.key.device) }) {
            guard let cap = broadcasts[key.broadcast]?.options.maxPushesPerDevice.audienceCap(wave: pushed.max() ?? 1) else { continue }
            violations.append(
                "device \(key.device) pushed in \(pushed.count) waves of \(key.broadcast) (\(pushed.sorted())), more than its cap of \(cap)"
            )
            if violations.count >= 5 { break }
        }
        return violations
    }

    /// Dormancy (`dormantAfter` D > 0), read from the readers' side: a reader who never posts a receipt and was dormant
    /// before the run (yesterday's receipt never came) gets no push of a later wave; nor, in a broadcast's later waves,
    /// one whose wave-1 push of it was recorded accepted with D - 1 or more editions unanswered before (its count,
    /// taken after wave 1 and before a later wave is counted, reaches D).
    func dormantLeftOut() -> [String] {
        var violations: [String] = []
        for push in simulation.provider.log where push.wave > 1 && simulation.silent.contains(push.device) {
            guard let broadcast = model.broadcasts[push.broadcast], broadcast.options.dormantAfter > 0 else { continue }
            // Registered again before the push: revived, whatever its count was (RegisterDevice).
            if let again = simulation.registeredAgain[push.device], again <= push.writtenAt {
                if simulation.dormantBefore.contains(push.device) { simulation.covered.insert("revivedPushed") }
                continue
            }
            let after = broadcast.options.dormantAfter
            let at = String(format: "%.1f", push.writtenAt.timeIntervalSince(simulation.start))
            if simulation.dormantBefore.contains(push.device) {
                violations.append(
                    "device \(push.device), dormant before the run and silent since, pushed in wave \(push.wave) of \(push.broadcast) at \(at)s"
                )
            } else if let before = simulation.unansweredBefore[push.device], before + 1 >= after,
                model.deliveries[DispatchModel.DeliveryKey(device: push.device, broadcast: push.broadcast, wave: 1)]?.outcome == "accepted"
            {
                violations.append(
                    "device \(push.device) pushed in wave \(push.wave) of \(push.broadcast) at \(at)s though its wave-1 push, accepted, "
                        + "brought its count of editions unanswered in a row to \(before + 1) (dormant after \(after))"
                )
            } else {
                continue
            }
            if violations.count >= 5 { break }
        }
        if violations.isEmpty
            && simulation.provider.log.contains(where: {
                $0.wave == 1 && simulation.dormantBefore.contains($0.device) && (model.storedWaves($0.broadcast).count > 1)
            })
        {
            simulation.covered.insert("dormantLeftOut")
        }
        return violations
    }
}
