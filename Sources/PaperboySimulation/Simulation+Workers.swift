import Foundation
import PaperboyCore
import PaperboyDispatch

/// The simulation's executor of the workers' machines: each action becomes the model's operation (after a database
/// latency) or a provider's answers (after the provider's latency), reported back as the machine's next event.
extension Simulation {
    /// The workers' settings: production's, with a coarser tick and poll so that a seed runs in milliseconds.
    static var workerConfiguration: WorkerMachine.Configuration {
        var configuration = WorkerMachine.Configuration()
        configuration.pollInterval = 0.5
        configuration.batch.tick = 0.05
        configuration.batch.catchUpTolerance = 0.05
        configuration.batch.reachabilityPoll = 0.5
        configuration.maxBatchSize = 50
        return configuration
    }

    func setUp() {
        var setup = SimulationRandom(seed: scenario.seed ^ 0xF1EE7)
        var id: Int64 = 0
        for app in scenario.apps {
            model.addApp(app.id, providers: app.providers)
            var devices: [DispatchModel.Device] = []
            for _ in 0..<app.devices {
                id += 1
                let provider = app.providers.sorted { $0.rawValue < $1.rawValue }[setup.int(0...(app.providers.count - 1))]
                let token: PushToken =
                    provider == .apns
                    ? .apns(DeviceToken(bytes: withUnsafeBytes(of: id.bigEndian) { Array($0) } + Array(repeating: 7, count: 24)))
                    : .fcm(FCMToken(bytes: Array("sim-\(id):APA91b".utf8)))
                devices.append(
                    DispatchModel.Device(
                        id: id,
                        app: app.id,
                        token: token,
                        key: Int64(Int32(truncatingIfNeeded: setup.next())),
                        platform: provider == .apns ? .ios : .android,
                        tier: .large,
                        registeredAt: start.addingTimeInterval(-86_400)
                    )
                )
                if setup.chance(app.uninstalled) {
                    provider_uninstalled(id, at: start.addingTimeInterval(-setup.between(60...86_000)))
                } else if setup.chance(app.strayInvalid) {
                    self.provider.tokens[id] = .invalid
                }
            }
            model.addDevices(devices)
            for provider in app.providers {
                keyFiles[AppProvider(appID: app.id, provider: provider)] = 1
                self.provider.accepted[AppProvider(appID: app.id, provider: provider)] = [1]
            }
        }
        if let capacity = scenario.originCapacity { model.addOrigin(1, capacity: capacity) }
        for index in 0..<scenario.workers { addWorker(skew: scenario.clockSkews[index]) }
        for (index, fault) in scenario.faults.enumerated() {
            switch fault {
            case .keyless(let worker, let app):
                workers[worker].keyless.insert(app)
                covered.insert("keyless")
            case .kill(_, let at), .pause(_, let at, _), .deploy(_, let at, _), .rotate(_, _, let at, _), .misconfigure(_, _, let at, _),
                .misconfigureTopic(_, _, let at, _),
                .providerOutage(let at, _), .providerFailing(let at, _), .providerThrottling(let at, _, _), .databaseOutage(let at, _),
                .cancel(_, let at):
                schedule(.fault(index), at: start.addingTimeInterval(at))
            }
        }
        for (index, broadcast) in scenario.broadcasts.enumerated() {
            schedule(.startBroadcast(index), at: start.addingTimeInterval(broadcast.start))
        }
        schedule(.duties, at: start.addingTimeInterval(1))
        for index in workers.indices { deliver(.started, to: index) }
    }

    private func provider_uninstalled(_ id: Int64, at time: Date) {
        provider.tokens[id] = .uninstalled(time)
    }

    func addWorker(skew: TimeInterval) {
        var machine = Self.workerConfiguration
        machine.drainTimeout = options.drainTimeout
        let worker = Worker(name: "w\(workers.count)", machine: WorkerMachine(configuration: machine), skew: skew, startedAt: now)
        workers.append(worker)
        workers[workers.count - 1].running.append((now, nil))
        note("\(worker.name) started\(skew != 0 ? String(format: ", its clock %+.2fs off", skew) : "")")
    }

