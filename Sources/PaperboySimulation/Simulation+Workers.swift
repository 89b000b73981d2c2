import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch

/// The simulation's workers: each the real ``WorkerMachine`` run by the real ``WorkerExecutor``, over the model store
/// (``SimulatedStore``) and the simulated providers (``SimulatedTransport``) on the virtual clock. What is the
/// simulation's own is when: the latency before each call reaches the database, and when each push is answered.
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
                } else if let share = importedShare(app: app.id, provider: provider), setup.chance(share) {
                    self.provider.tokens[id] = .invalid
                }
            }
            var alerts = SimulationRandom(seed: scenario.seed ^ 0xA1E27 ^ UInt64(app.id) << 32)
            for index in devices.indices where alerts.chance(scenario.alertShares.authorized) {
                devices[index].alertsAuthorized = true
                devices[index].editionAlerts = alerts.chance(scenario.alertShares.editionAlerts)
                devices[index].notifyWhenReady = alerts.chance(scenario.alertShares.notifyWhenReady)
            }
            model.addDevices(devices)
            var readers = SimulationRandom(seed: scenario.seed ^ 0x5EAD)
            for device in devices where readers.chance(scenario.silentShare) { silent.insert(device.id) }
            pastMornings(app: app.id, devices: devices)
            registrationsAgain(app: app.id, devices: devices)
            for provider in app.providers {
                keyFiles[AppProvider(appID: app.id, provider: provider)] = 1
                self.provider.accepted[AppProvider(appID: app.id, provider: provider)] = [1]
            }
        }
        if let capacity = scenario.originCapacity { model.addOrigin(1, capacity: capacity) }
        for index in 0..<scenario.workers { addWorker(skew: scenario.clockSkews[index], drift: scenario.clockDrifts[index]) }
        for (index, fault) in scenario.faults.enumerated() {
            switch fault {
            case .keyless(let worker, let app):
                workers[worker].keyless.insert(app)
                covered.insert("keyless")
            case .importedTokens(let app, let provider, _, let confirmAt):
                covered.insert("importedTokens")
                schedule(.confirm(app: app, provider: provider), at: start.addingTimeInterval(confirmAt))
            case .kill(_, let at), .pause(_, let at, _), .deploy(_, let at, _), .rotate(_, _, let at, _), .misconfigure(_, _, let at, _),
                .misconfigureTopic(_, _, let at, _),
                .providerOutage(let at, _), .providerFailing(let at, _), .providerThrottling(let at, _, _), .databaseOutage(let at, _),
                .cancel(_, let at), .clockStep(_, let at, _), .connectionsReset(let at, _):
                schedule(.fault(index), at: start.addingTimeInterval(at))
            }
        }
        for (index, broadcast) in scenario.broadcasts.enumerated() {
            schedule(.startBroadcast(index), at: start.addingTimeInterval(broadcast.start))
        }
        schedule(.duties, at: start.addingTimeInterval(1))
        for index in workers.indices { deliver(.started, to: index) }
    }

    /// The share of the app's tokens through `provider` that are really invalid (``Scenario/Fault/importedTokens``).
    private func importedShare(app: Int, provider: PushProvider) -> Double? {
        for fault in scenario.faults {
            if case .importedTokens(app, provider, let share, _) = fault { return share }
        }
        return nil
    }

    private func provider_uninstalled(_ id: Int64, at time: Date) {
        provider.tokens[id] = .uninstalled(time)
    }

    func addWorker(skew: TimeInterval, drift: Double) {
        var machine = Self.workerConfiguration
        machine.drainTimeout = options.drainTimeout
        let index = workers.count
        let name = "w\(index)"
        let time = self.time
        let clocks = WorkerClock(origin: now, skew: skew, drift: drift)
        let clock = BroadcastClock(
            now: { clocks.wall(at: time.now) },
            // The executor never sleeps: the simulation wakes each worker at the instant its machine asks for.
            sleep: { _ in },
            monotonic: { clocks.monotonic(at: time.now) }
        )
        let executor = WorkerExecutor(
            store: SimulatedStore(simulation: self, worker: index),
            transport: SimulatedTransport(simulation: self, worker: index),
            owner: name,
            configuration: machine,
            clock: clock,
            logger: Self.logger,
            metrics: Self.metrics
        )
        let worker = Worker(
            name: name,
            runLoop: RunningLoop(WorkerLoop(executor: executor, machine: WorkerMachine(configuration: machine))),
            clock: clocks,
            startedAt: now
        )
        workers.append(worker)
        workers[index].running.append((now, nil))
        note(
            "\(worker.name) started\(skew != 0 ? String(format: ", its clock %+.2fs off", skew) : "")"
                + (drift != 0 ? String(format: ", drifting %+.0f ppm", drift * 1e6) : "")
        )
    }

    /// The workers log nowhere: the trace (`--trace`) says what they did.
    static let logger = Logger(label: "paperboy.simulation", factory: { _ in SwiftLogNoOpLogHandler() })
    /// The workers' instruments, into swift-metrics' default (no-op) backend.
    static let metrics = DispatchMetrics()

    /// An event into a worker's run loop (production's ``WorkerLoop``), its actions carried out through the worker's
    /// ``SimulatedHands``.
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
        if options.trace { note("\(workers[index].name) ← \(Self.describe(event))") }
        let runLoop = workers[index].runLoop
        runLoop.loop.handle(event, through: SimulatedHands(simulation: self, worker: index, executor: runLoop.loop.executor))
        if runLoop.loop.machine.stopped {
            workers[index].life = .exited
            workers[index].exitedAt = now
            close(&workers[index].running)
            note("\(workers[index].name) exited")
        }
    }

    /// A send handed to the provider: each push written (now, or when the provider is back) and answered later.
    func handOver(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        through channel: SimulatedChannel,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) -> SimulatedSend {
        let (index, batch) = (channel.worker, channel.batch)
        nextSend += 1
        let sendID = nextSend
        let latency = random.chance(0.05) ? random.between(1...8) : random.between(0.02...0.3)
        var pending: [PendingPush] = []
        let second = Int(now.timeIntervalSince(start).rounded(.down))
        let key = AppProvider(appID: batch.appID, provider: channel.provider)
        for push in items where push.position < targets.count {
            let device = targets[push.position].deviceID
            let decided =
                poolRefuses(worker: index, provider: channel.provider)
                ? SimulatedProvider.Decision(writtenAt: nil, answerAt: now, verdict: .notSent)
                : provider.decide(
                    device: device,
                    provider: channel.provider,
                    key: key,
                    generation: channel.generation,
                    now: now,
                    latency: latency,
                    random: &random
                )
            pending.append(
                PendingPush(
                    position: push.position,
                    device: device,
                    provider: channel.provider,
                    issuedAt: now,
                    writtenAt: decided.writtenAt,
                    answerAt: decided.answerAt,
                    answer: AnswerRules.answer(
                        verdict: decided.verdict,
                        reason: decided.reason,
                        position: push.position,
                        generation: channel.generation
                    ),
                    delivered: decided.delivered,
                    misconfiguration: decided.misconfiguration,
                    alert: batch.kind == .alert || push.readyAlert
                )
            )
            handedOver[batch.broadcastID, default: [:]][second, default: 0] += 1
        }
        sends[sendID] = PendingSend(worker: index, incarnation: workers[index].incarnation, batch: batch, pushes: pending, report: report)
        for time in Set(pending.map(\.answerAt)).sorted() { schedule(.answers(send: sendID, at: time), at: time) }
        return SimulatedSend(simulation: self, id: sendID)
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
                        byMisconfiguration: push.misconfiguration,
                        alert: push.alert
                    )
                )
                if push.delivered { readerReceives(push.device, edition: send.batch.editionID, pushedAt: written) }
            }
            answers.append(push.answer)
        }
        sends[id] = send.pushes.allSatisfy(\.done) ? nil : send
        guard !answers.isEmpty, workers[send.worker].incarnation == send.incarnation else { return }
        // Through the channel's report, as the HTTP/2 clients report: the worker hears them as its next event.
        send.report(answers)
    }

    /// The reader's app woke for the push and downloads the edition: its receipt follows in seconds, or minutes for a
    /// late one; a silent device's never does.
    func readerReceives(_ device: Int64, edition: UUID, pushedAt: Date) {
        guard !silent.contains(device), model.receipts[edition]?[device] == nil else { return }
        let late = random.chance(scenario.lateReceiptShare)
        if late { covered.insert("lateReceipt") }
        schedule(
            .receipt(device: device, edition: edition),
            at: max(now, pushedAt.addingTimeInterval(late ? random.between(60...600) : random.between(2...40)))
        )
    }

    /// A drain withdraws what was not written yet: answered `notSent` at once.
    func withdraw(send id: Int) {
        guard var send = sends[id] else { return }
        var answers: [BatchSendMachine.Answer] = []
        for push in send.pushes.indices where !send.pushes[push].done && (send.pushes[push].writtenAt.map { $0 > now } ?? true) {
            send.pushes[push].done = true
            let sent = send.pushes[push].answer
            answers.append(AnswerRules.answer(verdict: .notSent, reason: nil, position: sent.position, generation: sent.generation))
        }
        sends[id] = send.pushes.allSatisfy(\.done) ? nil : send
        guard !answers.isEmpty, workers[send.worker].incarnation == send.incarnation else { return }
        send.report(answers)
    }

    func close(_ intervals: inout [(from: Date, until: Date?)]) {
        if let last = intervals.indices.last, intervals[last].until == nil { intervals[last].until = now }
    }
}

