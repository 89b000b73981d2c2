import APNs
import APNsSimulator
import Crypto
import EmbeddedPostgres
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the fault tests share: a database (the shared test cluster's private copy, or a private cluster
/// of its own) holding an app with publication `morning`, devices and a broadcast; simulators; and real
/// `paperboy worker` processes pointed at both.
struct FaultRig {
    static let binary = WorkerProcessTests.binary
    static let maxBatch = 100
    static let lease = "3s"

    let client: PostgresClient
    /// The URL a worker process connects with.
    let databaseURL: String
    let logger: Logger
    let app: App
    let repository: BroadcastRepository

    /// Runs `body` with a rig on a fresh database of the shared test cluster. With `keyInEnvironment`, the app's
    /// key reference is `env:` that variable, which workers get only when a test gives it to them.
    static func with(keyInEnvironment variable: String? = nil, _ body: (FaultRig) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            let database = db.configuration
            let url = "postgres://\(database.username)@\(database.host):\(database.port)/\(database.database)?sslmode=disable"
            try await prepare(client: db.client, databaseURL: url, logger: db.logger, keyInEnvironment: variable, body)
        }
    }

    /// Creates the app (its key in a temporary file that lives as long as `body`, or in `keyInEnvironment`) and its
    /// publications.
    static func prepare(
        client: PostgresClient,
        databaseURL: String,
        logger: Logger,
        keyInEnvironment variable: String? = nil,
        _ body: (FaultRig) async throws -> Void
    ) async throws {
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-fault-\(UUID().uuidString).p8").path
        try BroadcastFixture.privateKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        let app = try await AppRepository(client: client).create(
            try NewApp(
                bundleID: BroadcastFixture.topic,
                teamID: "TEAM123456",
                keyID: "KEY1234567",
                keyReference: variable.map { "env:" + $0 } ?? keyFile
            ),
            logger: logger
        ).app
        _ = try await PublicationRepository(client: client).add(appID: app.id, slug: "morning", title: nil, logger: logger)
        let rig = FaultRig(client: client, databaseURL: databaseURL, logger: logger, app: app, repository: BroadcastRepository(client: client))
        try await body(rig)
    }

    /// A simulator that checks the app's provider tokens, with `faults`, on `port` (0: a free one).
    static func simulator(faults: APNsSimulator.Faults = .init(), port: Int = 0) -> APNsSimulator {
        var validation = APNsRequestValidator.Configuration(
            teamID: "TEAM123456",
            keys: ["KEY1234567": BroadcastFixture.privateKey.publicKey],
            topics: [BroadcastFixture.topic]
        )
        validation.maximumTokenAge = 3600 * 24
        var configuration = APNsSimulator.Configuration(validation: validation, faults: faults, port: port)
        configuration.eventLoopThreads = 1
        return APNsSimulator(configuration: configuration)
    }

    /// Inserts `count` devices subscribed to `publication` (tokens `BroadcastFixture.token(first...first + count - 1)`).
    func seed(_ count: Int, publication slug: String = "morning", first: Int = 1) async throws -> [DeviceToken] {
        let tokens = (0..<count).map { BroadcastFixture.token($0 + first) }
        let publication = try #require(try await PublicationRepository(client: client).find(appID: app.id, slug: slug, logger: logger))
        try await client.query(
            """
            INSERT INTO devices (app_id, environment, cohort_key, auto_download, alerts_authorized, tier, token, subscriptions, time_zone)
            SELECT \(app.id), 0, u.key, true, false, 2, u.token, ARRAY[\(publication.id)]::integer[], 'Asia/Tokyo'
            FROM unnest(\(tokens.map { Int($0.storedCohortKey) })::integer[], \(tokens.map { ByteBuffer(bytes: $0.bytes) })::bytea[]) AS u(key, token)
            """,
            logger: logger
        )
        return tokens
    }

    /// Publishes an edition of `publication` (deadline in an hour) and starts its broadcast: by default one wave over
    /// `window` seconds; `options` instead when given (then `window` and `cohorts` are unused).
    func startBroadcast(
        window: TimeInterval,
        cohorts: Int = 4,
        publication: String = "morning",
        options given: BroadcastOptions? = nil,
        minimumWaveInterval: TimeInterval = BroadcastOptions.minimumWaveInterval,
        avoidingQuarterHours: Bool = true,
        now: Date = Date()
    ) async throws -> UUID {
        let sha = String(repeating: "0f", count: 32)
        let manifest = EditionManifest(
            publication: publication,
            issueDate: "2026-11-23",
            deadline: Date().addingTimeInterval(3600).formatted(.iso8601),
            tiers: ["large": .init(bundles: [.init(url: "https://cdn.example.com/2026-11-23/morning/large-1.zip", bytes: 50_000_000, sha256: sha)])],
            pages: [.init(number: 1, title: "Front page")]
        )
        let edition = try await EditionRepository(client: client).publish(manifest, appID: app.id, now: Date(), logger: logger)
        let options = given ?? BroadcastOptions(pace: .window(window), cohorts: cohorts, maxPushesPerDevice: 1, jitter: 1)
        var repository = BroadcastRepository(client: client, minimumWaveInterval: minimumWaveInterval)
        repository.avoidsQuarterHoursForFCM = avoidingQuarterHours
        let started = try await repository.start(
            editionID: edition.id,
            environment: .production,
            options: options,
            origin: "fault-test",
            now: now,
            logger: logger
        )
        return started.broadcast.id
    }

    func progress(_ id: UUID) async -> BroadcastProgress? {
        try? await repository.progress(id: id, logger: logger)
    }

    /// Waits (bounded) until the broadcast is completed, and returns its progress.
    func waitForCompletion(_ id: UUID, seconds: Int) async throws -> BroadcastProgress {
        do {
            try await WorkerProcessTests.waitUntil(seconds: seconds) { await progress(id)?.state == .completed }
        } catch {
            // What a failure needs to be understood: where the broadcast stands and which batches are open.
            let progress = await progress(id)
            print("[fault] not completed: state \(progress.map { "\($0.state)" } ?? "?"), waves \(progress?.waves.map { "\($0.counts)" } ?? [])")
            print("[fault] open or re-leased batches:\n\((try? await batchesReport(id)) ?? "?")")
            throw error
        }
        return try #require(await progress(id))
    }

    /// The recorded delivery of every device in the broadcast's `wave`, by token (lowercase hex).
    func deliveries(_ id: UUID, wave: Int = 1) async throws -> [String: (outcome: String, reason: String?)] {
        let rows = try await client.query(
            """
            SELECT encode(d.token, 'hex'), x.outcome, x.reason
            FROM deliveries x JOIN devices d ON d.id = x.device_id
            WHERE x.broadcast_id = \(id) AND x.wave = \(Int16(wave))
            """,
            logger: logger
        )
        var result: [String: (outcome: String, reason: String?)] = [:]
        for try await (token, outcome, reason) in rows.decode((String, String, String?).self) {
            result[token] = (outcome, reason)
        }
        return result
    }

    /// The stored cohort key of each token's device, by token (hex): which batch held it (`broadcast_batches` key ranges).
    func cohortKeys(of tokens: [DeviceToken]) async throws -> [String: Int] {
        let rows = try await client.query(
            "SELECT encode(token, 'hex'), cohort_key FROM devices WHERE app_id = \(app.id) AND token = ANY (\(tokens.map { ByteBuffer(bytes: $0.bytes) })::bytea[])",
            logger: logger
        )
        var keys: [String: Int] = [:]
        for try await (token, key) in rows.decode((String, Int32).self) { keys[token] = Int(key) }
        return keys
    }

    /// Per token (hex): each wave-1 batch that held it, as `batch N (leases L, owner O, given back G, done D)`.
    func batchesByToken(_ id: UUID, tokens: [DeviceToken]) async throws -> [String: [String]] {
        let rows = try await client.query(
            """
            SELECT encode(d.token, 'hex'), bb.id, bb.leases::integer, bb.lease_owner, bb.give_backs::integer, coalesce(bb.done_at::text, 'not done')
            FROM devices d JOIN broadcast_batches bb ON bb.broadcast_id = \(id) AND bb.wave = 1 AND d.cohort_key BETWEEN bb.first_key AND bb.last_key
            WHERE d.app_id = \(app.id) AND d.token = ANY (\(tokens.map { ByteBuffer(bytes: $0.bytes) })::bytea[])
            ORDER BY bb.id
            """,
            logger: logger
        )
        var result: [String: [String]] = [:]
        for try await (token, batch, leases, owner, given, done) in rows.decode((String, Int64, Int32, String, Int32, String).self) {
            result[token, default: []].append("batch \(batch) (leases \(leases), owner \(owner), given back \(given), done \(done))")
        }
        return result
    }

    /// Every device accepted exactly once by `simulator`; on failure, for the first ten that were not: how often the
    /// simulator accepted it and on which connection and stream, what the broadcast recorded, its cohort key and the
    /// batches that held it (leases, owner, give-backs); then the batches leased more than once or still open and
    /// the workers' warnings. The next failure names its cause.
    func expectExactlyOnce(
        _ tokens: [DeviceToken],
        _ simulator: APNsSimulator,
        broadcast: UUID,
        workers: [WorkerProcess],
        label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let counts = simulator.acceptedCounts()
        let repeated = tokens.filter { counts[$0.hex, default: 0] > 1 }
        let missing = tokens.filter { counts[$0.hex, default: 0] == 0 }
        #expect(
            repeated.isEmpty && missing.isEmpty,
            "every device accepted exactly once: \(repeated.count) more than once, \(missing.count) never",
            sourceLocation: sourceLocation
        )
        guard !repeated.isEmpty || !missing.isEmpty else { return }
        let shown = Array((repeated + missing).prefix(10))
        let recorded: [String: (outcome: String, reason: String?)]
        let keys: [String: Int]
        let batches: [String: [String]]
        do {
            recorded = try await deliveries(broadcast)
            keys = try await cohortKeys(of: shown)
            batches = try await batchesByToken(broadcast, tokens: shown)
        } catch {
            print("[\(label)] cannot read the broadcast's records: \(String(reflecting: error))")
            return
        }
        for token in shown {
            let delivery = recorded[token.hex].map { "\($0.outcome) \($0.reason ?? "")" } ?? "none"
            print(
                "[\(label)] \(token.hex): accepted \(counts[token.hex, default: 0]) times; recorded \(delivery); cohort key \(keys[token.hex].map(String.init) ?? "?")"
            )
            for accept in simulator.accepts(forToken: token.hex) { print("[\(label)]   \(accept)") }
            for batch in batches[token.hex] ?? ["in no batch"] { print("[\(label)]   \(batch)") }
        }
        do {
            print("[\(label)] batches leased more than once, given back or open:\n\(try await batchesReport(broadcast))")
        } catch {
            print("[\(label)] cannot read the batches: \(String(reflecting: error))")
        }
        for worker in workers { print("[\(label)] \(worker.name):\n\(worker.problemLines.prefix(30).joined(separator: "\n"))") }
    }

    /// Per token (hex): how many times the batch holding it was leased. A device is sent at most once per
    /// lease of its batch; more than one lease means a lease lapsed (its worker died, or did not renew in time).
    func leasesByToken(_ id: UUID) async throws -> [String: Int] {
        let rows = try await client.query(
            """
            SELECT encode(d.token, 'hex'), max(bb.leases)::integer
            FROM broadcast_batches bb JOIN devices d ON d.app_id = \(app.id) AND d.cohort_key BETWEEN bb.first_key AND bb.last_key
            WHERE bb.broadcast_id = \(id) AND bb.wave = 1
            GROUP BY d.token
            """,
            logger: logger
        )
        var result: [String: Int] = [:]
        for try await (token, leases) in rows.decode((String, Int32).self) { result[token] = Int(leases) }
        return result
    }

    /// Wave 1's accepted pushes per whole wall-clock second (seconds since 1970) by the instants the workers sent them
    /// at (the ledger's `sent_at`): the workers' pacing, apart from when the providers read the requests.
    func sendsPerSecond(_ id: UUID) async throws -> [Int: Int] {
        let rows = try await client.query(
            """
            SELECT floor(extract(epoch FROM sent_at))::bigint, count(*)::bigint FROM deliveries
            WHERE broadcast_id = \(id) AND wave = 1 AND outcome = 'accepted' GROUP BY 1
            """,
            logger: logger
        )
        var result: [Int: Int] = [:]
        for try await (second, count) in rows.decode((Int64, Int64).self) { result[Int(second)] = Int(count) }
        return result
    }

    /// Batches of the broadcast that `owner` holds a live lease on and has not recorded (a batch it gave back is
    /// left with its lease expired, for another worker).
    func openBatches(_ id: UUID, owner: String) async throws -> Int {
        let rows = try await client.query(
            """
            SELECT count(*)::bigint FROM broadcast_batches
            WHERE broadcast_id = \(id) AND lease_owner = \(owner) AND done_at IS NULL AND lease_expires_at > now()
            """,
            logger: logger
        )
        for try await (count) in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// The batches leased more than once, given back, or not recorded: what explains duplicates (for messages).
    func batchesReport(_ id: UUID) async throws -> String {
        let rows = try await client.query(
            """
            SELECT id, cohort, first_key, last_key, devices, lease_owner, leases, lease_expires_at::text, coalesce(done_at::text, '-'),
                give_backs, coalesce(given_back_for, '-')
            FROM broadcast_batches WHERE broadcast_id = \(id) AND (leases > 1 OR done_at IS NULL OR give_backs > 0) ORDER BY id
            """,
            logger: logger
        )
        var lines: [String] = []
        for try await (batch, cohort, first, last, devices, owner, leases, expires, done, given, why) in rows.decode(
            (Int64, Int32, Int64, Int64, Int32, String, Int16, String, String, Int16, String).self
        ) {
            lines.append(
                "batch \(batch) cohort \(cohort) keys \(first)...\(last) devices \(devices) owner \(owner) leases \(leases) expires \(expires) "
                    + "done \(done) given back \(given) (\(why))"
            )
        }
        return lines.joined(separator: "\n")
    }

    /// Starts `paperboy worker` against this rig's database and `endpoint` (and `fcmEndpoint` for FCM), its
    /// output in a temporary file; `arguments` and `environment` are added to the command line and environment.
    func worker(
        _ name: String,
        endpoint: String,
        fcmEndpoint: String? = nil,
        arguments: [String] = [],
        environment: [String: String] = [:]
    ) throws -> WorkerProcess {
        try WorkerProcess(
            name: name,
            databaseURL: databaseURL,
            endpoint: endpoint,
            fcmEndpoint: fcmEndpoint,
            arguments: arguments,
            environment: environment
        )
    }

    /// Inserts `count` Android devices registered with FCM, subscribed to `morning`.
    func seedFCM(_ count: Int) async throws -> [FCMToken] {
        let tokens = try (0..<count).map { try FCMToken("fault\($0)x:APA91b" + String(repeating: "ZmF1bHQ-_", count: 16)) }
        let publication = try #require(try await PublicationRepository(client: client).find(appID: app.id, slug: "morning", logger: logger))
        try await client.query(
            """
            INSERT INTO devices (app_id, environment, provider, platform, cohort_key, auto_download, alerts_authorized, tier, token, subscriptions, time_zone)
            SELECT \(app.id), 0, 1, 1, u.key, true, false, 2, u.token, ARRAY[\(publication.id)]::integer[], 'Asia/Tokyo'
            FROM unnest(\(tokens.map { Int($0.storedCohortKey) })::integer[], \(tokens.map { ByteBuffer(bytes: $0.bytes) })::bytea[]) AS u(key, token)
            """,
            logger: logger
        )
        return tokens
    }
}

