import Logging
import NIOCore
import NIOPosix
import PushTransport

/// The APNs endpoints Paperboy sends to, per environment: Apple's by default, or one APNs-compatible
/// server (such as `paperboy apns-sim`) standing in for both.
public struct APNsEndpoints: Sendable, Hashable {
    public var production: APNsEndpoint
    public var sandbox: APNsEndpoint

    public init(production: APNsEndpoint = .production, sandbox: APNsEndpoint = .sandbox) {
        self.production = production
        self.sandbox = sandbox
    }

    /// Apple's endpoints, or `override` (a URL, e.g. from `--apns-endpoint` or `PAPERBOY_APNS_ENDPOINT`)
    /// for both environments.
    public init(override: String?) throws(APNsEndpointError) {
        if let override, !override.isEmpty {
            let endpoint = try APNsEndpoint(override)
            self.init(production: endpoint, sandbox: endpoint)
        } else {
            self.init()
        }
    }

    /// The endpoint of one environment: `sandbox` for development builds, else production.
    public func endpoint(sandbox isSandbox: Bool) -> APNsEndpoint {
        isSandbox ? sandbox : production
    }
}

/// One ``APNsClient`` per endpoint and signing key, made on first use and shared: several apps (topics, keys) and
/// both environments in one process, on one event-loop group. It is PushTransport's ``PushClients``.
///
/// Apps that share a key (one team's key signs for all its apps) share the client, its connections and its provider
/// token, as APNs expects: a key's token is refreshed for all its apps at once.
///
/// It is a `Service`: run it in the process's `ServiceGroup`, listed before the services that send with it (a
/// dispatcher), so that the group, which stops services in reverse order, stops them first and the batches they
/// finish on the way out still have their connections.
public typealias APNsClients = PushClients<APNsClientFactory>

extension PushClients where Factory == APNsClientFactory {
    /// - Parameter configure: adjusts each client's configuration (connections, timeouts, TLS trust).
    public convenience init(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.apns"),
        configure: @escaping @Sendable (inout APNsClient.Configuration) -> Void = { _ in }
    ) {
        self.init(factory: APNsClientFactory(), eventLoopGroup: eventLoopGroup, logger: logger, configure: configure)
    }

    /// The client that sends to `endpoint` with `key`.
    /// - Throws: ``APNsTransportError`` with code `shutdown` once the clients were shut down; the client's
    ///   TLS setup errors.
    public func client(for key: APNsSigningKey, endpoint: APNsEndpoint) throws -> APNsClient {
        try client(madeFrom: (key, endpoint))
    }
}

/// How ``APNsClients`` makes a client: per endpoint and signing key (told apart by the key's id, team and public
/// key's fingerprint, never the private key itself: a `.p8` replaced under the same key id, say after a wrong file
/// was first installed, gets a client of its own rather than the old key's).
public struct APNsClientFactory: PushClientFactory {
    public struct Key: Hashable, Sendable {
        var endpoint: APNsEndpoint
        var keyID: String
        var teamID: String
        var fingerprint: String
    }

    public func key(for credentials: (key: APNsSigningKey, endpoint: APNsEndpoint)) -> Key {
        Key(
            endpoint: credentials.endpoint,
            keyID: credentials.key.keyID,
            teamID: credentials.key.teamID,
            fingerprint: credentials.key.fingerprint
        )
    }

    public func makeClient(
        for credentials: (key: APNsSigningKey, endpoint: APNsEndpoint),
        configure: (inout APNsClient.Configuration) -> Void,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger
    ) throws -> APNsClient {
        var configuration = APNsClient.Configuration(endpoint: credentials.endpoint)
        configure(&configuration)
        return try APNsClient(configuration: configuration, key: credentials.key, eventLoopGroup: eventLoopGroup, logger: logger)
    }
}
