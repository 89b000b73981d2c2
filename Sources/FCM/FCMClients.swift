import AsyncHTTPClient
import Logging
import NIOCore
import NIOPosix
import PushTransport

/// One ``FCMClient`` per endpoint and service account, made on first use and shared: several apps in one process, on
/// one event-loop group. Apps of one Firebase project with the same service account share the client, its
/// connections, its access token and its quota, as FCM counts them. It is PushTransport's ``PushClients``.
///
/// It is a `Service`: run it in the process's `ServiceGroup`, listed before the services that send with it.
public typealias FCMClients = PushClients<FCMClientFactory>

extension PushClients where Factory == FCMClientFactory {
    /// - Parameters:
    ///   - endpoint: where every client sends: FCM's, or a simulator's.
    ///   - configure: adjusts each client's configuration (connections, timeouts, quota, TLS trust).
    public convenience init(
        endpoint: PushEndpoint = FCMClient.Configuration.production,
        httpClient: HTTPClient = .shared,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.fcm"),
        configure: @escaping @Sendable (inout FCMClient.Configuration) -> Void = { _ in }
    ) {
        self.init(
            factory: FCMClientFactory(endpoint: endpoint, httpClient: httpClient),
            eventLoopGroup: eventLoopGroup,
            logger: logger,
            configure: configure
        )
    }

    /// Where every client sends: FCM's endpoint, or a simulator's (`--fcm-endpoint`, `PAPERBOY_FCM_ENDPOINT`).
    public var endpoint: PushEndpoint { factory.endpoint }

    /// The client that sends as `account`.
    /// - Throws: a `PushTransportError` with code `shutdown` once the clients were shut down; TLS setup errors.
    public func client(for account: FCMServiceAccount) throws -> FCMClient {
        try client(madeFrom: account)
    }
}

/// How ``FCMClients`` makes a client: per service account (told apart by its project, email and key id, never the
/// key), all to one endpoint, fetching access tokens over one HTTP client.
public struct FCMClientFactory: PushClientFactory {
    public struct Key: Hashable, Sendable {
        var endpoint: PushEndpoint
        var projectID: String
        var clientEmail: String
        var privateKeyID: String
    }

    let endpoint: PushEndpoint
    let httpClient: HTTPClient

    public func key(for account: FCMServiceAccount) -> Key {
        Key(endpoint: endpoint, projectID: account.projectID, clientEmail: account.clientEmail, privateKeyID: account.privateKeyID)
    }

    public func makeClient(
        for account: FCMServiceAccount,
        configure: (inout FCMClient.Configuration) -> Void,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger
    ) throws -> FCMClient {
        var configuration = FCMClient.Configuration()
        configuration.endpoint = endpoint
        configure(&configuration)
        return try FCMClient(configuration: configuration, account: account, httpClient: httpClient, eventLoopGroup: eventLoopGroup, logger: logger)
    }
}
