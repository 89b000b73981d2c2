import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import PaperboyStore
import PostgresNIO
import Prometheus
import ServiceLifecycle

/// How the HTTP API is served.
public struct APIConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    /// The bearer token for operator endpoints (`PAPERBOY_ADMIN_TOKEN`); without it they answer 401.
    public var adminToken: String?
    /// The largest request body accepted; larger answers 413.
    public var maxBodyBytes: Int = 16 * 1024
    /// The largest edition file accepted by `POST /v1/editions`: a manifest lists every page.
    public var maxEditionBodyBytes: Int = 1024 * 1024
    /// How long an app found by its device key is remembered.
    public var appCacheTimeToLive: Duration = .seconds(30)
    /// How long a device key that is no app's is remembered as such (answering 401 without asking the
    /// database); a key created meanwhile works once this has passed. Keys are random, so only guessed
    /// ones are remembered.
    public var unknownKeyCacheTimeToLive: Duration = .seconds(30)
    /// How long `/health/ready` waits for the database.
    public var readinessTimeout: Duration = .seconds(2)
    /// Why this process cannot send some pushes (its dispatcher's `SenderHealth`), listed by the admin listener's
    /// `/health/ready`. Nil in a process without a dispatcher.
    public var senderProblems: (@Sendable () -> [String])?
    /// Whether sender problems make `/health/ready` answer 503: a worker's do (its batches are left to the others);
    /// a serve's API does not (one app's missing key must not take every API replica out of the load balancer).
    public var sendersGateReadiness = true
    /// Whether `/health/ready` says why it is not ready (`serve --admin-port`'s listener) or only up or down (any
    /// listener a stranger may reach).
    public var readinessReasons = false
    /// The reverse proxies whose `X-Forwarded-For` names the client (`serve --trusted-proxy`).
    public var trustedProxies: TrustedProxies = .none
    /// A connection that sends nothing the server can read as part of a request (a request's head not complete, no
    /// body part, nothing since its last answer) for this long is closed (`serve --idle-timeout`): a few thousand
    /// idle or trickling sockets (slowloris) cannot hold the listener. A stream being answered (the console's live
    /// updates) is not idle. Longer than a proxy's keep-alive to its upstream (nginx's and AWS ALB's: 60 s), so
    /// that the proxy, not this server, closes a kept-alive connection first.
    public var idleTimeout: Duration = Self.defaultIdleTimeout
    public static let defaultIdleTimeout: Duration = .seconds(75)
    /// A request not read in full within this long of its head is dropped with its connection (`serve
    /// --body-timeout`): a body trickled a byte at a time, however steadily, holds a connection no longer. The
    /// largest body the API takes (an edition's manifest, 1 MiB) needs a fraction of it on any link a newsroom uses.
    public var bodyTimeout: Duration = Self.defaultBodyTimeout
    public static let defaultBodyTimeout: Duration = .seconds(60)
    /// Wrong admin tokens by client address (one per process, shared by its listeners).
    public var adminGuesses = GuessGuard()
    /// Told about every answered request (the demo's request log); nil in production.
    public var requestObserver: (@Sendable (ObservedRequest) -> Void)?
    /// The registry the process bootstrapped swift-metrics with: when set, `GET /metrics` serves it and
    /// every request is counted and timed by route and status.
    public var metrics: PrometheusCollectorRegistry?
    /// Which routes this listener serves: all by default; `paperboy serve --admin-port` splits the admin
    /// routes off to a second listener, and `paperboy worker --port` serves operations only.
    public var surfaces: Set<APISurface> = Set(APISurface.allCases)
    /// The per-client limit on the device routes (429 with `Retry-After` over it), by client address, before
    /// the device key is looked up: see ``DeviceRateLimit``. Off here; `paperboy serve` turns it on with
    /// ``DeviceRateLimit/standard``.
    public var deviceRateLimit: DeviceRateLimit?
    /// When set, the listener serves HTTPS only (`paperboy serve --tls-cert --tls-key`).
    public var tls: TLSConfiguration?
    /// Routes another module adds to this listener, after the API's own: the operator's web console
    /// (`PaperboyConsole`, which `paperboy serve` wires in). They keep the router's middleware (errors, `no-store`).
    public var moreRoutes: [@Sendable (Router<APIRequestContext>) -> Void] = []
    /// The clock open reports are read by (`POST /v1/devices/{token}/opens`): the wall clock; the demo's runs faster.
    public var now: @Sendable () -> Date = { Date() }
    /// The client receipts are recorded with (`DatabaseConfiguration.makeReceiptClient(logger:)`, run beside the
    /// API's): its sessions plan the receipts' statements once. Nil: the API's client records them.
    public var receiptClient: PostgresClient?

    public init(host: String = "127.0.0.1", port: Int = 8080, adminToken: String? = nil) {
        self.host = host
        self.port = port
        self.adminToken = adminToken
    }
}

/// The groups of routes a listener serves.
public enum APISurface: String, Sendable, CaseIterable {
    /// `/v1/devices/…`, `GET /v1/editions/…`: the app's, with `X-API-Key`.
    case devices
    /// `/v1/apps`, `POST /v1/editions`, `/v1/broadcasts…`, `/v1/insights/…`: operators', with the admin token.
    case admin
    /// `/health/…`, `/openapi.yaml`: for load balancers, orchestrators and tools.
    case operations
    /// `/metrics` (when a registry is set): app and broadcast ids and rates, for Prometheus; on the admin listener
    /// when there is one.
    case metrics
}