    /// The worker's instant: its own clock corrected by its estimate of the database's.
    func moment(_ index: Int) -> Moment {
        let worker = workers[index]
        return Moment(now: now.addingTimeInterval(worker.skew + worker.offset), monotonic: now.timeIntervalSinceReferenceDate)
    }

    /// An event into a worker's machine, its actions carried out, its timer set.
    func deliver(_ event: WorkerMachine.Event, to index: Int) {
        switch workers[index].life {
        case .paused:
            workers[index].buffered.append(event)
            return
        case .dead, .exited:
            return
        case .running:
            break
        }
        let actions = workers[index].machine.handle(event, at: moment(index))
        if options.trace { note("\(workers[index].name) ← \(Self.describe(event)) → \(actions.map(Self.describe).joined(separator: ", "))") }
        for action in actions { perform(action, by: index) }
        if workers[index].machine.stopped {
            workers[index].life = .exited
            workers[index].exitedAt = now
            close(&workers[index].running)
            note("\(workers[index].name) exited")
            return
        }
        guard let wake = workers[index].machine.nextWake else { return }
        let at = wake.addingTimeInterval(-(workers[index].skew + workers[index].offset))
        if let timer = workers[index].timer, timer.at <= at { return }
        workers[index].nextToken += 1
        workers[index].timer = (at, workers[index].nextToken)
        schedule(.wake(worker: index, incarnation: workers[index].incarnation, token: workers[index].nextToken), at: at)
    }

    func perform(_ action: WorkerMachine.Action, by index: Int) {
        switch action {
        case .send(let id, let send):
            handOver(send, batch: id, by: index)
        case .withdraw(let id):
            withdraw(batch: id, worker: index)
        case .ended(let batch, let end):
            workers[index].held.remove(batch.id)
            workers[index].read.remove(batch.id)
            workers[index].sends[batch.id] = nil
            workers[index].batches[batch.id] = nil
            workers[index].targets[batch.id] = nil
            workers[index].versions[batch.id] = nil
            if case .givenBack(_, _, let because) = end {
                covered.insert(because.draining ? "givenBack.draining" : "givenBack.provider")
            }
            if case .lost = end { covered.insert("leaseLost") }
            if case .unwritten = end {
                // Left to its lease unrecorded (the database away past the patience or the drain's deadline): sent
                // again when the lease expires, like a dead worker's.
                workers[index].abandoned.insert(batch.id)
                covered.insert("unwritten")
            }
        case .stop:
            break
        case .reloadCredentials(let batch, let provider, let refused):
            schedule(
                .event(
                    worker: index,
                    incarnation: workers[index].incarnation,
                    .credentialsReloaded(batch.id, provider, reload(batch, provider, refused, by: index))
                ),
                at: now.addingTimeInterval(random.between(0.001...0.01))
            )
        default:
            schedule(
                .database(worker: index, incarnation: workers[index].incarnation, action),
                at: now.addingTimeInterval(random.between(0.001...0.02))
            )
        }
    }