/// A worker's clocks against the database's (the virtual time): off by a skew at the start, running a little fast or
/// slow (`drift`), and stepped by NTP (``step(by:)``: the wall clock moves, the monotonic one does not).
final class WorkerClock: @unchecked Sendable {
    let origin: Date
    private(set) var skew: TimeInterval
    let drift: Double

    init(origin: Date, skew: TimeInterval, drift: Double) {
        self.origin = origin
        self.skew = skew
        self.drift = drift
    }

    /// The worker's wall clock at the virtual `instant`.
    func wall(at instant: Date) -> Date {
        instant.addingTimeInterval(skew + drift * instant.timeIntervalSince(origin))
    }

    /// The virtual instant at which the worker's wall clock reads `wall` (the clock as it is stepped now).
    func instant(reading wall: Date) -> Date {
        origin.addingTimeInterval((wall.timeIntervalSince(origin) - skew) / (1 + drift))
    }

    /// The worker's monotonic seconds at the virtual `instant`: the drift, never a step.
    func monotonic(at instant: Date) -> TimeInterval {
        instant.timeIntervalSinceReferenceDate + drift * instant.timeIntervalSince(origin)
    }

    /// NTP steps the wall clock.
    func step(by seconds: TimeInterval) {
        skew += seconds
    }
}

