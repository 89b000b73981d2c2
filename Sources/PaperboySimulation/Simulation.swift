import Foundation
import PaperboyCore
import PaperboyDispatch

/// A seeded, deterministic simulation of a production week's morning: several workers, each the real
/// ``WorkerMachine`` with its real ``BatchSendMachine``s, ``SenderHealth`` and ``MisconfigurationGuard``, run against a
/// model of the database (``DispatchModel``, kept equal to PostgreSQL by `ContractTests`) and of the providers
/// (``SimulatedProvider``), on a virtual clock, through the faults the seed draws (``Scenario``). The per-second duties
/// apply the real ``UnsendablePolicy``. After the run, ``Invariants`` checks what every run must keep.
///
/// Each worker is production's ``WorkerExecutor`` over the model store (``SimulatedStore``) and the simulated providers
/// (``SimulatedTransport``): what the simulation decides is only when each call reaches the database and when each push
/// is answered, after latencies the seed draws. A failing seed is a bug report: `paperboy-sim --seed N --trace`
/// replays it with every event.
public final class Simulation {
    public struct Options: Sendable {
        /// Virtual seconds after which the run stops, whatever is left: past every broadcast's deadline (an hour after
        /// its start, 30 s into the run at the latest), so that a broadcast still running then is stuck.
        public var maxTime: TimeInterval = 3700
        /// Print a readable line per event as the run goes.
        public var trace = false
        public var drainTimeout: TimeInterval = 10
        public var failAfter: TimeInterval = 300
        public init(trace: Bool = false) {
            self.trace = trace
        }
    }

    /// What a run did and found.
    public struct Result: Sendable {
        public var scenario: Scenario
        public var violations: [String]
        public var trace: [String]
        /// Events handled, virtual seconds simulated, pushes written.
        public var events: Int
        public var seconds: TimeInterval
        public var pushes: Int
        /// What the run went through, for coverage: fault kinds, holds raised, broadcasts failed, duplicates allowed.
        public var covered: Set<String>
    }

    enum Life: Equatable {
        case running
        case paused
        case dead
        case exited
    }

    struct Worker {
        var name: String
        var incarnation = 0
        /// Production's run loop: its machine, and the executor that carries the actions out over this worker's store and
        /// transport.
        let runLoop: RunningLoop
        var life = Life.running
        /// Its clocks against the database's (the virtual time).
        var clock: WorkerClock
        var buffered: [WorkerMachine.Event] = []
        /// The wake-up the loop asked for, as the simulation scheduled it: a newer one makes it stale.
        var timer: (at: Date, token: Int)?
        var nextToken = 0
        var keyless: Set<Int> = []
        /// The batches it leased and has not ended, for the invariants.
        var held: Set<Int64> = []
        var startedAt: Date
        /// When it ran (not paused, not dead), as intervals: for the unsendable invariant.
        var running: [(from: Date, until: Date?)] = []
        var drainAt: Date?
        var exitedAt: Date?
        var killedAt: Date?
        /// Batches it held when killed, or when paused past its lease: a device of those may be pushed twice.
        var abandoned: Set<Int64> = []
        var pausedAt: Date?
    }

    enum Item {
        case event(worker: Int, incarnation: Int, WorkerMachine.Event)
        case wake(worker: Int, incarnation: Int, token: Int)
        case database(worker: Int, incarnation: Int, WorkerMachine.Action)
        case answers(send: Int, at: Date)
        case fault(Int)
        case revoke(app: Int, provider: PushProvider, generation: Int)
        case fix(app: Int, provider: PushProvider)
        /// An operator's `apps confirm-deactivations`.
        case confirm(app: Int, provider: PushProvider)
        case resume(worker: Int)
        /// The grace period after a SIGTERM is over: SIGKILL if the worker has not exited.
        case graceEnd(worker: Int)
        case restart
        case outageEnd
        case startBroadcast(Int)
        case duties
        /// A reader's app posts its receipt for the edition: the download is on the phone.
        case receipt(device: Int64, edition: UUID)
        /// The app registers the device again (`PUT /v1/devices/{token}`): a dormant one is revived.
        case register(device: Int64)
    }