    /// A database operation, at the instant it reaches the database; nil when it reports nothing back.
    func database(_ action: WorkerMachine.Action, for index: Int) -> WorkerMachine.Event? {
        let owner = workers[index].name
        let configuration = workers[index].machine.configuration
        if let down = databaseDown, now >= down.from && now < down.until {
            covered.insert("databaseError")
            return switch action {
            case .lease: .leaseFailed("database down")
            case .read(let batch): .batchUnreadable(batch.id, .database("database down"))
            case .claimSlot(let batch, _, _, _): .slotClaimFailed(batch.id, "database down")
            case .renew: .renewFailed("database down")
            case .confirmLease(let batch): .leaseConfirmFailed(batch.id, "database down")
            case .write(let batch, _): .writeFailed(batch.id, "database down")
            case .raiseHold(let suspicion): .holdNotRaised(suspicion.key, "database down")
            default: nil
            }
        }
        switch action {
        case .lease(let request):
            let batch = model.lease(
                owner: owner,
                now: now,
                lookahead: configuration.lookahead,
                duration: configuration.leaseDuration,
                batchDuration: configuration.batchDuration,
                maxBatchSize: configuration.maxBatchSize,
                excluding: request.excludingBatches,
                excludingApps: request.excludingApps,
                excludingProviders: request.excludingProviders,
                takeOver: request.takeOver,
                takeOverGrace: request.takeOverGrace
            )
            if let batch {
                // The dispatcher measures its clock against the database's with every lease.
                workers[index].offset = -workers[index].skew + random.between(-0.01...0.01)
                if batch.leases > 1 {
                    covered.insert("takeover")
                    // Taken from a worker that is stopped or dead: what it wrote of the batch may be sent again.
                    for other in workers.indices where other != index && workers[other].held.contains(batch.id) && workers[other].life != .running {
                        workers[other].abandoned.insert(batch.id)
                    }
                }
                workers[index].held.insert(batch.id)
                workers[index].batches[batch.id] = batch
            }
            return .leased(batch)
        case .read(let batch):
            let targets = model.targets(of: batch, now: now)
            return .batchRead(batch.id, contents(of: batch, targets, for: index))
        case .claimSlot(let batch, let from, let remaining, let notBefore):
            covered.insert("slotClaim")
            guard let start = model.reclaimSlot(batch, from: from, remaining: remaining, owner: owner, now: now, notBefore: notBefore) else {
                return .leaseLost(batch.id)
            }
            return .slotClaimed(batch.id, start)
        case .renew(let batches):
            return .renewed(model.renew(batches, owner: owner, duration: configuration.leaseDuration, now: now))
        case .confirmLease(let batch):
            covered.insert("leaseConfirm")
            return .leaseConfirmed(batch.id, model.renew([batch], owner: owner, duration: configuration.leaseDuration, now: now))
        case .write(let batch, let completion):
            let written: Bool
            switch completion {
            case .record(let outcomes):
                written = model.record(batch, outcomes: outcomes, owner: owner, configuration: workers[index].versions[batch.id], now: now)
            case .giveBack(let recorded, let returned, let because):
                written = model.giveBack(
                    batch,
                    recorded: recorded,
                    firstReturned: returned.first ?? 0,
                    returned: returned.count,
                    because: because.description,
                    providers: because.providerList,
                    held: because.heldProviders,
                    owner: owner,
                    configuration: workers[index].versions[batch.id],
                    now: now
                )
            case .abandon:
                written = false
            }
            if random.chance(scenario.lostCommitChance) {
                covered.insert("lostCommit")
                return .writeFailed(batch.id, "the COMMIT's answer was lost")
            }
            return written ? .written(batch.id) : .leaseLost(batch.id)
        case .failBroadcast(let batch, _, let reason):
            _ = model.fail(batch.broadcastID, reason: reason, now: now)
            return nil
        case .reportProblem(let problem):
            model.reportProblem(appID: problem.appID, provider: problem.provider, worker: owner, problem: problem.reason, now: now)
            return nil
        case .reportSent(let key, _):
            model.reportSent(appID: key.appID, provider: key.provider, worker: owner, now: now)
            return nil
        case .raiseHold(let suspicion):
            covered.insert("hold")
            raiseHold(suspicion, by: owner)
            return .holdRaised(suspicion.key)
        case .reportStatus:
            // The status's answer carries the database's clock: the worker paces on it.
            workers[index].offset = -workers[index].skew + random.between(-0.01...0.01)
            return nil
        case .send, .withdraw, .ended, .stop, .reloadCredentials:
            return nil
        }
    }

