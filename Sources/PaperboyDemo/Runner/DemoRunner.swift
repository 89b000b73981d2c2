import APNs
import APNsSimulator
import AsyncHTTPClient
import Crypto
import FCM
import FCMSimulator
import Foundation
import Hummingbird
import Logging
import PaperboyAPI
import PaperboyBroadcast
import PaperboyConsole
import PaperboyCore
import PaperboyStore
import PostgresNIO
import PushTransport
import ServiceLifecycle
import Synchronization

/// How the demo runs.
public struct DemoConfiguration: Sendable {
    /// Simulated devices per strategy. The demo runs everything on one machine (PostgreSQL, the API, the
    /// dispatcher, the simulator and the devices' HTTP requests) with time compressed: 20,000 keeps a
    /// 2-core machine within its means; larger fleets work and take longer (`timeCompression`).
    public var devices = 20_000
    /// Seeds the fleet's tokens and the model's every draw: the same seed, the same run.
    public var seed: UInt64 = 1
    public var strategies: [DemoStrategy] = DemoStrategy.defaults
    /// The staggered strategies spread wave 1 over this window (demo time): Paperboy's default.
    public var window: TimeInterval = 30 * 60
    /// Waves start this far apart: 20 minutes, Apple's cadence for background pushes (at most 3 an hour) and
    /// the shortest interval Paperboy allows, so that the waves strategy is the policy ``Ceiling`` assumes
    /// (Paperboy's default is 30 minutes, which leaves 4 pushes in 2 hours instead of 6).
    public var waveInterval: TimeInterval = BroadcastOptions.minimumWaveInterval
    /// From the broadcast's start to the edition's deadline (demo time).
    public var deadlineAfter: TimeInterval = 2 * 3600
    /// How much faster than the wall clock demo time runs, per strategy. The blast runs slower, so that
    /// sending everyone "at once" takes seconds of demo time, as it would for a real provider.
    public var timeCompression: [DemoStrategy: Double] = [.blast: 6, .staggered: 60, .waves: 60, .hash: 60, .oracle: 60]
    public var fleet = FleetParameters()
    /// Share of devices whose user allowed alerts.
    public var alertsShare = 0.4
    /// Android devices' share of the whole fleet. They are added on top of the ``devices`` iOS devices, so
    /// the iOS fleet (its tokens and every draw of the model) stays the one the demo had before Android: its
    /// figures remain comparable. 0.2 is a modest share that shows the feature without doubling the run's
    /// work (20,000 iOS devices gain 5,000 Android ones).
    public var androidShare = 0.2
    /// `android.priority` of the broadcasts: normal waits for Doze's maintenance windows, high wakes the device.
    public var androidPriority: BroadcastOptions.AndroidPriority = .normal
    /// Demo time runs at least this much faster than the wall clock once a broadcast has finished and only
    /// Android devices waiting for a Doze maintenance window remain.
    public var tailCompression: Double = 600
    /// Mornings to run (`--days`): with more than one, the strategies run that many mornings in a row on one
    /// fleet, a new edition each morning (the CLI runs only the waves strategy then). Dormant devices show
    /// from the morning after ``BroadcastOptions/dormantAfter`` unanswered ones.
    public var days = 1
    /// Mornings of open reports the readers' habits are learned from before the first broadcast (every strategy
    /// but `hash`, which learns none, and `oracle`, which knows this morning's opens instead).
    public var learningDays = 14

    /// The operator's web console beside the demo's API (`/console`), signed in to with these tokens; nil: none.
    /// It shows the demo's broadcasts live, in demo time.
    public var console: ConsoleAccess?
    /// Told the console's address once the API listens.
    public var onConsoleReady: (@Sendable (String) -> Void)?
    /// Called with the recordings after the last strategy, while the API and the console still serve; the demo
    /// stops when it returns (`paperboy demo --keep-console` prints the report and waits for Ctrl-C in it).
    public var whileConsoleKept: (@Sendable ([DemoRecording]) async throws -> Void)?

