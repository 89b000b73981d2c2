import Foundation
import Logging
import PaperboyCore

/// The providers a worker sends through, as one protocol: the seam between ``WorkerExecutor`` and the pushes' way
/// out. Production's conformance is the HTTP/2 clients with their retry policies and answer rules
/// (`ProviderTransport` over `ProviderChannels`, in PaperboyBroadcast); the simulation's answers as its simulated
/// providers would.
public protocol WorkerTransport: Sendable {
    associatedtype App: WorkerApp
    associatedtype Edition: Sendable

    /// The providers the app has credentials for, among those this worker sends through.
    func configuredProviders(for app: App) -> Set<PushProvider>
    /// The batch's way out through `provider`, with its pushes made; nil when this worker sends nothing through it.
    /// - Throws: ``PushBuildError`` when a push cannot be built.
    func way(_ provider: PushProvider, for batch: LeasedBatch, app: App, edition: Edition) throws(PushBuildError) -> BatchWay?
    /// Reads the app's credentials for `provider` again after the provider refused those of `refusedGeneration`:
    /// `app` as the store has it now; nil when this worker sends nothing through the provider.
    func reload(_ provider: PushProvider, app: App, environment: APNsEnvironment, refusedGeneration: Int) -> BatchSendMachine.Reload?
}

/// How a batch can go out through one provider on this worker.
public enum BatchWay: Sendable {
    /// With this channel; `readyAlert` when its pushes include the ready alert.
    case ready(any BatchChannel, readyAlert: Bool)
    /// The app has no credentials for the provider.
    case notConfigured
    /// The app has credentials, but this worker cannot load them.
    case unavailable(String)
}

/// One provider's way out for one batch, whatever the provider: what the executor sends with.
public protocol BatchChannel: Sendable {
    var provider: PushProvider { get }
    /// The generation of the credentials it sends with.
    var generation: Int { get }
    /// True while the provider cannot be reached or does not answer.
    var isUnreachable: Bool { get }
    /// How long the provider's connections may answer nothing before they count as stalled, now.
    var silenceLimit: Duration { get }
    /// Sends `items` (their `targets`) at `sentAt` and reports every item's answer exactly once through `report`, in
    /// groups as they come; returns when every item was reported.
    func send(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        sentAt: Date,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) async
    /// Starts ``send(_:targets:sentAt:logger:report:)`` without waiting for it; withdrawn (a drain), what was not
    /// written yet is answered `notSent`. By default a task of its own.
    func start(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        sentAt: Date,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) -> any SendInFlight
}

extension BatchChannel {
    public func start(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        sentAt: Date,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) -> any SendInFlight {
        Task { await send(items, targets: targets, sentAt: sentAt, logger: logger, report: report) }
    }
}

/// A send started and not yet answered in full.
public protocol SendInFlight: Sendable {
    /// Stops writing what was not written yet: those items are answered `notSent`; what was written is answered
    /// when the provider answers.
    func withdraw()
}

extension Task: SendInFlight where Success == Void, Failure == Never {
    public func withdraw() { cancel() }
}

/// A batch's pushes cannot be built (a payload over the provider's limit): the broadcast cannot be sent at all.
public struct PushBuildError: Error, CustomStringConvertible {
    public var provider: PushProvider
    public var underlying: any Error
    public var description: String { "the \(provider.displayName) push cannot be built: \(underlying)" }

    public init(provider: PushProvider, underlying: any Error) {
        self.provider = provider
        self.underlying = underlying
    }
}