    struct PendingSend {
        var worker: Int
        var incarnation: Int
        var batch: LeasedBatch
        var pushes: [PendingPush]
        /// The channel's report: the worker's executor hears the answers through it.
        var report: @Sendable ([BatchSendMachine.Answer]) -> Void
    }

    struct PendingPush {
        var position: Int
        var device: Int64
        var provider: PushProvider
        var issuedAt: Date
        var writtenAt: Date?
        var answerAt: Date
        var answer: BatchSendMachine.Answer
        var delivered: Bool
        var misconfiguration: Bool
        /// A visible alert: the alert wave's, or the ready alert in place of a background follow-up.
        var alert: Bool
        var done = false
    }

    let scenario: Scenario
    let options: Options
    var random: SimulationRandom
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    /// The virtual clock every worker's clock reads (each with its skew).
    let time: SimulatedTime
    var now: Date {
        get { time.now }
        set { time.now = newValue }
    }
    var queue = EventQueue<Item>()
    /// The database every worker shares (``SimulatedStore`` reaches it for each worker).
    let database: ModelStore
    var model: DispatchModel {
        _read { yield database.model }
        _modify { yield &database.model }
    }
    var provider: SimulatedProvider
    var workers: [Worker] = []
    var sends: [Int: PendingSend] = [:]
    /// Each worker's pool that failed a connect in the current outage (``poolRefuses(worker:provider:)``).
    var pools: [PoolKey: PoolFailure] = [:]
    /// Every pool's first refused connect of each outage, for the invariants.
    var poolFailures: [PoolFailure] = []
    var nextSend = 0
    /// The generation of each app's current key file: rotation writes a new one and removes the old.
    var keyFiles: [AppProvider: Int] = [:]
    var databaseDown: (from: Date, until: Date)?
    /// The apps' providers whose held deactivations the last duties left waiting for more answers: those answered at or
    /// after the time wait (every one where the fleet's answers said wait; those answered after the latest accepted
    /// push where they said apply).
    var waiting: [HoldKey: Date] = [:]
    /// When each hold was raised and released, for the invariants.
    var holdTimes: [(key: AppProvider, from: Date, until: Date?)] = []
    /// When an operator confirmed an app's provider's deactivations.
    var confirmedAt: [AppProvider: Date] = [:]
    /// When pushes were handed to a provider, per second, per broadcast: the pace the plan promises.
    var handedOver: [UUID: [Int: Int]] = [:]
    /// The devices whose app never posts a receipt (killed, offline): every follow-up wave is for them.
    var silent: Set<Int64> = []
    /// Earlier mornings' counts at the start: each counted device's editions unanswered in a row, and the ones dormant.
    var unansweredBefore: [Int64: Int] = [:]
    var dormantBefore: Set<Int64> = []
    /// When each device registered again during the run (``Item/register(device:)``): from then on it may be pushed in
    /// any wave, dormant before or not.
    var registeredAgain: [Int64: Date] = [:]
    /// The production wave driver over the model (``SimulatedWaveStore``), run by the duties.
    lazy var waves = WaveDriver(store: SimulatedWaveStore(simulation: self), countAhead: 5, owner: "duties", claimSeconds: 600)
    /// What the duties found broken as they went (a broadcast completed with devices it could still wake).
    var found: [String] = []
    var trace: [String] = []
    var events = 0
    var covered: Set<String> = []

    public init(scenario: Scenario, options: Options = Options()) {
        self.scenario = scenario
        self.options = options
        self.random = SimulationRandom(seed: scenario.seed ^ 0xD1CE)
        let time = SimulatedTime(start)
        self.time = time
        self.database = ModelStore(answersOnItsClock: true) { time.now }
        self.provider = SimulatedProvider(notSentChance: scenario.notSentChance, fateUnknownChance: scenario.fateUnknownChance)
    }