/// The API's routes over a running PostgreSQL client. Tests use it with `app.test(.router)`.
public func buildRouter(client: PostgresClient, configuration: APIConfiguration) -> Router<APIRequestContext> {
    let apps = AppRepository(client: client)
    return buildRouter(client: client, configuration: configuration) { key, logger in try await apps.find(apiKey: key, logger: logger) }
}

/// The API's routes, with the device key lookup given: tests count the database lookups through it.
func buildRouter(client: PostgresClient, configuration: APIConfiguration, findApp: @escaping AppDirectory.Lookup) -> Router<APIRequestContext> {
    let router = buildRoutes(client: client, configuration: configuration, findApp: findApp)
    router.addMethodNotAllowed()
    return router
}

/// The routes the configuration's surfaces serve, without the 405 answers for other methods: what
/// ``routeTable(client:configuration:)`` lists.
func buildRoutes(client: PostgresClient, configuration: APIConfiguration, findApp: @escaping AppDirectory.Lookup) -> Router<APIRequestContext> {
    let router = Router(context: APIRequestContext.self)
    if let observer = configuration.requestObserver {
        router.add(middleware: RequestObserverMiddleware(observe: observer))
    }
    if configuration.metrics != nil {
        router.add(middleware: MetricsMiddleware())
    }
    router.add(middleware: ErrorMiddleware())
    router.add(middleware: UncachedByDefaultMiddleware())

    if configuration.surfaces.contains(.operations) {
        HealthRoutes(
            client: client,
            migrator: Migrator(),
            timeout: configuration.readinessTimeout,
            senderProblems: configuration.senderProblems ?? { [] },
            sendersGateReadiness: configuration.sendersGateReadiness,
            detailed: configuration.readinessReasons,
            memory: ReadinessMemory()
        ).add(to: router)
    }
    if configuration.surfaces.contains(.metrics), let registry = configuration.metrics {
        MetricsRoutes(registry: registry).add(to: router)
    }

    let editionRoutes = EditionRoutes(editions: EditionRepository(client: client), maxBodyBytes: configuration.maxEditionBodyBytes)
    if configuration.surfaces.contains(.devices) {
        let directory = AppDirectory(
            lookup: findApp,
            timeToLive: configuration.appCacheTimeToLive,
            unknownTimeToLive: configuration.unknownKeyCacheTimeToLive
        )
        let deviceAPI = router.group("v1")
        // The limit first: a client sending wrong keys is limited before each key costs a lookup.
        if let limit = configuration.deviceRateLimit {
            deviceAPI.add(middleware: RateLimitMiddleware(limiter: RateLimiter(limit: limit)))
        }
        deviceAPI.add(middleware: DeviceKeyMiddleware(directory: directory))
        DeviceRoutes(devices: DeviceRepository(client: client), maxBodyBytes: configuration.maxBodyBytes).add(to: deviceAPI)
        let receipts = ReceiptRepository(client: client, recordingClient: configuration.receiptClient)
        ReceiptRoutes(receipts: receipts, maxBodyBytes: configuration.maxBodyBytes).add(to: deviceAPI)
        OpenRoutes(habits: HabitRepository(client: client), now: configuration.now).add(to: deviceAPI)
        editionRoutes.addReading(to: deviceAPI)
    }

    if configuration.surfaces.contains(.admin) {
        let adminAPI = router.group("v1").add(
            middleware: AdminTokenMiddleware<APIRequestContext>(adminToken: configuration.adminToken, guesses: configuration.adminGuesses)
        )
        AppRoutes(apps: AppRepository(client: client), maxBodyBytes: configuration.maxBodyBytes).add(to: adminAPI)
        OriginRoutes(
            origins: OriginRepository(client: client),
            publications: PublicationRepository(client: client),
            maxBodyBytes: configuration.maxBodyBytes
        ).add(to: adminAPI)
        editionRoutes.addPublishing(to: adminAPI)
        BroadcastRoutes(
            broadcasts: BroadcastRepository(client: client),
            editions: EditionRepository(client: client),
            apps: AppRepository(client: client),
            maxBodyBytes: configuration.maxBodyBytes
        ).add(to: adminAPI)
        InsightsRoutes(wakeRates: WakeRateRepository(client: client)).add(to: adminAPI)
    }

    for addRoutes in configuration.moreRoutes { addRoutes(router) }
    OpenAPIRoutes().add(to: router)
    return router
}

/// The API application; `services` (the PostgreSQL client, later the dispatcher) start before the server
/// and stop after it, in one `ServiceGroup` that shuts down gracefully on SIGTERM and SIGINT.
public func buildApplication(
    client: PostgresClient,
    configuration: APIConfiguration,
    services: [any Service] = [],
    logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    Application(
        router: buildRouter(client: client, configuration: configuration),
        server: paperboyServer(
            tls: configuration.tls,
            trustedProxies: configuration.trustedProxies,
            idleTimeout: configuration.idleTimeout,
            bodyTimeout: configuration.bodyTimeout
        ),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "paperboy"),
        services: services,
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger
    )
}
