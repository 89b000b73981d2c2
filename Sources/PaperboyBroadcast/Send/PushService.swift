import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore

/// One push provider as the dispatcher uses it: where an app's credentials for it live and how they are loaded,
/// how a client is made from them, how an edition becomes its pushes, how they are sent, and what each answer
/// means for the device. APNs (``APNsService``) and FCM (``FCMService``) conform; a third provider is one more
/// conformance and one more ``ProviderChannels`` in the list a ``Dispatcher`` is given: nothing else names a provider.
public protocol PushService: Sendable {
    /// Where an app's secret for this provider lives and what names it, as stored: never the secret itself.
    associatedtype Credentials: Sendable & Equatable
    /// The secret as loaded (a signing key, a service account).
    associatedtype Secret: Sendable
    associatedtype Client: Sendable
    /// An edition's pushes for one batch, made (and their sizes checked) before anything is sent.
    associatedtype Pushes: Sendable

    static var provider: PushProvider { get }

    /// Refuses an edition one of whose pushes through this provider cannot be built, before it is published or
    /// broadcast (``BroadcastPreflight/checkPushes(_:)``).
    static func checkPushes(_ edition: Edition) throws(PushCheckFailure)

    /// Refuses an app that cannot send its devices of this provider from this process: credentials missing (where
    /// the provider's devices cannot simply be skipped) or unreadable here (``BroadcastPreflight/checkCredentials(_:for:)``).
    static func checkCredentials(_ app: App) throws(ChannelError)

    /// The app's credentials for this provider; nil when it has none (its devices are then skipped).
    func credentials(of app: App) -> Credentials?

    /// Reads the secret the credentials name (a file, an environment variable).
    /// - Throws: ``ChannelError`` naming the app and what is missing or wrong; never the secret.
    func load(_ credentials: Credentials, app: App) throws(ChannelError) -> Secret

    /// What tells two loaded secrets apart without revealing either (a public key, a private key's id).
    func fingerprint(_ secret: Secret) -> String

    /// The client that sends with `secret` to the environment's endpoint.
    func client(for secret: Secret, environment: APNsEnvironment) throws -> Client

    /// The edition's pushes for `batch`.
    /// - Throws: when a push cannot be built (too large): the broadcast cannot be sent at all.
    func pushes(for edition: Edition, batch: LeasedBatch, readyAlerts: Bool) throws -> Pushes

    /// Whether `pushes` hold the ready alert (``APNsService/readyNotification(for:wave:sentAt:)``).
    func hasReadyAlert(_ pushes: Pushes) -> Bool

    /// Sends `items` (their targets) at `sentAt` and reports what each answer means through `report`, every item
    /// exactly once, as the answers come (in groups); returns when every item was reported.
    func send(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        app: App,
        pushes: Pushes,
        sentAt: Date,
        generation: Int,
        client: Client,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) async

    /// True while the client cannot reach its endpoint or it does not answer.
    func isUnreachable(_ client: Client) -> Bool

    /// How long the client's connections may answer nothing before they count as stalled, now.
    func silenceLimit(_ client: Client) -> Duration
}

/// An app's pushes cannot be sent by this worker: unknown app, or its credentials are missing or unreadable here.
public struct ChannelError: Error, CustomStringConvertible, Equatable {
    public var message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}

/// A push of an edition cannot be built: which tier's, which push, and the provider's reason.
public struct PushCheckFailure: Error, CustomStringConvertible {
    public var tier: ImageTier
    /// The push, as an operator reads it ("the small tier's background push").
    public var push: String
    public var underlying: any Error
    public var description: String { "\(push) cannot be sent: \(underlying)" }
}

/// A provider's client with the batch's pushes made.
struct PreparedChannel<Service: PushService>: BatchChannel {
    let service: Service
    let client: Service.Client
    let app: App
    let pushes: Service.Pushes
    let generation: Int

    var provider: PushProvider { Service.provider }
    var isUnreachable: Bool { service.isUnreachable(client) }
    var silenceLimit: Duration { service.silenceLimit(client) }

    func send(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        sentAt: Date,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) async {
        await service.send(
            items,
            targets: targets,
            app: app,
            pushes: pushes,
            sentAt: sentAt,
            generation: generation,
            client: client,
            logger: logger,
            report: report
        )
    }
}
