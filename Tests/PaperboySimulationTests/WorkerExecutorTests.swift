import Foundation
import Logging
import PaperboyCore
import PaperboySimulation
import Testing

@testable import PaperboyDispatch

/// ``WorkerExecutor`` itself, over the model store and a transport whose key file a test rotates: the executor's own
/// code, which production and the simulation both run.
@Suite("The worker's executor")
struct WorkerExecutorTests {
    /// The app's key as this worker finds it (a generation that a rotation raises), and whether its provider can be
    /// reached (every channel reports it unreachable while `away` is set).
    final class TestTransport: WorkerTransport, @unchecked Sendable {
        var generation = 1
        var away = false

        func configuredProviders(for app: SimulatedApp) -> Set<PushProvider> { app.providers }

        func way(_ provider: PushProvider, for batch: LeasedBatch, app: SimulatedApp, edition: UUID) throws(PushBuildError) -> BatchWay? {
            .ready(Channel(provider: provider, generation: generation, transport: self), readyAlert: false)
        }

        func reload(_ provider: PushProvider, app: SimulatedApp, environment: APNsEnvironment, refusedGeneration: Int) -> BatchSendMachine.Reload? {
            generation > refusedGeneration ? .changed(generation: generation) : .unchanged
        }

        struct Channel: BatchChannel {
            var provider: PushProvider
            var generation: Int
            let transport: TestTransport
            var isUnreachable: Bool { transport.away }
            var silenceLimit: Duration { .seconds(2) }
            func send(
                _ items: [BatchSendMachine.Push],
                targets: [BatchTarget],
                sentAt: Date,
                logger: Logger,
                report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
            ) async {}
        }
    }

    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// An executor over the model store holding one app (APNs) with three devices and a broadcast to them running at
    /// ``start``, on a clock standing at ``start``.
    static func executorOverOneBroadcast() -> (ModelStore, TestTransport, WorkerExecutor<ModelStore, TestTransport>) {
        var model = DispatchModel()
        model.addApp(1, providers: [.apns], version: 1)
        model.addDevices(
            (1...3).map { id in
                DispatchModel.Device(
                    id: Int64(id),
                    app: 1,
                    token: .apns(DeviceToken(bytes: Array(repeating: UInt8(id), count: 32))),
                    key: Int64(id) * 1000,
                    platform: .ios,
                    tier: .large,
                    registeredAt: start.addingTimeInterval(-86_400)
                )
            }
        )
        model.startBroadcast(UUID(), app: 1, start: start, rate: 10, cohorts: 1, slot: 1, deadline: start.addingTimeInterval(3600))
        let store = ModelStore(model: model, answersOnItsClock: true) { start }
        let transport = TestTransport()
        let executor = WorkerExecutor(
            store: store,
            transport: transport,
            owner: "w1",
            configuration: WorkerMachine.Configuration(),
            clock: BroadcastClock(now: { start }, sleep: { _ in }),
            logger: Logger(label: "paperboy.test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        return (store, transport, executor)
    }

    @Test(
        "credentials changed mid-batch (a rotation): after the reload, the batch is recorded under the app as read again, so that its devices' \"not valid\" answers are held, not dropped as answers to an older configuration"
    )
    func reloadRecordsUnderTheAppReadAgain() async throws {
        let start = Self.start
        let (store, transport, executor) = Self.executorOverOneBroadcast()
        guard
            case .leased(let leased?) = await executor.run(
                .lease(WorkerMachine.LeaseRequest(excludingBatches: [], excludingApps: [], excludingProviders: []))
            )
        else {
            Issue.record("nothing leased")
            return
        }
        guard case .batchRead(_, let contents) = await executor.run(.read(leased)) else {
            Issue.record("the batch was not read")
            return
        }
        #expect(contents.configuration == 1)
        // `paperboy apps set-apns`: a new key file, a new configuration version; the old key is refused.
        store.model.setCredentials(appID: 1, provider: .apns, now: Date())
        transport.generation = 2
        let reloaded = await executor.run(.reloadCredentials(leased, .apns, refusedGeneration: 1))
        #expect(reloaded == .credentialsReloaded(leased.id, .apns, .changed(generation: 2)))
        let outcomes = contents.targets.map {
            BatchOutcome(deviceID: $0.deviceID, sentAt: start, result: .rejected(reason: "BadDeviceToken", deactivates: .deferred))
        }
        #expect(await executor.run(.write(leased, .record(outcomes))) == .written(leased.id))
        #expect(store.model.heldDeactivations.keys.sorted() == [1, 2, 3], "answers to the new key, recorded under its configuration")
    }

    @Test(
        "a provider found unreachable while a batch is still being read reaches the batch once it is sending (the simulation's seed 3332: the change was taken at a tick during the read, dropped, and never told again)"
    )
    func reachabilitySeenDuringTheReadReachesTheBatch() async throws {
        let (_, transport, executor) = Self.executorOverOneBroadcast()
        var machine = WorkerMachine(configuration: WorkerMachine.Configuration())
        let lease = try #require(executor.handle(.started, &machine).first { if case .lease = $0 { true } else { false } })
        let leased = try #require(await executor.run(lease))
        let read = try #require(executor.handle(leased, &machine).first { if case .read = $0 { true } else { false } })
        // The read registers the batch's channels with the executor; APNs goes away before its answer is handled.
        let contents = try #require(await executor.run(read))
        transport.away = true
        _ = executor.handle(.tick, &machine)
        #expect(machine.providerPauses.isEmpty, "still being read: the batch has not heard yet")
        _ = executor.handle(contents, &machine)
        #expect(machine.providerPauses.map(\.key.provider) == [.apns], "sending now: it holds its sends for APNs, and says so")
        transport.away = false
        _ = executor.handle(.tick, &machine)
        #expect(machine.providerPauses.isEmpty, "APNs is back")
    }

    /// A worker's clocks as a test moves them: NTP steps the wall clock; the monotonic one only runs.
    final class SteppedClock: @unchecked Sendable {
        var wall: Date
        var monotonic: TimeInterval = 1000
        init(_ wall: Date) { self.wall = wall }
    }

    @Test(
        "the store's clock, once measured, runs on the worker's monotonic clock: NTP stepping the wall clock moves neither the machines' instant nor the slots (a batch sent 1.47 s late, on top of the next: the simulation's seed 1324)"
    )
    func storeClockRunsOnTheMonotonicClock() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let local = SteppedClock(start.addingTimeInterval(-2))
        let store = ModelStore(answersOnItsClock: true) { start }
        let executor = WorkerExecutor(
            store: store,
            transport: TestTransport(),
            owner: "w1",
            configuration: WorkerMachine.Configuration(),
            clock: BroadcastClock(now: { local.wall }, sleep: { _ in }, monotonic: { local.monotonic }),
            logger: Logger(label: "paperboy.test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        #expect(executor.moment().now == local.wall, "not measured yet: the worker's own clock")
        _ = await executor.run(.reportStatus)
        #expect(executor.moment().now == start, "measured at the heartbeat: the store's clock, two seconds ahead of the worker's")
        #expect(executor.offset == 2)
        local.wall = local.wall.addingTimeInterval(-1.47)
        #expect(executor.moment().now == start, "a step of the wall clock does not move the store's clock as the worker reads it")
        #expect(abs(executor.offset - 3.47) < 1e-6, "the worker's own clock sleeps 3.47 s behind it now")
        local.monotonic += 2.5
        local.wall = local.wall.addingTimeInterval(2.5)
        #expect(executor.moment().now == start.addingTimeInterval(2.5))
        #expect(executor.moment().monotonic == 1002.5)
    }
}