/// A running `paperboy worker` and the file its output goes to. Killed with SIGKILL on ``stop()`` if
/// still running; tests call ``terminate()`` for the graceful path.
final class WorkerProcess: @unchecked Sendable {
    let name: String
    let process = Process()
    let log: URL

    init(
        name: String,
        databaseURL: String,
        endpoint: String,
        fcmEndpoint: String? = nil,
        arguments: [String] = [],
        environment extra: [String: String] = [:]
    ) throws {
        self.name = name
        log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-fault-\(name)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        process.executableURL = FaultRig.binary
        process.arguments =
            [
                "worker", "--apns-endpoint", endpoint, "--worker-name", name, "--lease", FaultRig.lease, "--max-batch", "\(FaultRig.maxBatch)",
            ] + (fcmEndpoint.map { ["--fcm-endpoint", $0] } ?? []) + arguments
        var environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        environment["DATABASE_URL"] = databaseURL
        environment["LOG_LEVEL"] = ProcessInfo.processInfo.environment["FAULT_TEST_LOG_LEVEL"] ?? "info"
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    var isRunning: Bool { process.isRunning }
    var pid: pid_t { process.processIdentifier }

    /// SIGTERM, then waits (bounded) for the exit; SIGKILL if it did not exit in time.
    /// - Returns: the seconds it took to exit, or nil if it had to be killed.
    @discardableResult
    func terminate(within seconds: Double) async -> Double? {
        guard process.isRunning else { return 0 }
        let start = ContinuousClock.now
        kill(pid, SIGTERM)
        while process.isRunning && ContinuousClock.now - start < .seconds(seconds) {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            kill(pid, SIGKILL)
            await process.exited(within: .seconds(10))
            return nil
        }
        try? await process.exited()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// SIGKILL if still running; removes the log unless `keepLog`.
    func stop(keepLog: Bool = ProcessInfo.processInfo.environment["FAULT_TEST_KEEP_LOGS"] != nil) {
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
        if !keepLog { try? FileManager.default.removeItem(at: log) }
    }

    var output: String {
        (try? String(contentsOf: log, encoding: .utf8)) ?? ""
    }

    /// Lines logged at level error or warning.
    var problemLines: [Substring] {
        output.split(separator: "\n").filter { $0.contains(" error ") || $0.contains(" warning ") }
    }
}

/// A port on loopback that nothing listens on (bound, then closed). Another process could take it in the
/// moment between; the tests that use it fail loudly if that happens.
func reserveLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    precondition(fd >= 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw FaultTestError("cannot bind a loopback port: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}

struct FaultTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A private PostgreSQL cluster (``EmbeddedPostgres``) that the test can stop and start again on the same
/// port and data directory: `EmbeddedPostgres` has no restart, so this runs `pg_ctl` on its data directory
/// the way it does (as `postgres` when root).
struct RestartablePostgres {
    let cluster: EmbeddedPostgres

    static func with(_ body: (RestartablePostgres) async throws -> Void) async throws {
        let cluster = try await EmbeddedPostgres.start(logger: Logger(label: "paperboy.fault-test"))
        do {
            try await body(RestartablePostgres(cluster: cluster))
        } catch {
            try? await cluster.stop()
            throw error
        }
        try await cluster.stop()
    }

    private var data: String { cluster.directory + "/data" }
    private var runAs: String? { geteuid() == 0 ? "postgres" : nil }

    /// Stops the server (fast: sessions are disconnected).
    func stop() throws {
        try EmbeddedPostgres.runTool(
            cluster.binDirectory + "/pg_ctl",
            ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"],
            as: runAs,
            step: "pg_ctl stop"
        )
    }

    /// Starts it again on the same port with the options `EmbeddedPostgres` uses.
    func start() throws {
        let options = [
            "-p \(cluster.port)", "-k \(cluster.directory)", "-c listen_addresses=127.0.0.1", "-c fsync=off",
            "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=200",
        ].joined(separator: " ")
        try EmbeddedPostgres.runTool(
            cluster.binDirectory + "/pg_ctl",
            ["-D", data, "-l", cluster.directory + "/server.log", "-o", options, "-w", "-t", "60", "start"],
            as: runAs,
            step: "pg_ctl start"
        )
    }
}
