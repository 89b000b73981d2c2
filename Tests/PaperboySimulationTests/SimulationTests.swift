import Foundation
import PaperboyCore
import PaperboyDispatch
import PaperboySimulation
import Testing

/// The simulation, run as CI runs many more of it (`paperboy-sim`): seeds keep every invariant, and the production
/// weeks the issue measured with real processes keep them by construction.
@Suite("The simulation of production weeks")
struct SimulationTests {
    /// A scenario with one app of `devices` APNs devices, one broadcast at `rate` from 5 s, `workers` healthy workers
    /// with exact clocks, and `faults`.
    static func scenario(
        seed: UInt64 = 1,
        workers: Int = 2,
        devices: Int = 120,
        rate: Double = 20,
        providers: Set<PushProvider> = [.apns],
        faults: [Scenario.Fault]
    ) -> Scenario {
        var scenario = Scenario(seed: seed)
        scenario.workers = workers
        scenario.clockSkews = Array(repeating: 0, count: workers)
        scenario.apps = [Scenario.App(id: 1, providers: providers, devices: devices, uninstalled: 0, strayInvalid: 0)]
        scenario.broadcasts = [
            Scenario.Broadcast(id: UUID(), app: 1, start: 5, rate: rate, cohorts: 2, slot: 1, origin: nil)
        ]
        scenario.originCapacity = nil
        scenario.faults = faults
        scenario.lostCommitChance = 0
        scenario.notSentChance = 0
        scenario.fateUnknownChance = 0
        return scenario
    }

    static func expectClean(_ result: Simulation.Result, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.violations.isEmpty, "\(result.scenario): \(result.violations.joined(separator: "; "))", sourceLocation: sourceLocation)
    }

    @Test("200 seeds keep every invariant (CI runs 10,000 more with paperboy-sim)")
    func seeds() async {
        let run = await SimulationRun.run(first: 1, seeds: 200, jobs: 2)
        #expect(run.seeds == 200)
        #expect(run.failures.isEmpty, "\(run.failures.map { "seed \($0.seed): \($0.violations.joined(separator: "; "))" })")
        #expect(run.coverage["kill"] ?? 0 > 0 && run.coverage["hold"] ?? 0 > 0 && run.coverage["takeover"] ?? 0 > 0, "\(run.coverage)")
    }

    @Test("a seed replays: the same seed twice gives the same run")
    func replay() async {
        let first = await Simulation(scenario: Scenario(seed: 42)).run()
        let second = await Simulation(scenario: Scenario(seed: 42)).run()
        #expect(first.events == second.events && first.pushes == second.pushes && first.violations == second.violations)
    }

    @Test(
        "a keyless pod left running leases the evening's first batch while the healthy worker is paused 3 s: the broadcast does not fail, every device is reached once"
    )
    func keylessPodFirstToLease() async {
        let result = await Simulation(
            scenario: Self.scenario(faults: [.keyless(worker: 0, app: 1), .pause(worker: 1, at: 4.5, seconds: 3)])
        ).run()
        Self.expectClean(result)
        #expect(result.covered.contains("givenBack.provider"))
        #expect(!result.covered.contains("failedUnsendable"))
    }

    @Test("an app misconfigured at APNs mid-broadcast, fixed four minutes later: held, no device deactivated, every device reached once")
    func misconfiguration() async {
        let result = await Simulation(scenario: Self.scenario(faults: [.misconfigure(app: 1, provider: .apns, at: 7, fixAt: 250)])).run()
        Self.expectClean(result)
        #expect(result.covered.contains("hold"))
    }

    @Test("a key rotated mid-broadcast, the old file removed and the old key revoked a little later: every device reached once")
    func rotation() async {
        let result = await Simulation(scenario: Self.scenario(faults: [.rotate(app: 1, provider: .apns, at: 8, revokeAt: 9)])).run()
        Self.expectClean(result)
    }

    @Test("nobody has the key: the broadcast fails after --fail-after, not before")
    func nobodyCanSend() async {
        let result = await Simulation(scenario: Self.scenario(faults: [.keyless(worker: 0, app: 1), .keyless(worker: 1, app: 1)])).run()
        Self.expectClean(result)
        #expect(result.covered.contains("failedUnsendable"))
    }

    @Test("a deploy mid-broadcast: the drain withdraws what was not written, ends within its timeout, and the new pod sends the rest once")
    func deploy() async {
        let result = await Simulation(
            scenario: Self.scenario(faults: [.deploy(worker: 0, at: 8, restartAfter: 2), .deploy(worker: 1, at: 9, restartAfter: 3)])
        ).run()
        Self.expectClean(result)
    }
}