    /// How each provider of the batch stands on this worker: held, not configured, without its key here, or ready with
    /// the channel's generation (loaded again when the app's key changed, as `apps set-apns` makes every worker do).
    func contents(of batch: LeasedBatch, _ targets: [BatchTarget], for index: Int) -> WorkerMachine.BatchContents {
        let app = batch.appID
        let appProviders = model.appProviders[app] ?? []
        var providers: [PushProvider: BatchSendMachine.ProviderState] = [:]
        for provider in Set(targets.map(\.provider)) {
            let key = AppProvider(appID: app, provider: provider)
            if let hold = model.holds[HoldKey(appID: app, environment: batch.environment, provider: provider)] {
                providers[provider] = .held(hold.reason)
            } else if !appProviders.contains(provider) {
                providers[provider] = .notConfigured
            } else if workers[index].keyless.contains(app) {
                providers[provider] = .unavailable("app \(app): its \(provider.displayName) key file does not exist on this worker")
            } else {
                let current = keyFiles[key] ?? 1
                if (workers[index].generations[key] ?? 0) < current { workers[index].generations[key] = current }
                providers[provider] = .ready(generation: workers[index].generations[key]!)
            }
        }
        workers[index].read.insert(batch.id)
        workers[index].targets[batch.id] = targets.map(\.deviceID)
        if let outage = provider.outage, now >= outage.from && now < outage.until {
            for provider in providers.keys {
                schedule(
                    .event(
                        worker: index,
                        incarnation: workers[index].incarnation,
                        .reachability(batch.id, provider, unreachable: true, silenceLimit: 2)
                    ),
                    at: now.addingTimeInterval(0.05)
                )
            }
        }
        workers[index].versions[batch.id] = model.appVersions[app, default: 0]
        return WorkerMachine.BatchContents(
            targets: targets,
            providers: providers,
            appProviders: appProviders,
            configuration: model.appVersions[app, default: 0],
            confirmed: model.confirmed(appID: app, environment: batch.environment, now: now)
        )
    }

    /// `ProviderChannels.reload`: newer credentials another batch loaded, else the current key file's.
    func reload(_ batch: LeasedBatch, _ provider: PushProvider, _ refused: Int, by index: Int) -> BatchSendMachine.Reload {
        covered.insert("reload")
        let key = AppProvider(appID: batch.appID, provider: provider)
        if workers[index].keyless.contains(batch.appID) { return .failed("app \(batch.appID): its key file does not exist on this worker") }
        if let cached = workers[index].generations[key], cached > refused { return .changed(generation: cached) }
        let current = keyFiles[key] ?? 1
        guard current != refused else { return .unchanged }
        workers[index].generations[key] = current
        return .changed(generation: current)
    }

    /// A send handed to the provider: each push written (now, or when the provider is back) and answered later.
    func handOver(_ send: BatchSendMachine.Send, batch id: Int64, by index: Int) {
        guard let batch = workers[index].batches[id] else { return }
        nextSend += 1
        let sendID = nextSend
        let latency = random.chance(0.05) ? random.between(1...8) : random.between(0.02...0.3)
        var pending: [PendingPush] = []
        let second = Int(now.timeIntervalSince(start).rounded(.down))
        for push in send.pushes {
            guard let device = targetDevice(batch: batch, position: push.position, worker: index) else { continue }
            let key = AppProvider(appID: batch.appID, provider: send.provider)
            let decided = provider.decide(
                device: device,
                provider: send.provider,
                key: key,
                generation: send.generation,
                now: now,
                latency: latency,
                random: &random
            )
            pending.append(
                PendingPush(
                    position: push.position,
                    device: device,
                    provider: send.provider,
                    issuedAt: now,
                    writtenAt: decided.writtenAt,
                    answerAt: decided.answerAt,
                    answer: AnswerRules.answer(
                        verdict: decided.verdict,
                        reason: decided.reason,
                        position: push.position,
                        generation: send.generation
                    ),
                    delivered: decided.delivered,
                    misconfiguration: decided.misconfiguration
                )
            )
            handedOver[batch.broadcastID, default: [:]][second, default: 0] += 1
        }
        sends[sendID] = PendingSend(worker: index, incarnation: workers[index].incarnation, batch: batch, pushes: pending)
        workers[index].sends[id, default: []].append(sendID)
        for time in Set(pending.map(\.answerAt)).sorted() { schedule(.answers(send: sendID, at: time), at: time) }
    }