extension Simulation {
    /// Apps registering a share of their devices again during the run (``Scenario/registerAgainShare``), at instants
    /// from before the first broadcast to 20 minutes in: some before a later wave is counted, some after.
    func registrationsAgain(app: Int, devices: [DispatchModel.Device]) {
        guard scenario.registerAgainShare > 0 else { return }
        var draw = SimulationRandom(seed: scenario.seed ^ 0x2E61 ^ UInt64(app))
        // Only devices whose app is still installed with a good token: an uninstalled app registers nothing.
        for device in devices where draw.chance(scenario.registerAgainShare) && provider.tokens[device.id] == nil {
            schedule(.register(device: device.id), at: start.addingTimeInterval(draw.between(1...1200)))
        }
    }

    /// What earlier mornings left (`device_pushes`, `devices.dormant`): yesterday's edition pushed to a share of the
    /// app's devices, each with up to four editions unanswered in a row before it, dormant when that reached the app's
    /// `dormantAfter`; a third of those not silent posted yesterday's receipt since (late: today's count revives them).
    func pastMornings(app: Int, devices: [DispatchModel.Device]) {
        var past = SimulationRandom(seed: scenario.seed ^ 0x9A57 ^ UInt64(app))
        let yesterday = UUID(uuid: (0xD0, 0xA7, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, UInt8(truncatingIfNeeded: app)))
        let after = scenario.dormantAfter[app] ?? 0
        for device in devices where past.chance(scenario.historyShare) {
            let unanswered = past.int(0...4)
            let dormant = after > 0 && unanswered >= after
            model.setHistory(device.id, DispatchModel.PushHistory(edition: yesterday, unanswered: unanswered), dormant: dormant)
            if !silent.contains(device.id) && past.chance(1.0 / 3) {
                model.receive(device: device.id, edition: yesterday, now: start.addingTimeInterval(-600))
            } else {
                unansweredBefore[device.id] = unanswered
                if dormant { dormantBefore.insert(device.id) }
            }
        }
    }
}