    /// Called with the FCM simulator after the last strategy, before it stops; its ledger is kept only then.
    /// For tests, which count what it accepted per token.
    public var inspectFCMSimulator: (@Sendable (FCMSimulator) -> Void)?

    /// The Android devices added to the ``devices`` iOS devices.
    public var androidDevices: Int {
        guard androidShare > 0, androidShare < 1 else { return 0 }
        return Int((Double(devices) * androidShare / (1 - androidShare)).rounded())
    }

    public init() {}
}

/// What the demo is doing, for its progress display.
public enum DemoProgress: Sendable {
    /// A step began, e.g. seeding.
    case step(String)
    /// The running strategy's state, several times a second.
    case status(String)
    /// A strategy ended.
    case finished(DemoStrategy, String)
}

/// Runs the demo: for each strategy, a fleet of simulated devices in PostgreSQL (iOS devices seeded, Android
/// devices registered through the API with FCM), a broadcast sent by a real dispatcher through the APNs and
/// FCM clients to their simulators, the simulated devices acting on what arrives through Paperboy's HTTP
/// API; then what was recorded.
public struct DemoRunner: Sendable {
    public let configuration: DemoConfiguration
    let logger: Logger

    public init(configuration: DemoConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The morning the demo broadcasts on, in demo time.
    static let morning = ISO8601DateFormatter().date(from: "2026-11-23T05:00:00+09:00")!

    public func run(database: DatabaseConfiguration, progress: @escaping @Sendable (DemoProgress) -> Void) async throws -> [DemoRecording] {
        var quiet = logger
        quiet.logLevel = .error
        let client = database.makeClient(logger: quiet)
        // The client runs apart from the demo's tasks and stops only once they have: when the demo is cancelled
        // (interrupted), its dispatcher and devices stop first, with the database still there, instead of
        // failing their last batches against a pool already shut down.
        let connections = Task { await client.run() }
        let outcome: Result<[DemoRecording], any Error>
        do {
            progress(.step("migrating the database"))
            _ = try await Migrator().migrate(client: client, logger: quiet)
            outcome = .success(try await runStrategies(client: client, progress: progress))
        } catch {
            outcome = .failure(error)
        }
        connections.cancel()
        await connections.value
        return try outcome.get()
    }

    private func runStrategies(
        client: PostgresClient,
        progress: @escaping @Sendable (DemoProgress) -> Void
    ) async throws -> [DemoRecording] {
        // The app's APNs key, in a private temporary file for the duration of the demo.
        let key = P256.Signing.PrivateKey()
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-demo-\(UUID().uuidString).p8").path
        guard FileManager.default.createFile(atPath: keyFile, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw DemoError("could not write the demo's APNs key to \(keyFile)")
        }
        defer { try? FileManager.default.removeItem(atPath: keyFile) }

        let tokens =
            try (0..<configuration.devices).map { try DeviceSeeder.token(index: $0, seed: configuration.seed).hex }
            + (0..<configuration.androidDevices).map { Self.androidToken(index: $0, seed: configuration.seed) }
        let model = FleetModel(seed: configuration.seed, parameters: configuration.fleet)

        // The simulator hands what it accepts to the fleet of the strategy running.
        let currentFleet = Locked<SimulatedFleet?>(nil)
        var simulatorConfiguration = APNsSimulator.Configuration(
            validation: .init(teamID: Self.teamID, keys: [Self.keyID: key.publicKey])
        )
        simulatorConfiguration.recordsAccepted = false
        simulatorConfiguration.onAccept = { delivery in
            currentFleet.withLock { $0 }?.receive(
                token: delivery.token,
                pushType: delivery.pushType,
                payload: delivery.payload,
                acceptedAt: delivery.acceptedAt
            )
        }
        let simulator = APNsSimulator(configuration: simulatorConfiguration)
        let simulatorPort = try await simulator.start()

        // The FCM simulator likewise hands accepted messages to the Android devices. The demo apps' service
        // account is a throwaway one of the simulator, in a private temporary file.
        var fcmConfiguration = FCMSimulator.Configuration()
        fcmConfiguration.recordsLedger = configuration.inspectFCMSimulator != nil
        fcmConfiguration.eventLoopThreads = 1
        fcmConfiguration.onAccept = { delivery in currentFleet.withLock { $0 }?.receive(android: delivery) }
        let fcmSimulator = try FCMSimulator(configuration: fcmConfiguration)
        try await fcmSimulator.start()
        let serviceAccountFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-demo-\(UUID().uuidString).json").path
        let serviceAccount: FCMSimulator.ServiceAccount
        do {
            serviceAccount = try fcmSimulator.makeServiceAccount(projectID: Self.fcmProjectID)
            try serviceAccount.write(to: serviceAccountFile)
        } catch {
            try? await fcmSimulator.shutdown()
            try? await simulator.shutdown()
            throw DemoError("could not write the demo's FCM service account to \(serviceAccountFile): \(error)")
        }
        defer { try? FileManager.default.removeItem(atPath: serviceAccountFile) }

        // Paperboy's API, with a log of every request it answers.
        let requests = Locked<[ObservedRequest]>([])
        var api = APIConfiguration(host: "127.0.0.1", port: 0)
        // The devices' requests only: a browser watching the console is not the content API's load.
        api.requestObserver = { request in
            guard !request.route.contains(" /console") else { return }
            requests.withLock { $0.append(request) }
        }
        let (portStream, portContinuation) = AsyncStream.makeStream(of: Int.self)
        // The console, in demo time: its clock is the running morning's (the last one's once they are over).
        let consoleClock = Locked<DemoClock?>(nil)
        // Open reports are read in demo time too: a reader's minute is the morning's, not the wall clock's.
        api.now = { consoleClock.withLock { $0 }?.now() ?? Self.morning }
        var quiet = logger
        quiet.logLevel = .warning
        var consoleSampler: ConsoleSampler?
        if let access = configuration.console {
            var console = ConsoleConfiguration(access: access)
            console.now = { consoleClock.withLock { $0 }?.now() ?? Self.morning }
            console.timeZone = TimeZone(identifier: "Asia/Tokyo") ?? .current
            // A second of the wall clock is a minute of demo time: sample and update every second.
            console.sampleInterval = .seconds(1)
            console.liveInterval = .seconds(1)
            console.minimumWaveInterval = 60
            let routes = Console(client: client, configuration: console)
            api.moreRoutes.append { router in routes.addRoutes(to: router) }
            consoleSampler = routes.sampler(logger: quiet)
        }
        let application = buildApplication(client: client, configuration: api, logger: quiet) { port in
            portContinuation.yield(port)
            portContinuation.finish()
        }
        // As `paperboy worker` makes them: the batches pace their own retries.
        let apnsClients = APNsClients(logger: quiet) { $0.pacedByDispatcher() }
        let fcmClients = FCMClients(endpoint: try PushEndpoint(url: fcmSimulator.url), logger: quiet) { $0.pacedByDispatcher() }
        // In a service group, shut down gracefully and awaited at the end: cancelled with the task group, it
        // logs errors (CancellationError) that a healthy run must not show. The APNs clients stop last.
        let services: [any Service] = [apnsClients, fcmClients, application] + (consoleSampler.map { [$0] } ?? [])
        let apiServer = ServiceGroup(configuration: .init(services: services, logger: quiet))
        let serving = Task { try await apiServer.run() }
        func stopServing() async {
            await apiServer.triggerGracefulShutdown()
            _ = await serving.result
        }
        var apiPort = 0
        for await port in portStream { apiPort = port }
        if configuration.console != nil { configuration.onConsoleReady?("http://127.0.0.1:\(apiPort)/console") }

        let http = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 256))
        )
        let channels = APNsChannels(
            clients: apnsClients,
            endpoints: try APNsEndpoints(override: "http://127.0.0.1:\(simulatorPort)")
        )
        let fcmChannels = FCMChannels(clients: fcmClients)
        let credentials = try FCMCredentials(serviceAccount: serviceAccountFile, projectID: serviceAccount.projectID)
        var recordings: [DemoRecording] = []
        do {
            for strategy in configuration.strategies {
                let apiBase = "http://127.0.0.1:\(apiPort)"
                let wallStart = Date()
                let (appID, apiKey) = try await prepare(
                    strategy,
                    client: client,
                    keyFile: keyFile,
                    tokens: tokens,
                    credentials: credentials,
                    http: http,
                    apiBase: apiBase,
                    progress: progress
                )
                for day in 1...max(1, configuration.days) {
                    let recording = try await runMorning(
                        strategy,
                        day: configuration.days > 1 ? day : nil,
                        appID: appID,
                        client: client,
                        tokens: tokens,
                        model: model.on(day: day - 1),
                        channels: channels,
                        fcmChannels: fcmChannels,
                        http: http,
                        apiBase: apiBase,
                        apiKey: apiKey,
                        requests: requests,
                        currentFleet: currentFleet,
                        consoleClock: consoleClock,
                        wallStart: day == 1 ? wallStart : Date(),
                        progress: progress
                    )
                    recordings.append(recording)
                }
                let fcm = fcmSimulator.stats()
                logger.debug(
                    "FCM simulator so far",
                    metadata: [
                        "accepted": "\(fcm.accepted)", "rejected": "\(fcm.rejected)", "goAways": "\(fcm.goAwaysSent)",
                        "streamLimitViolations": "\(fcm.streamLimitViolations)", "peakStreams": "\(fcm.peakConcurrentStreams)",
                        "connections": "\(fcm.http2Connections)",
                    ]
                )
            }
            try await configuration.whileConsoleKept?(recordings)
        } catch {
            try? await http.shutdown()
            await stopServing()
            try? await simulator.shutdown()
            try? await fcmSimulator.shutdown()
            throw error
        }
        configuration.inspectFCMSimulator?(fcmSimulator)
        try await http.shutdown()
        await stopServing()
        try await simulator.shutdown()
        try await fcmSimulator.shutdown()
        return recordings
    }

    static let teamID = "DEMOTEAM01"
    static let keyID = "DEMOKEY001"
    static let fcmProjectID = "paperboy-demo"

    /// Android device `index`'s FCM registration token: today's shape (an 11-character instance id, `:APA91b`
    /// and 134 characters, all base64url), deterministic in (seed, index).
    public static func androidToken(index: Int, seed: UInt64) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var characters: [Character] = []
        for word in 0..<15 {
            var value = FleetModel.splitMix64(FleetModel.splitMix64(seed ^ 0xA0D2_01D0) ^ UInt64(index &* 16 &+ word))
            for _ in 0..<10 {
                characters.append(alphabet[Int(value & 63)])
                value >>= 6
            }
        }
        return String(characters[0..<11]) + ":APA91b" + String(characters[11..<145])
    }

    /// A strategy's app, publication and devices (seeded iOS ones, Android ones registered through the API),
    /// used by each of its mornings: the app's id and its device API key.
    private func prepare(
        _ strategy: DemoStrategy,
        client: PostgresClient,
        keyFile: String,
        tokens: [String],
        credentials: FCMCredentials,
        http: HTTPClient,
        apiBase: String,
        progress: @escaping @Sendable (DemoProgress) -> Void
    ) async throws -> (appID: Int, apiKey: String) {
        progress(.step("\(strategy.title): \(configuration.devices.formatted()) devices"))
        let (app, apiKey) = try await AppRepository(client: client).create(
            try NewApp(bundleID: "com.example.demo.\(strategy.rawValue)", teamID: Self.teamID, keyID: Self.keyID, keyReference: keyFile),
            logger: logger
        )
        _ = try await PublicationRepository(client: client).add(appID: app.id, slug: "morning", title: "Morning edition", logger: logger)
        _ = try await DeviceSeeder(client: client).seed(
            appID: app.id,
            publicationSlugs: ["morning"],
            count: configuration.devices,
            environment: .production,
            seed: configuration.seed,
            alertsShare: configuration.alertsShare,
            autoDownloadShare: 1,
            logger: logger
        )
        // The readers who asked to be told when the edition is ready (where the device allows alerts): the app
        // registers the setting; here it is set on the seeded rows.
        let model = FleetModel(seed: configuration.seed, parameters: configuration.fleet)
        let notify = try (0..<configuration.devices).filter { model.notifyWhenReady($0) }.map {
            ByteBuffer(bytes: try DeviceSeeder.token(index: $0, seed: configuration.seed).bytes)
        }
        try await client.query(
            "UPDATE devices SET notify_when_ready = true WHERE app_id = \(app.id) AND provider = 0 AND alerts_authorized AND token = ANY(\(notify))",
            logger: logger
        )
        if configuration.androidDevices > 0 {
            _ = try await AppRepository(client: client).setFCM(appID: app.id, credentials, logger: logger)
            progress(.step("registering \(configuration.androidDevices.formatted()) Android devices through the API (provider fcm)"))
            try await registerAndroid(tokens: Array(tokens[configuration.devices...]), http: http, apiBase: apiBase, apiKey: apiKey.secret)
        }
        try await placeReaders(strategy, appID: app.id, client: client, tokens: tokens, model: model, progress: progress)
        return (app.id, apiKey.secret)
    }

    /// The reader's day of the demo's first morning (Asia/Tokyo, as every device's time zone).
    static let morningDay = ReaderDay(morning, timeZone: TimeZone(identifier: "Asia/Tokyo")!)

    /// Device `index`'s token as stored: an APNs token's bytes, an FCM token's text.
    func storedToken(_ index: Int, tokens: [String]) -> [UInt8] {
        index < configuration.devices ? ((try? DeviceToken(hex: tokens[index]))?.bytes ?? []) : Array(tokens[index].utf8)
    }

    /// The readers' habits before the first morning: two weeks of open reports learned (``FleetModel/learnedHabit(_:days:morning:)``,
    /// written in bulk rather than sent as 350,000 requests), none for `hash`, and for `oracle` every device placed by
    /// when its reader opens this morning.
    private func placeReaders(
        _ strategy: DemoStrategy,
        appID: Int,
        client: PostgresClient,
        tokens: [String],
        model: FleetModel,
        progress: @escaping @Sendable (DemoProgress) -> Void
    ) async throws {
        let habits = HabitRepository(client: client)
        let start = Double(ReaderDay.startHour * 60)
        switch strategy {
        case .hash:
            return
        case .oracle:
            progress(.step("oracle: placing \(tokens.count.formatted()) devices by when their readers open the app this morning"))
            let weekend = Self.morningDay.isWeekend
            let minutes = tokens.indices.compactMap { index -> (token: [UInt8], minute: Double)? in
                model.firstOpen(index, day: 0, weekend: weekend).map { (storedToken(index, tokens: tokens), $0 - start) }
            }
            try await habits.placeByMinute(appID: appID, minutes: minutes, logger: logger)
        default:
            progress(
                .step(
                    "\(strategy.rawValue): learning \(tokens.count.formatted()) readers' habits from \(configuration.learningDays) mornings of opens"
                )
            )
            let learned = tokens.indices.map { index in
                (
                    token: storedToken(index, tokens: tokens),
                    habit: model.learnedHabit(index, days: configuration.learningDays, morning: Self.morningDay.number)
                )
            }
            try await habits.seed(appID: appID, habits: learned, logger: logger)
        }
    }

    /// When device readers open the app on morning `day` (from 0), in demo time: each reader's first open from the
    /// edition's publication to its deadline, and for a reader whose first open came before the publication, a second
    /// one an hour later (their first open after it). Sorted by time.
    func opens(model: FleetModel, devices: Int, day: Int, publication: Date, deadline: Date) -> [(device: Int, at: Date)] {
        // The publication is the demo's morning time of day (05:00 local), `morningDay.minute` after 03:00.
        let midnight = publication.addingTimeInterval(-(Self.morningDay.minute + Double(ReaderDay.startHour * 60)) * 60)
        let weekend = ReaderDay.isWeekend(day: Self.morningDay.number + day)
        var opens: [(device: Int, at: Date)] = []
        for index in 0..<devices {
            guard let minute = model.firstOpen(index, day: day, weekend: weekend) else { continue }
            var at = midnight.addingTimeInterval(minute * 60)
            if at < publication { at = at.addingTimeInterval(3600) }
            if at >= publication, at < deadline { opens.append((index, at)) }
        }
        return opens.sorted { $0.at < $1.at }
    }

    /// One morning of a strategy (`day` from 1 when the demo runs several, nil for one): an edition published,
    /// its broadcast sent by a dispatcher to the simulated fleet until it ends and the devices are done, and
    /// what was recorded.
    private func runMorning(
        _ strategy: DemoStrategy,
        day: Int?,
        appID: Int,
        client: PostgresClient,
        tokens: [String],
        model: FleetModel,
        channels: APNsChannels,
        fcmChannels: FCMChannels,
        http: HTTPClient,
        apiBase: String,
        apiKey: String,
        requests: Locked<[ObservedRequest]>,
        currentFleet: Locked<SimulatedFleet?>,
        consoleClock: Locked<DemoClock?>,
        wallStart: Date,
        progress: @escaping @Sendable (DemoProgress) -> Void
    ) async throws -> DemoRecording {
        let morning = Self.morning.addingTimeInterval(Double((day ?? 1) - 1) * 86400)
        if let day { progress(.step("\(strategy.rawValue): morning \(day) of \(configuration.days)")) }
        let factor = configuration.timeCompression[strategy] ?? 60
        let deadline = morning.addingTimeInterval(configuration.deadlineAfter)
        let edition = try await EditionRepository(client: client).publish(
            Self.manifest(deadline: deadline),
            appID: appID,
            now: morning,
            logger: logger
        )
        // Published at the morning's 05:00 in demo time (the database stamps its own clock): the readers' opens, in
        // demo time, count from it.
        try await client.query("UPDATE editions SET published_at = \(morning) WHERE id = \(edition.id)", logger: logger)
        var repository = BroadcastRepository(client: client)
        // Every broadcast statement on the demo's clock, not the database's: its morning is a fixed day, and the
        // statements that pace on the database's `now()` (the next slot, leases) would otherwise place the sends on
        // today's date, past the demo's deadline, and the workers would pace on the database's day (they measure its
        // offset).
        repository.leaseClock = .caller
        let started = try await repository.start(
            editionID: edition.id,
            environment: .production,
            options: options(strategy),
            origin: "demo",
            now: morning,
            logger: logger
        )
        let broadcast = started.broadcast
        // Demo time begins at the broadcast's start: with FCM targets it moves 2 minutes past 05:00 (Firebase's
        // quarter-hour advice), which the slow blast would otherwise spend waiting.
        let clock = DemoClock(origin: max(morning, broadcast.start), factor: factor)
        let fleet = SimulatedFleet(
            model: model,
            tokens: tokens,
            androidStart: configuration.devices,
            clock: clock,
            http: http,
            apiBase: apiBase,
            apiKey: apiKey,
            logger: logger
        )
        currentFleet.withLock { $0 = fleet }
        consoleClock.withLock { $0 = clock }
        let readerOpens = opens(model: model, devices: tokens.count, day: (day ?? 1) - 1, publication: morning, deadline: deadline)
        fleet.startOpens(readerOpens)
        let firstRequest = requests.withLock { $0.count }

        let dispatcher = Dispatcher(
            repository: repository,
            editions: EditionRepository(client: client),
            channels: channels,
            fcmChannels: fcmChannels,
            configuration: Dispatcher.Configuration(owner: "demo-\(strategy.rawValue)").scaled(by: factor),
            clock: clock.clock,
            logger: logger
        )
        let dispatching = Task { try await dispatcher.run() }
        // The morning's end, however it ends: nothing of it goes on sending or requesting. Devices still waiting
        // (Doze windows after the deadline) would otherwise reach the API during the next strategy's run and be
        // counted as its content load, or keep requesting while an interrupted demo shuts down.
        func endMorning() async {
            dispatching.cancel()
            _ = await dispatching.result
            currentFleet.withLock { $0 = nil }
            await fleet.stop()
        }
        var state = BroadcastProgress.State.running
        while true {
            do {
                try await Task.sleep(for: .milliseconds(250))
                state = try await repository.find(id: broadcast.id, logger: logger)?.state ?? .cancelled
            } catch {
                // Cancelled (the demo was interrupted) or the database failed.
                await endMorning()
                throw error
            }
            let now = clock.now()
            let sinceStart = Int(max(0, now.timeIntervalSince(broadcast.start)))
            progress(
                .status(
                    "\(strategy.rawValue): demo time +\(sinceStart / 60)m\(String(format: "%02d", sinceStart % 60))s (×\(Int(factor)))  "
                        + "pushes \(fleet.pushes.count.formatted())  devices with the edition \(fleet.holding.formatted())  "
                        + "devices busy \(fleet.pending.formatted())  broadcast \(state.rawValue)"
                )
            )
            if state != .running && fleet.pending == 0 { break }
            // Sent, and only Android devices (waiting for Doze windows spread over random phases) are left:
            // the wait may pass faster. Not before: a blast's 20,000 iOS runs squeezed into a second of wall
            // time would queue at the API for longer than the deadline lasts in demo time.
            if state != .running && fleet.onlyAndroidLeft { clock.speedUp(to: configuration.tailCompression) }
            if now > deadline.addingTimeInterval(60) { break }
        }
        await endMorning()
        // The opens still to come once the broadcast and the downloads are over cannot find anything new: reported
        // now, through the same repository the API calls, at their own times.
        // Sixteen at a time, as the API would take them: one after another they cost a short strategy 10 s of wall time.
        let habits = HabitRepository(client: client)
        let left = Array(readerOpens.dropFirst(fleet.opens.count))
        for start in stride(from: 0, to: left.count, by: 16) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for open in left[start..<min(start + 16, left.count)] {
                    let candidates = try PushToken.candidates(tokens[open.device])
                    group.addTask {
                        _ = try await habits.recordOpen(appID: appID, candidates: candidates, now: open.at, logger: logger)
                    }
                }
                try await group.waitForAll()
            }
            for open in left[start..<min(start + 16, left.count)] { fleet.openReported(device: open.device, at: open.at) }
        }

        // What was recorded, in demo seconds since the broadcast's start.
        let origin = broadcast.start.timeIntervalSince1970
        let pushes = fleet.pushes.map { DemoRecording.Push(device: $0.device, at: $0.at - origin, pushType: $0.pushType) }
        let answered = requests.withLock { Array($0[firstRequest...]) }.map { request in
            DemoRecording.Request(at: clock.demoTime(request.at).timeIntervalSince1970 - origin, route: request.route, status: request.status)
        }
        let receipts = try await self.receipts(edition: edition.id, client: client, tokens: fleet.tokenIndex, clock: clock, origin: origin)
        // Recounted first from the receipts and the opens: the steps' tallies are 2 to 4 s behind, and the last opens
        // have just been stored. Every open has been answered, so without the lag (writers still open hold the
        // watermark back all the same).
        try await ReceiptTallies(client: client, configuration: .init(lag: .zero, interval: .zero))
            .recount(broadcastID: broadcast.id, now: clock.now(), logger: logger)
        let progressReport = try await repository.progress(id: broadcast.id, logger: logger)
        var recording = DemoRecording(
            strategy: strategy,
            devices: configuration.devices + configuration.androidDevices,
            deadline: deadline.timeIntervalSince1970 - origin,
            window: configuration.window,
            pushes: pushes,
            requests: answered,
            receipts: receipts,
            rejections: progressReport?.totals.rejected ?? [:],
            wallSeconds: Date().timeIntervalSince(wallStart),
            androidDevices: configuration.androidDevices
        )
        recording.day = day
        recording.opens = fleet.opens.map { DemoRecording.Open(device: $0.device, at: $0.at - origin, held: $0.held) }
        recording.readyAtOpen = progressReport?.readyAtOpen
        recording.dormant = progressReport?.totals.dormant ?? 0
        (recording.readyAlerts, recording.readyHeld) = fleet.readyAlerts
        recording.wakeRatesByWave = try await WakeRateRepository(client: client).waveRates(
            broadcastID: broadcast.id,
            samplePushes: nil,
            logger: logger
        ).waves
        progress(
            .finished(
                strategy,
                "\(strategy.rawValue)\(day.map { " day \($0)" } ?? ""): \(pushes.count.formatted()) pushes, \(receipts.count.formatted()) receipts, "
                    + "\(answered.count.formatted()) API requests in \(String(format: "%.0f", recording.wallSeconds)) s"
                    + (fleet.requestsFailed > 0 ? "; \(fleet.requestsFailed.formatted()) device requests failed (see LOG_LEVEL=debug)" : "")
            )
        )
        return recording
    }

    private func receipts(
        edition: UUID,
        client: PostgresClient,
        tokens: [String: Int],
        clock: DemoClock,
        origin: TimeInterval
    ) async throws
        -> [DemoRecording.Receipt]
    {
        let rows = try await client.query(
            "SELECT d.token, r.result, r.received_at FROM receipts r JOIN devices d ON d.id = r.device_id WHERE r.edition_id = \(edition)",
            logger: logger
        )
        var receipts: [DemoRecording.Receipt] = []
        for try await (token, result, receivedAt) in rows.decode((ByteBuffer, String, Date).self) {
            // APNs tokens are stored as bytes, FCM tokens as their ASCII text.
            let bytes = Array(buffer: token)
            guard let index = tokens[DeviceToken(bytes: bytes).hex] ?? tokens[String(decoding: bytes, as: UTF8.self)] else { continue }
            receipts.append(DemoRecording.Receipt(device: index, at: clock.demoTime(receivedAt).timeIntervalSince1970 - origin, result: result))
        }
        return receipts
    }

    private func options(_ strategy: DemoStrategy) -> BroadcastOptions {
        switch strategy {
        case .blast:
            BroadcastOptions(
                pace: .capacity(perSecond: 10_000_000),
                cohorts: 1,
                maxPushesPerDevice: 1,
                jitter: 1,
                androidPriority: configuration.androidPriority
            )
        case .staggered:
            BroadcastOptions(
                pace: .window(configuration.window),
                cohorts: 16,
                maxPushesPerDevice: 1,
                jitter: 1,
                androidPriority: configuration.androidPriority
            )
        case .waves, .hash, .oracle:
            BroadcastOptions(
                pace: .window(configuration.window),
                cohorts: 16,
                waveInterval: configuration.waveInterval,
                maxPushesPerDevice: .auto,
                jitter: 1,
                androidPriority: configuration.androidPriority
            )
        }
    }

    /// The morning's edition: its issue date is the deadline's day in Tokyo.
    static func manifest(deadline: Date) -> EditionManifest {
        func bundle(_ name: String, _ bytes: Int64) -> EditionManifest.Bundle {
            EditionManifest.Bundle(
                url: "https://cdn.example.com/2026-11-23/morning/\(name).zip",
                bytes: bytes,
                sha256: String(repeating: "5e", count: 32)
            )
        }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "Asia/Tokyo")
        let day = ISO8601DateFormatter()
        day.timeZone = TimeZone(identifier: "Asia/Tokyo")
        day.formatOptions = [.withFullDate]
        return EditionManifest(
            publication: "morning",
            issueDate: day.string(from: deadline),
            deadline: formatter.string(from: deadline),
            tiers: [
                "small": .init(bundles: [bundle("small-1", 8_000_000)]),
                "medium": .init(bundles: [bundle("medium-1", 16_000_000), bundle("medium-2", 9_000_000)]),
                "large": .init(bundles: [bundle("large-1", 40_000_000), bundle("large-2", 20_000_000)]),
            ],
            pages: (1...24).map { EditionManifest.Page(number: $0, title: $0 == 1 ? "Front page" : nil) }
        )
    }
}

/// A value behind a lock, shared by reference between closures and tasks.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}
