import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch

/// One worker's way out to the simulated providers, behind the same ``WorkerTransport`` protocol as the HTTP/2
/// clients: the app's key file as this worker finds it (missing on a keyless worker, a new generation after a
/// rotation), and each batch's channel, whose pushes ``SimulatedProvider`` answers at the instants it decides.
///
/// Not thread-safe, and need not be: a simulation runs on one task, and nothing of it leaves that task.
final class SimulatedTransport: WorkerTransport, @unchecked Sendable {
    typealias App = SimulatedApp
    typealias Edition = UUID

    unowned let simulation: Simulation
    let worker: Int
    /// The credentials generation each app's provider channel holds on this worker (`ProviderChannels`' entries).
    var generations: [AppProvider: Int] = [:]

    init(simulation: Simulation, worker: Int) {
        self.simulation = simulation
        self.worker = worker
    }

    func configuredProviders(for app: SimulatedApp) -> Set<PushProvider> {
        app.providers
    }

    /// `ProviderChannels.way`: not configured, the key file missing here, or ready with the current key file's
    /// generation (loaded again when it changed, as `apps set-apns` makes every worker do).
    func way(_ provider: PushProvider, for batch: LeasedBatch, app: SimulatedApp, edition: UUID) throws(PushBuildError) -> BatchWay? {
        guard app.providers.contains(provider) else { return .notConfigured }
        if simulation.workers[worker].keyless.contains(app.id) {
            return .unavailable("app \(app.id): its \(provider.displayName) key file does not exist on this worker")
        }
        let key = AppProvider(appID: app.id, provider: provider)
        let current = simulation.keyFiles[key] ?? 1
        if (generations[key] ?? 0) < current { generations[key] = current }
        return .ready(
            SimulatedChannel(simulation: simulation, worker: worker, batch: batch, provider: provider, generation: generations[key]!),
            // As `APNsService.hasReadyAlert`: APNs carries the ready alert in a background wave that may hold it; FCM none.
            readyAlert: provider == .apns && batch.readyAlertsFrom != nil
        )
    }

    /// `ProviderChannels.reload`: newer credentials another batch loaded, else the current key file's.
    func reload(_ provider: PushProvider, app: SimulatedApp, environment: APNsEnvironment, refusedGeneration: Int) -> BatchSendMachine.Reload? {
        simulation.covered.insert("reload")
        let key = AppProvider(appID: app.id, provider: provider)
        if simulation.workers[worker].keyless.contains(app.id) { return .failed("app \(app.id): its key file does not exist on this worker") }
        if let cached = generations[key], cached > refusedGeneration { return .changed(generation: cached) }
        let current = simulation.keyFiles[key] ?? 1
        guard current != refusedGeneration else { return .unchanged }
        generations[key] = current
        return .changed(generation: current)
    }
}

/// A batch's way out through one simulated provider: its pushes handed over now, each written and answered when
/// ``SimulatedProvider`` decides; unreachable while the provider takes no connection.
struct SimulatedChannel: BatchChannel, @unchecked Sendable {
    unowned let simulation: Simulation
    let worker: Int
    let batch: LeasedBatch
    let provider: PushProvider
    let generation: Int

    var isUnreachable: Bool {
        simulation.poolUnreachable(worker: worker, provider: provider)
    }

    /// The HTTP/2 clients' silence limit, as the simulation's providers go quiet.
    var silenceLimit: Duration { .seconds(2) }

    func send(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        sentAt: Date,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) async {
        preconditionFailure("the simulation starts its sends and answers them at the instants it decides")
    }

    func start(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        sentAt: Date,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) -> any SendInFlight {
        simulation.handOver(items, targets: targets, through: self, report: report)
    }
}

/// A simulated send: withdrawn, what was not written yet is answered `notSent`.
struct SimulatedSend: SendInFlight, @unchecked Sendable {
    unowned let simulation: Simulation
    let id: Int

    func withdraw() {
        simulation.withdraw(send: id)
    }
}