    /// Runs the scenario to its end and checks the invariants.
    public func run() async -> Result {
        setUp()
        var looped: String?
        var atInstant = (time: now, events: 0)
        while let (time, item) = queue.pop() {
            guard time.timeIntervalSince(start) <= options.maxTime else { break }
            now = max(now, time)
            events += 1
            atInstant = atInstant.time == now ? (now, atInstant.events + 1) : (now, 1)
            if atInstant.events > 20_000 {
                // A machine that asks to be woken at an instant that has come and does nothing then: a busy loop.
                looped = "the run looped at \(String(format: "%.3f", now.timeIntervalSince(start)))s: more than 20,000 events at one instant"
                break
            }
            await handle(item)
            if finished() { break }
            // A seed's run awaits only calls that return at once: it would hold one of the cooperative threads (one per
            // core) for its whole run. It lets the other tasks run now and then: two seeds at a time in a test once held
            // both threads for 70 s, and every other test of the process (the FCM simulator's, against their time limit)
            // waited for them.
            if events % 1_000 == 0 { await Task.yield() }
        }
        let violations = (looped.map { [$0] } ?? []) + found + Invariants(simulation: self).check()
        return Result(
            scenario: scenario,
            violations: violations,
            trace: trace,
            events: events,
            seconds: now.timeIntervalSince(start),
            pushes: provider.log.count,
            covered: covered
        )
    }

    /// Every broadcast has ended, no worker holds a batch or waits for an answer, and every held deactivation is under a
    /// hold or waits for more answers (the morning goes on after the broadcasts: the duties apply them ten minutes after
    /// their answers, or an operator's fix drops them; one answered after the provider's latest accepted push waits for
    /// the next broadcast).
    func finished() -> Bool {
        model.broadcasts.count == scenario.broadcasts.count && model.broadcasts.values.allSatisfy { $0.state != .running }
            && workers.allSatisfy { $0.life != .running || $0.runLoop.loop.machine.batchesHeld == 0 } && sends.isEmpty
            && model.heldDeactivations.values.allSatisfy { held in
                model.holds[held.key] != nil || waiting[held.key].map { held.answeredAt >= $0 } ?? false
            }
    }

    func note(_ line: @autoclosure () -> String) {
        guard options.trace else { return }
        print(String(format: "%9.3f ", now.timeIntervalSince(start)) + line())
    }

    func schedule(_ item: Item, at time: Date) {
        queue.push(item, at: max(time, now))
    }

