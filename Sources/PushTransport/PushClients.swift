import Logging
import NIOCore
import Synchronization

/// How ``PushClients`` makes its clients: what a client is made from (an APNs signing key and endpoint, an FCM
/// service account), what tells two clients apart, and the client itself.
public protocol PushClientFactory: Sendable {
    associatedtype Provider: PushProviderProtocol
    /// What a client is made from.
    associatedtype Credentials
    /// Clients for equal keys are one client: an endpoint and the credentials' identity, never a secret.
    associatedtype Key: Hashable & Sendable

    func key(for credentials: Credentials) -> Key
    /// A new client for `credentials`; `configure` adjusts its configuration before it is made.
    func makeClient(
        for credentials: Credentials,
        configure: (inout Provider.Configuration) -> Void,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger
    ) throws -> PushClient<Provider>
}

/// One ``PushClient`` per endpoint and credentials, made on first use and shared until shut down: several apps and
/// environments in one process, on one event-loop group. Apps that share credentials (one team's APNs key, one
/// Firebase project's service account) share the client, its connections, its credential and its quota, as the
/// provider counts them. `APNsClients` and `FCMClients` are this for APNs and FCM.
///
/// It is a `Service`: run it in the process's `ServiceGroup`, listed before the services that send with it (a
/// dispatcher), so that the group, which stops services in reverse order, stops them first and the batches they
/// finish on the way out still have their connections.
public final class PushClients<Factory: PushClientFactory>: Sendable {
    private struct State {
        var clients: [Factory.Key: PushClient<Factory.Provider>] = [:]
        var isShutdown = false
    }

    /// How clients are made.
    package let factory: Factory
    private let configure: @Sendable (inout Factory.Provider.Configuration) -> Void
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let state = Mutex(State())

    /// - Parameter configure: adjusts each client's configuration (connections, timeouts, TLS trust).
    package init(
        factory: Factory,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger,
        configure: @escaping @Sendable (inout Factory.Provider.Configuration) -> Void
    ) {
        self.factory = factory
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.configure = configure
    }

    /// The client for `credentials`, made the first time.
    /// - Throws: a ``PushTransportError`` with code `shutdown` once the clients were shut down; the client's TLS
    ///   setup errors.
    package func client(madeFrom credentials: Factory.Credentials) throws -> PushClient<Factory.Provider> {
        let key = factory.key(for: credentials)
        return try state.withLock { state in
            guard !state.isShutdown else {
                throw PushTransportError(.shutdown, "the \(Factory.Provider.service) client was shut down")
            }
            if let client = state.clients[key] { return client }
            let client = try factory.makeClient(for: credentials, configure: configure, eventLoopGroup: eventLoopGroup, logger: logger)
            state.clients[key] = client
            return client
        }
    }

    /// How many clients exist: one per endpoint and credentials used so far.
    public var count: Int { state.withLock { $0.clients.count } }

    /// Shuts every client down (their in-flight requests finish first) and makes no new ones.
    ///
    /// In a `ServiceGroup`, `run()` does this on graceful shutdown.
    public func shutdown() async {
        let all = state.withLock { state in
            state.isShutdown = true
            defer { state.clients.removeAll() }
            return Array(state.clients.values)
        }
        await withDiscardingTaskGroup { group in
            for client in all { group.addTask { await client.shutdown() } }
        }
    }
}
