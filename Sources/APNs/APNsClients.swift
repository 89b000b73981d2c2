import Logging
import NIOCore
import NIOPosix
import PushTransport
import ServiceLifecycle

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

/// One ``APNsClient`` per endpoint and signing key, made on first use and shared: several apps (topics,
/// keys) and both environments in one process, on one event-loop group.
///
/// Apps that share a key (one team's key signs for all its apps) share the client, its connections and
/// its provider token, as APNs expects: a key's token is refreshed for all its apps at once.
///
/// It is a `Service`: run it in the process's `ServiceGroup`, listed before the services that send with it
/// (a dispatcher), so that the group, which stops services in reverse order, stops them first and the
/// batches they finish on the way out still have their connections.
public final class APNsClients: Sendable {
    private struct Key: Hashable {
        var endpoint: APNsEndpoint
        var keyID: String
        var teamID: String
    }

    private let configure: @Sendable (inout APNsClient.Configuration) -> Void
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let cache = PushClientCache<Key, APNsClient>(service: "APNs") { await $0.shutdown() }

    /// - Parameter configure: adjusts each client's configuration (connections, timeouts, TLS trust).
    public init(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "paperboy.apns"),
        configure: @escaping @Sendable (inout APNsClient.Configuration) -> Void = { _ in }
    ) {
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.configure = configure
    }

    /// The client that sends to `endpoint` with `key`.
    /// - Throws: ``APNsTransportError`` with code `shutdown` once the clients were shut down; the client's
    ///   TLS setup errors.
    public func client(for key: APNsSigningKey, endpoint: APNsEndpoint) throws -> APNsClient {
        try cache.client(for: Key(endpoint: endpoint, keyID: key.keyID, teamID: key.teamID)) {
            var configuration = APNsClient.Configuration(endpoint: endpoint)
            configure(&configuration)
            return try APNsClient(configuration: configuration, key: key, eventLoopGroup: eventLoopGroup, logger: logger)
        }
    }

    /// How many clients exist: one per endpoint and key used so far.
    public var count: Int { cache.count }

    /// Shuts every client down (their in-flight requests finish first) and makes no new ones.
    ///
    /// In a `ServiceGroup`, ``run()`` does this on graceful shutdown.
    public func shutdown() async {
        await cache.shutdown()
    }
}

extension APNsClients: Service {
    /// Keeps the clients until the service group shuts down gracefully (or cancels this task), then shuts
    /// them down: see ``shutdown()``.
    public func run() async {
        // Throws only when cancelled, which ends the clients the same way.
        try? await gracefulShutdown()
        await shutdown()
    }
}