    /// The device at `position` of the batch as this worker read it.
    func targetDevice(batch: LeasedBatch, position: Int, worker index: Int) -> Int64? {
        guard let targets = workers[index].targets[batch.id], position < targets.count else { return nil }
        return targets[position]
    }

    /// The pushes of a send answered at `at`: logged as the provider saw them, and reported to the worker.
    func answer(_ id: Int, at time: Date) {
        guard var send = sends[id] else { return }
        var answers: [BatchSendMachine.Answer] = []
        for index in send.pushes.indices where !send.pushes[index].done && send.pushes[index].answerAt == time {
            send.pushes[index].done = true
            let push = send.pushes[index]
            if let written = push.writtenAt {
                provider.log.append(
                    SimulatedProvider.Push(
                        device: push.device,
                        broadcast: send.batch.broadcastID,
                        wave: send.batch.wave,
                        worker: workers[send.worker].name,
                        batch: send.batch.id,
                        lease: send.batch.leases,
                        writtenAt: written,
                        delivered: push.delivered,
                        answer: "\(push.answer.result)",
                        deactivates: { if case .rejected(_, .some) = push.answer.result { true } else { false } }(),
                        byMisconfiguration: push.misconfiguration
                    )
                )
            }
            answers.append(push.answer)
        }
        if send.pushes.allSatisfy(\.done) {
            sends[id] = nil
            workers[send.worker].sends[send.batch.id]?.removeAll { $0 == id }
        } else {
            sends[id] = send
        }
        guard !answers.isEmpty, workers[send.worker].incarnation == send.incarnation else { return }
        deliver(.answered(send.batch.id, answers), to: send.worker)
    }

    /// A drain withdraws what was not written yet: answered `notSent` at once.
    func withdraw(batch: Int64, worker index: Int) {
        covered.insert("withdraw")
        for id in workers[index].sends[batch] ?? [] {
            guard var send = sends[id] else { continue }
            var answers: [BatchSendMachine.Answer] = []
            for push in send.pushes.indices where !send.pushes[push].done && (send.pushes[push].writtenAt.map { $0 > now } ?? true) {
                send.pushes[push].done = true
                let sent = send.pushes[push].answer
                answers.append(AnswerRules.answer(verdict: .notSent, reason: nil, position: sent.position, generation: sent.generation))
            }
            sends[id] = send.pushes.allSatisfy(\.done) ? nil : send
            if !answers.isEmpty {
                schedule(.event(worker: index, incarnation: workers[index].incarnation, .answered(batch, answers)), at: now.addingTimeInterval(0.001))
            }
        }
    }

    /// Every running worker's batches hear that the provider went quiet or came back.
    func tellReachability(unreachable: Bool) {
        for index in workers.indices where workers[index].life == .running || workers[index].life == .paused {
            for batch in workers[index].read.sorted() {
                for provider in PushProvider.allCases {
                    schedule(
                        .event(
                            worker: index,
                            incarnation: workers[index].incarnation,
                            .reachability(batch, provider, unreachable: unreachable, silenceLimit: 2)
                        ),
                        at: now.addingTimeInterval(0.5)
                    )
                }
            }
        }
    }

    func close(_ intervals: inout [(from: Date, until: Date?)]) {
        if let last = intervals.indices.last, intervals[last].until == nil { intervals[last].until = now }
    }
}
