import APNs
import ArgumentParser
import EmbeddedPostgres
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOSSL
import PaperboyAPI
import PaperboyBroadcast
import PaperboyConsole
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PostgresNIO

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP API and send broadcasts until SIGTERM or SIGINT, then drain and exit 0.",
        discussion: """
            With no database configured (no --database-url, DATABASE_URL or PGHOST) it starts a throwaway \
            PostgreSQL cluster, migrates it, registers a demo app and prints its device API key: everything is \
            deleted when the server stops. The admin token for operator endpoints comes from PAPERBOY_ADMIN_TOKEN \
            (or PAPERBOY_ADMIN_TOKEN_FILE naming a file that holds it; at least 16 characters). \
            Besides the API, the process is a broadcast worker (as `paperboy worker`) unless --no-dispatch, and \
            fires broadcast schedules (exactly one serve process does, by an advisory lock) unless --no-scheduler. \
            The operator's web console is at /console (on --admin-port when given): set PAPERBOY_CONSOLE_OPERATOR_TOKEN \
            and/or PAPERBOY_CONSOLE_VIEWER_TOKEN (or …_FILE naming a file that holds one) to enable it; its sessions \
            are signed with keys derived from PAPERBOY_CONSOLE_SESSION_KEY, else from a key kept in the database.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 8080

    @Option(
        name: .customLong("admin-port"),
        help: ArgumentHelp(
            "Serve the admin routes (apps, publishing editions, broadcasts), the console and /metrics on this port of --admin-host only, not on --port.",
            discussion: "Its /health/ready also says why the process is not ready; --port's says only up or down."
        )
    )
    var adminPort: Int?

    @Option(
        name: .customLong("admin-host"),
        help: ArgumentHelp(
            "The address --admin-port listens on (default: --host): an internal interface, or 127.0.0.1 for operators on the host only.",
            valueName: "host"
        )
    )
    var adminHost: String?

    @Option(
        name: .customLong("public-url"),
        help: ArgumentHelp(
            "Where browsers reach the console, e.g. https://news.example.com: decides its cookie (Secure, __Host-), the origin forms must come from, and Strict-Transport-Security.",
            discussion:
                "Default: each request's Host and X-Forwarded-Proto (this one from a --trusted-proxy only), which a proxy in front must forward.",
            valueName: "url"
        )
    )
    var publicURL: String?

    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            "A reverse proxy's address or CIDR block (repeatable): requests from it are counted by the client address in its X-Forwarded-For.",
            discussion: "For the device rate limit, the limits on wrong console and admin tokens, and the audit log.",
            valueName: "address"
        )
    )
    var trustedProxies: [String] = []

    @Option(
        name: .customLong("rate-limit"),
        help: ArgumentHelp(
            "Requests a second each client address (an IPv6 address by its /64) may make to the device routes, as N/s or N/m, or off.",
            discussion:
                "Over it they answer 429 with Retry-After. Behind a reverse proxy every client has the proxy's address: name it with --trusted-proxy, or limit there and use off."
        )
    )
    var rateLimit = "10/s"

    @Option(name: .customLong("rate-burst"), help: "Requests a client address may make at once before --rate-limit applies.")
    var rateBurst = DeviceRateLimit.standard.burst

    @Option(
        name: .customLong("idle-timeout"),
        help: ArgumentHelp(
            "Close a connection that sends nothing for this long: a request's head not complete, no body, nothing after its last answer (1s to 1h).",
            discussion:
                "Idle and trickling sockets (slowloris) cannot hold the listeners. Keep it longer than a proxy's keep-alive to this server (nginx and AWS ALB: 60 s).",
            valueName: "duration"
        )
    )
    var idleTimeout = "75s"

    @Option(
        name: .customLong("body-timeout"),
        help: ArgumentHelp(
            "Drop a request (and its connection) whose head and body are not read in full within this long of its head (1s to 1h).",
            discussion: "A body trickled a byte at a time, however steadily, holds a connection no longer than this.",
            valueName: "duration"
        )
    )
    var bodyTimeout = "60s"

    @Option(name: .customLong("tls-cert"), help: "Serve HTTPS (TLS 1.2 or later) with this PEM certificate chain (needs --tls-key).")
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "The PEM private key of --tls-cert.")
    var tlsKey: String?

    @OptionGroup var dispatch: DispatchOptions

    @Flag(name: .customLong("no-dispatch"), help: "Serve the API only: send no broadcasts from this process.")
    var noDispatch = false

    @Option(
        help: ArgumentHelp(
            "Deliveries and receipts older than this are pruned hourly by the process that fires schedules, e.g. 7d (at least 2h).",
            valueName: "duration"
        )
    )
    var retention = "7d"

    @Option(
        name: .customLong("audit-retention"),
        help: ArgumentHelp(
            "Audit entries older than this are pruned hourly with the rest, e.g. 365d (at least 1d), or `forever`.",
            valueName: "duration"
        )
    )
    var auditRetention = "365d"

    @Flag(
        name: .customLong("no-scheduler"),
        help: "Do not take part in firing broadcast schedules (`paperboy schedules`); one serve process fires each."
    )
    var noScheduler = false

    func validate() throws {
        if let adminPort, !(0...65535).contains(adminPort) || adminPort == port && port != 0 {
            throw ValidationError("--admin-port: \(adminPort) is not a TCP port other than --port")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port: \(port) is not a TCP port (0-65535)") }
        if let adminHost {
            guard adminPort != nil else { throw ValidationError("--admin-host needs --admin-port, the port it listens on") }
            guard !adminHost.isEmpty, !adminHost.contains(where: \.isWhitespace) else {
                throw ValidationError("--admin-host: '\(adminHost)' is not an address to listen on")
            }
        }
        _ = try PruneCommand.retention(retention)
        _ = try PruneCommand.auditRetention(auditRetention)
        _ = try deviceRateLimit()
        _ = try consolePublicURL()
        _ = try proxies()
        _ = try idleTimeoutSeconds()
        _ = try bodyTimeoutSeconds()
        switch (tlsCert, tlsKey) {
        case (nil, nil), (.some, .some): break
        case (.some, nil): throw ValidationError("--tls-cert needs --tls-key, the certificate's private key")
        case (nil, .some): throw ValidationError("--tls-key needs --tls-cert, the key's certificate chain")
        }
    }

    /// `--idle-timeout` read: 1 s to 1 h.
    func idleTimeoutSeconds() throws -> TimeInterval {
        try DurationFlag.listenerTimeout(idleTimeout, flag: "--idle-timeout")
    }

    /// `--body-timeout` read: 1 s to 1 h.
    func bodyTimeoutSeconds() throws -> TimeInterval {
        try DurationFlag.listenerTimeout(bodyTimeout, flag: "--body-timeout")
    }

    /// `--public-url` read; nil when not given.
    func consolePublicURL() throws -> ConsolePublicURL? {
        guard let publicURL else { return nil }
        do {
            return try ConsolePublicURL(parsing: publicURL)
        } catch {
            throw ValidationError("--public-url: \(error)")
        }
    }

    /// `--trusted-proxy` read.
    func proxies() throws -> TrustedProxies {
        do {
            return try TrustedProxies(parsing: trustedProxies)
        } catch {
            throw ValidationError("--trusted-proxy: \(error)")
        }
    }

    /// `--rate-limit` and `--rate-burst` as the API's configuration: nil for `off`.
    func deviceRateLimit() throws -> DeviceRateLimit? {
        let text = rateLimit.trimmingCharacters(in: .whitespaces).lowercased()
        if text == "off" { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let seconds: Double? =
            switch parts.count == 2 ? String(parts[1]) : "s" {
            case "s", "sec", "second": 1
            case "m", "min", "minute": 60
            default: nil
            }
        guard parts.count <= 2, let count = Double(parts[0]), count > 0, count.isFinite, let seconds else {
            throw ValidationError("--rate-limit: \(rateLimit) is not a rate like 10/s or 600/m, or off")
        }
        guard rateBurst >= 1 else { throw ValidationError("--rate-burst: \(rateBurst) is not a positive number of requests") }
        return DeviceRateLimit(burst: rateBurst, perSecond: count / seconds)
    }

    /// The server's TLS configuration from `--tls-cert` and `--tls-key`, with errors that name the flag.
    func tlsConfiguration() throws -> TLSConfiguration? {
        guard let tlsCert, let tlsKey else { return nil }
        func readable(_ path: String, flag: String) throws {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ValidationError("\(flag): \(path) does not exist")
            }
            guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: path) else {
                throw ValidationError("\(flag): \(path) is not a readable file")
            }
        }
        try readable(tlsCert, flag: "--tls-cert")
        try readable(tlsKey, flag: "--tls-key")
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(tlsCert)
        } catch {
            throw ValidationError("--tls-cert: \(tlsCert) is not a PEM certificate chain")
        }
        guard !chain.isEmpty else { throw ValidationError("--tls-cert: \(tlsCert) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: tlsKey, format: .pem)
        } catch {
            // Not the error's text: it could quote the key file.
            throw ValidationError("--tls-key: \(tlsKey) is not a PEM private key")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        // NIOSSL's default minimum is TLS 1.0: TLS 1.0 and 1.1 are deprecated (RFC 8996) and no client of ours needs them.
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    func run() async throws {
        LoggingSystem.bootstrapPaperboy()
        let registry = MetricsSystem.bootstrapPrometheus()
        let logger = Logger(label: "paperboy.serve")
        let adminToken = try ConsoleTokens.adminToken()
        var api = APIConfiguration(host: host, port: port, adminToken: adminToken)
        api.metrics = registry
        api.deviceRateLimit = try deviceRateLimit()
        api.tls = try tlsConfiguration()
        api.trustedProxies = try proxies()
        api.idleTimeout = .milliseconds(Int64((try idleTimeoutSeconds() * 1000).rounded()))
        api.bodyTimeout = .milliseconds(Int64((try bodyTimeoutSeconds() * 1000).rounded()))
        if adminToken == nil {
            logger.notice("PAPERBOY_ADMIN_TOKEN is not set: admin endpoints answer 401")
        }
        let consoleAccess = try ConsoleTokens.access()
        var consoleConfiguration = ConsoleConfiguration(
            access: consoleAccess,
            publicURL: try consolePublicURL(),
            sessionSecret: try ConsoleTokens.sessionSecret()
        )
        consoleConfiguration.servesTLS = api.tls != nil

        if let configuration = try database.configuration() {
            let status = try await withDatabase(configuration, logger: logger) { client in
                try await Migrator().status(client: client, logger: logger)
            }
            guard status.isCurrent else {
                throw CommandError("the database is missing migrations \(status.pending.joined(separator: ", ")): run `paperboy migrate` first")
            }
            logger.info("serving", metadata: ["database": "\(configuration)"])
            try await serve(configuration: configuration, api: api, console: consoleConfiguration, logger: logger, banner: nil)
        } else {
            let cluster = try await EmbeddedPostgres.start(logger: logger)
            do {
                let (configuration, key) = try await Self.prepareDemoDatabase(cluster: cluster, logger: logger)
                let host = api.host
                try await serve(configuration: configuration, api: api, console: consoleConfiguration, logger: logger) { port in
                    Self.demoBanner(host: host, port: port, key: key)
                }
            } catch {
                try? await cluster.stop()
                throw error
            }
            try await cluster.stop()
        }
    }

    private func serve(
        configuration: DatabaseConfiguration,
        api: APIConfiguration,
        console consoleConfiguration: ConsoleConfiguration,
        logger: Logger,
        banner: (@Sendable (Int) -> String)?
    ) async throws {
        let client = configuration.makeClient(logger: logger)
        // The receipts' own sessions, which plan their statements once (DatabaseConfiguration.receiptSessionSettings).
        let receiptClient = configuration.makeReceiptClient(logger: logger)
        var services: [ProcessServices.Entry] = [
            .init(name: "postgres", service: client), .init(name: "postgres-receipts", service: receiptClient),
        ]
        var api = api
        api.receiptClient = receiptClient
        let consoleAccess = consoleConfiguration.access
        let console = Console(client: client, configuration: consoleConfiguration)
        api.moreRoutes.append { router in console.addRoutes(to: router) }
        if consoleAccess.isEnabled {
            services.append(.init(name: "console-sampler", service: console.sampler(logger: Logger(label: "paperboy.console"))))
            logger.info("console enabled", metadata: [LogKey.role: "\(consoleAccess.roles.map(\.rawValue).joined(separator: ","))"])
            if let publicURL = consoleConfiguration.publicURL, publicURL.scheme == "http", !publicURL.isLoopback {
                logger.warning(
                    "--public-url is plain http: the console's session cookie is not Secure and travels in the clear",
                    metadata: ["url": "\(publicURL)"]
                )
            }
            if consoleConfiguration.publicURL == nil {
                logger.notice(
                    "--public-url is not set: the console reads its address from each request's Host and X-Forwarded-Proto (a proxy in front must forward them, and be named with --trusted-proxy for its X-Forwarded-Proto to count)"
                )
            }
        } else {
            logger.notice("no console token is set: /console says how to enable the console")
        }
        var gracefulStop = ProcessServices.gracefulStop
        if !noDispatch {
            let (dispatcher, clients, fcmClients) = try dispatch.makeDispatcher(client: client, logger: logger)
            // Stopped in reverse order: the dispatcher finishes its batches before the APNs and FCM
            // connections close.
            services.append(.init(name: "apns", service: clients))
            services.append(.init(name: "fcm", service: fcmClients))
            services.append(.init(name: "dispatcher", service: dispatcher))
            // Listed by the admin port's /health/ready; never a reason for the API to be unready (one app's missing
            // key must not take every API replica out of the load balancer). Workers gate on them.
            api.senderProblems = { [health = dispatcher.health] in health.problems }
            api.sendersGateReadiness = false
            gracefulStop = try dispatch.gracefulStop()
        }
        if !noScheduler {
            let starter = BroadcastRepository(client: client).starter(logger: Logger(label: "paperboy.scheduler"))
            let pruner = try LedgerPruner(
                client: client,
                configuration: .init(
                    retention: try PruneCommand.retention(retention),
                    auditRetention: try PruneCommand.auditRetention(auditRetention)
                )
            )
            services.append(
                .init(
                    name: "scheduler",
                    service: Scheduler(client: client, start: starter, pruner: pruner, logger: Logger(label: "paperboy.scheduler"))
                )
            )
        }
        let scheme = api.tls == nil ? "http" : "https"
        if let adminPort {
            // The admin routes on their own listener (e.g. bound to an internal interface by a firewall rule).
            // With /metrics (app and broadcast ids) and the reasons of /health/ready: nothing for strangers.
            var admin = api
            admin.port = adminPort
            if let adminHost { admin.host = adminHost }
            admin.surfaces = [.admin, .operations, .metrics]
            admin.readinessReasons = true
            api.surfaces = [.devices, .operations]
            // The console is an operator's surface too: on the admin listener only.
            admin.moreRoutes = api.moreRoutes
            api.moreRoutes = []
            let listener = buildApplication(client: client, configuration: admin, logger: logger) { [host = admin.host] port in
                logger.info("admin listening", metadata: ["address": "\(scheme)://\(host):\(port)"])
            }
            services.append(.init(name: "admin-http", service: listener))
        }
        let app = buildApplication(client: client, configuration: api, logger: logger) { [host = api.host] port in
            logger.info("listening", metadata: ["address": "\(scheme)://\(host):\(port)"])
            if let banner {
                FileHandle.standardOutput.write(Data((banner(port) + "\n").utf8))
            }
        }
        // The listener is stopped first: no new requests while the rest finishes.
        services.append(.init(name: "http", service: app))
        try await ProcessServices.run(services, gracefulStop: gracefulStop, logger: logger)
    }

    /// A throwaway database with a demo app and its morning and evening publications.
    private static func prepareDemoDatabase(cluster: EmbeddedPostgres, logger: Logger) async throws -> (DatabaseConfiguration, String) {
        try await cluster.createDatabase("paperboy")
        let configuration = try DatabaseConfiguration(url: cluster.url(database: "paperboy"))
        let key = try await withDatabase(configuration, logger: logger) { client in
            try await Migrator().migrate(client: client, logger: logger)
            let demo = try NewApp(bundleID: "com.example.paperboy", teamID: "DEMOTEAM01", keyID: "DEMOKEY001", keyReference: "none (demo)")
            let (app, key) = try await AppRepository(client: client).create(demo, logger: logger)
            for slug in ["morning", "evening"] {
                _ = try await PublicationRepository(client: client).add(appID: app.id, slug: slug, title: nil, logger: logger)
            }
            return key
        }
        return (configuration, key.secret)
    }

    private static func demoBanner(host: String, port: Int, key: String) -> String {
        let token = String(repeating: "ab", count: 32)
        return """
            No database configured: serving a THROWAWAY PostgreSQL database, deleted when this server stops.
            Demo app com.example.paperboy with publications morning and evening. Its device API key:
              \(key)
            Register a device:
              curl -i -X PUT http://\(host):\(port)/v1/devices/\(token) -H 'X-API-Key: \(key)' \\
                -H 'Content-Type: application/json' -d '{"environment": "sandbox", "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", "tier": "large", "autoDownload": true, "alertsAuthorized": false}'
            Stop with Ctrl-C.
            """
    }
}
