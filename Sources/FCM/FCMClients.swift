import AsyncHTTPClient
import Logging
import NIOCore
import NIOPosix
import PushTransport
import ServiceLifecycle

/// One ``FCMClient`` per endpoint and service account, made on first use and shared: several apps in one process,
/// on one event-loop group. Apps of one Firebase project with the same service account share the client, its
/// connections, its access token and its quota, as FCM counts them.
///
/// It is a `Service`: run it in the process's `ServiceGroup`, listed before the services that send with it.
public final class FCMClients: Sendable {
    private struct Key: Hashable {
        var endpoint: PushEndpoint
        var projectID: String
        var clientEmail: String
        var privateKeyID: String
    }

    /// Where every client sends: FCM's endpoint, or a simulator's (`--fcm-endpoint`, `PAPERBOY_FCM_ENDPOINT`).
    public let endpoint: PushEndpoint
    private let configure: @Sendable (inout FCMClient.Configuration) -> Void
    private let httpClient: HTTPClient
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let cache = PushClientCache<Key, FCMClient>(service: "FCM") { await $0.shutdown() }

    /// - Parameter configure: adjusts each client's configuration (connections, timeouts, quota, TLS trust).
    public init(
        endpoint: PushEndpoint = FCMClient.Configuration.production,
        httpClient: HTTPClient = .shared,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.fcm"),
        configure: @escaping @Sendable (inout FCMClient.Configuration) -> Void = { _ in }
    ) {
        self.endpoint = endpoint
        self.httpClient = httpClient
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.configure = configure
    }

    /// The client that sends as `account`.
    /// - Throws: a `PushTransportError` with code `shutdown` once the clients were shut down; TLS setup errors.
    public func client(for account: FCMServiceAccount) throws -> FCMClient {
        let key = Key(endpoint: endpoint, projectID: account.projectID, clientEmail: account.clientEmail, privateKeyID: account.privateKeyID)
        return try cache.client(for: key) {
            var configuration = FCMClient.Configuration()
            configuration.endpoint = endpoint
            configure(&configuration)
            return try FCMClient(
                configuration: configuration,
                account: account,
                httpClient: httpClient,
                eventLoopGroup: eventLoopGroup,
                logger: logger
            )
        }
    }

    /// How many clients exist: one per service account used so far.
    public var count: Int { cache.count }

    /// Shuts every client down (their in-flight requests finish first) and makes no new ones.
    public func shutdown() async {
        await cache.shutdown()
    }
}

extension FCMClients: Service {
    /// Keeps the clients until the service group shuts down gracefully (or cancels this task), then shuts them down.
    public func run() async {
        // Throws only when cancelled, which ends the clients the same way.
        try? await gracefulShutdown()
        await shutdown()
    }
}