    func handle(_ item: Item) async {
        switch item {
        case .event(let index, let incarnation, let event):
            guard workers[index].incarnation == incarnation else { return }
            deliver(event, to: index)
        case .wake(let index, let incarnation, let token):
            guard workers[index].incarnation == incarnation, workers[index].timer?.token == token else { return }
            workers[index].timer = nil
            deliver(.tick, to: index)
        case .database(let index, let incarnation, let action):
            if let event = await workers[index].runLoop.loop.executor.run(action) {
                schedule(.event(worker: index, incarnation: incarnation, event), at: now.addingTimeInterval(random.between(0.001...0.02)))
            }
        case .answers(let id, let at):
            answer(id, at: at)
        case .fault(let index):
            fault(scenario.faults[index])
        case .revoke(let app, let provider, let generation):
            note("provider: app \(app) \(provider.rawValue) key generation \(generation) revoked")
            self.provider.accepted[AppProvider(appID: app, provider: provider), default: []].remove(generation)
        case .fix(let app, let provider):
            let key = AppProvider(appID: app, provider: provider)
            self.provider.misconfigured.remove(key)
            self.provider.topicDisallowed.remove(key)
            let (released, dropped) = model.releaseHold(appID: app, provider: provider, now: now)
            if released { endHolds(of: key) }
            note("operator: app \(app) \(provider.rawValue) fixed; hold released \(released), \(dropped) held deactivations dropped")
        case .confirm(let app, let provider):
            let key = AppProvider(appID: app, provider: provider)
            let (released, deactivated) = model.confirm(appID: app, provider: provider, now: now)
            if released { endHolds(of: key) }
            confirmedAt[key] = now
            if released { covered.insert("confirmed") }
            note("operator: app \(app) \(provider.rawValue) deactivations confirmed; hold released \(released), \(deactivated) deactivated")
        case .resume(let index):
            resume(index)
        case .graceEnd(let index):
            if kill(index) {
                covered.insert("graceKill")
                note("\(workers[index].name) killed at the end of its grace period")
            }
        case .restart:
            addWorker(skew: 0, drift: 0)
            deliver(.started, to: workers.count - 1)
        case .outageEnd:
            note("provider: back")
        case .startBroadcast(let index):
            let plan = scenario.broadcasts[index]
            model.startBroadcast(
                plan.id,
                app: plan.app,
                start: now,
                rate: plan.rate,
                cohorts: plan.cohorts,
                slot: plan.slot,
                deadline: now.addingTimeInterval(plan.deadline),
                origin: plan.origin,
                options: BroadcastOptions(
                    cohorts: plan.cohorts,
                    waveInterval: plan.waveInterval,
                    maxPushesPerDevice: .fixed(plan.waves),
                    alertLastResort: plan.alertLastResort,
                    dormantAfter: scenario.dormantAfter[plan.app] ?? 0
                )
            )
            note(
                "broadcast \(index) started: app \(plan.app), \(Int(plan.rate))/s, \(plan.waves) waves\(plan.alertLastResort ? " and the alert wave" : "")"
            )
        case .duties:
            await duties()
            schedule(.duties, at: now.addingTimeInterval(1))
        case .receipt(let device, let edition):
            model.receive(device: device, edition: edition, now: now)
        case .register(let device):
            let wasDormant = model.devices[device]?.dormant == true
            model.register(device, now: now)
            registeredAgain[device] = now
            if wasDormant { covered.insert("revivedByRegistration") }
            note("device \(device) registered again\(wasDormant ? ": no longer dormant" : "")")
        }
    }
}

/// The simulation's events in time order; events at the same instant in the order they were scheduled. The heap holds
/// only each event's instant and sequence number, its item beside it: sifting moves two words, not an event's payload
/// (copying payloads through the heap was most of the simulation's time).
struct EventQueue<Item> {
    private var heap: [(time: Date, sequence: Int)] = []
    private var items: [Int: Item] = [:]
    private var sequence = 0

    mutating func push(_ item: Item, at time: Date) {
        sequence += 1
        items[sequence] = item
        heap.append((time, sequence))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (Date, Item)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count && Self.before(heap[left], heap[first]) { first = left }
            if right < heap.count && Self.before(heap[right], heap[first]) { first = right }
            guard first != parent else { break }
            heap.swapAt(parent, first)
            parent = first
        }
        return (top.time, items.removeValue(forKey: top.sequence)!)
    }

    private static func before(_ a: (time: Date, sequence: Int), _ b: (time: Date, sequence: Int)) -> Bool {
        (a.time, a.sequence) < (b.time, b.sequence)
    }
}

/// The simulation's virtual clock, which every worker's ``BroadcastClock`` reads.
///
/// Not thread-safe, and need not be: a simulation runs on one task, and nothing of it leaves that task.
final class SimulatedTime: @unchecked Sendable {
    var now: Date

    init(_ start: Date) {
        now = start
    }
}

/// The simulation, for the executors' callbacks (a channel's report), which run on the simulation's one task.
/// A worker's run loop, held by reference: while it handles an event, its hands reach back into the simulation's workers.
final class RunningLoop {
    var loop: WorkerLoop<SimulatedStore, SimulatedTransport>

    init(_ loop: WorkerLoop<SimulatedStore, SimulatedTransport>) {
        self.loop = loop
    }
}

struct SimulationReference: @unchecked Sendable {
    unowned let simulation: Simulation

    init(_ simulation: Simulation) {
        self.simulation = simulation
    }
}