/// A simulated worker's hands (``WorkerHands``): what its run loop hands over happens when the simulation says. A send
/// is handed to the simulated providers at once; I/O reaches the model store after the latency the seed draws
/// (``Simulation/handle(_:)`` runs it through the executor); the timer is an item at the virtual instant the worker's
/// clock reads the wake-up.
struct SimulatedHands: WorkerHands {
    let simulation: Simulation
    let worker: Int
    /// The worker's executor (its loop is busy handling the event while the hands act).
    let executor: WorkerExecutor<SimulatedStore, SimulatedTransport>

    func start(_ action: WorkerMachine.Action) {
        if case .confirmLease = action { simulation.covered.insert("leaseConfirm") }
        trace(action)
        simulation.schedule(
            .database(worker: worker, incarnation: simulation.workers[worker].incarnation, action),
            at: simulation.now.addingTimeInterval(simulation.random.between(0.001...0.02))
        )
    }

    func send(_ id: Int64, _ send: BatchSendMachine.Send) {
        trace(.send(id, send))
        let (index, incarnation) = (worker, simulation.workers[worker].incarnation)
        executor.startSend(id, send) { [reference = SimulationReference(simulation)] event in
            reference.simulation.schedule(.event(worker: index, incarnation: incarnation, event), at: reference.simulation.now)
        }
    }

    func wake(at instant: Date) {
        // A microsecond late: the instant computed back from a drifting clock may round to just before its reading.
        let at = simulation.workers[worker].clock.instant(reading: instant).addingTimeInterval(1e-6)
        simulation.workers[worker].nextToken += 1
        let token = simulation.workers[worker].nextToken
        simulation.workers[worker].timer = (at, token)
        simulation.schedule(.wake(worker: worker, incarnation: simulation.workers[worker].incarnation, token: token), at: at)
    }

    func ended(_ batch: LeasedBatch, _ end: WorkerMachine.BatchEnd) {
        trace(.ended(batch, end))
        simulation.workers[worker].held.remove(batch.id)
        if case .givenBack(_, _, let because) = end {
            simulation.covered.insert(because.draining ? "givenBack.draining" : "givenBack.provider")
        }
        if case .lost = end { simulation.covered.insert("leaseLost") }
        if case .unwritten = end {
            // Left to its lease unrecorded (the database away past the patience or the drain's deadline): sent again
            // when the lease expires, like a dead worker's.
            simulation.workers[worker].abandoned.insert(batch.id)
            simulation.covered.insert("unwritten")
        }
    }

    func withdrew(_ id: Int64) {
        trace(.withdraw(id))
        simulation.covered.insert("withdraw")
    }

    private func trace(_ action: WorkerMachine.Action) {
        simulation.note("\(simulation.workers[worker].name)   → \(Simulation.describe(action))")
    }
}
