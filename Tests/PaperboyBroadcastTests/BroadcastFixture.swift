import APNs
import APNsSimulator
import Crypto
import Foundation
import Logging
import PaperboyBroadcast
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Synchronization
import Testing

/// Time that moves only when told to, or when the dispatcher sleeps until a send instant (then it jumps
/// there): waves an hour apart run in no time, and every run sends the same way.
final class VirtualClock: Sendable {
    private let instant: Mutex<Date>

    init(_ start: Date) {
        instant = Mutex(start)
    }

    var now: Date { instant.withLock { $0 } }

    func set(_ date: Date) {
        instant.withLock { $0 = date }
    }

    var broadcastClock: BroadcastClock {
        BroadcastClock(now: { self.now }, sleep: { until in self.instant.withLock { $0 = max($0, until) } })
    }
}

/// A database with an app (its key in a temporary file), publications `morning` and `evening`, devices,
/// an edition, the APNs simulator on loopback and a dispatcher on a virtual clock.
struct BroadcastFixture {
    static let privateKey = P256.Signing.PrivateKey()
    static let topic = "com.example.news"

    let db: TestDatabase
    let app: App
    let simulator: APNsSimulator
    let channels: APNsChannels
    let clients: APNsClients
    let clock: VirtualClock
    let repository: BroadcastRepository
    var tokens: [DeviceToken] = []

    var logger: Logger { db.logger }

    /// Tokens starting with `dead` are answered 410 Unregistered, `bad0` 400 BadDeviceToken.
    static func token(_ index: Int, prefix: String = "") -> DeviceToken {
        let tail = String(index, radix: 16)
        return try! DeviceToken(hex: prefix + String(repeating: "0", count: 64 - prefix.count - tail.count) + tail)
    }

    static func with(
        start: Date = Date(),
        faults: APNsSimulator.Faults = .init(),
        _ body: (inout BroadcastFixture) async throws -> Void
    ) async throws {
        try await TestDatabase.with { db in
            let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-test-\(UUID().uuidString).p8").path
            try privateKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: keyFile) }
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: topic, teamID: "TEAM123456", keyID: "KEY1234567", keyReference: keyFile),
                logger: db.logger
            ).app
            for slug in ["morning", "evening"] {
                _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: slug, title: nil, logger: db.logger)
            }
            var validation = APNsRequestValidator.Configuration(teamID: "TEAM123456", keys: ["KEY1234567": privateKey.publicKey], topics: [topic])
            validation.maximumTokenAge = 3600 * 24
            let simulator = APNsSimulator(configuration: .init(validation: validation, faults: faults))
            let port = try await simulator.start()
            let clients = APNsClients { configuration in
                configuration.retryPolicy.initialBackoff = .milliseconds(1)
                configuration.retryPolicy.maximumBackoff = .milliseconds(4)
            }
            let endpoints = try APNsEndpoints(override: "http://127.0.0.1:\(port)")
            var fixture = BroadcastFixture(
                db: db,
                app: app,
                simulator: simulator,
                channels: APNsChannels(clients: clients, endpoints: endpoints),
                clients: clients,
                clock: VirtualClock(start),
                repository: {
                    // Leases on the virtual clock too, so that a lease expires when the test says.
                    var repository = BroadcastRepository(client: db.client)
                    repository.leaseClock = .caller
                    return repository
                }()
            )
            do {
                try await body(&fixture)
            } catch {
                await clients.shutdown()
                try await simulator.shutdown()
                throw error
            }
            await clients.shutdown()
            try await simulator.shutdown()
        }
    }

    /// Registers devices with tokens `token(offset + i, prefix:)`.
    mutating func register(
        _ count: Int,
        offset: Int = 0,
        prefix: String = "",
        subscriptions: [String] = ["morning"],
        tier: ImageTier = .large,
        alerts: Bool = false,
        autoDownload: Bool = true,
        notifyWhenReady: Bool = false,
        editionAlerts: Bool = false
    ) async throws {
        let devices = DeviceRepository(client: db.client)
        for index in 0..<count {
            let token = Self.token(offset + index, prefix: prefix)
            _ = try await devices.register(
                appID: app.id,
                token: token,
                DeviceRegistration(
                    environment: .production,
                    subscriptions: subscriptions,
                    timeZone: "Asia/Tokyo",
                    tier: tier,
                    autoDownload: autoDownload,
                    alertsAuthorized: alerts,
                    notifyWhenReady: notifyWhenReady,
                    editionAlerts: editionAlerts
                ),
                logger: logger
            )
            tokens.append(token)
        }
    }

    /// Publishes an edition of `publication` for the clock's day with the given deadline.
    func publish(_ publication: String = "morning", issueDate: String = "2026-11-23", deadline: Date, now: Date? = nil) async throws -> Edition {
        let sha = String(repeating: "0f", count: 32)
        let manifest = EditionManifest(
            publication: publication,
            issueDate: issueDate,
            deadline: deadline.formatted(.iso8601),
            tiers: [
                "large": .init(bundles: [
                    .init(url: "https://cdn.example.com/\(issueDate)/\(publication)/large-1.zip", bytes: 50_000_000, sha256: sha)
                ])
            ],
            pages: [.init(number: 1, title: "Front page")]
        )
        return try await EditionRepository(client: db.client).publish(manifest, appID: app.id, now: now ?? clock.now, logger: logger)
    }

    func dispatcher(owner: String = "test-worker", lookahead: Duration? = nil, fcm: FCMChannels? = nil, failAfter: Duration? = nil) -> Dispatcher {
        var configuration = Dispatcher.Configuration(owner: owner)
        if let lookahead { configuration.lookahead = lookahead }
        if let failAfter { configuration.failAfter = failAfter }
        return Dispatcher(
            repository: repository,
            editions: EditionRepository(client: db.client),
            channels: channels,
            fcmChannels: fcm,
            configuration: configuration,
            clock: clock.broadcastClock,
            logger: logger
        )
    }

    /// Runs the dispatcher from the clock's now until `instant`, as a worker that runs all along would.
    @discardableResult
    func step(at instant: Date, _ dispatcher: Dispatcher) async throws -> StepReport {
        try await dispatcher.step(until: instant)
    }

    /// The integer a one-row, one-column query answers (0 when it answers no row).
    func scalar(_ query: PostgresQuery) async throws -> Int {
        var value = 0
        for try await count in try await db.client.query(query, logger: logger).decode(Int.self) { value = count }
        return value
    }

    /// Pushes the simulator accepted per token (hex).
    func accepted() -> [String: Int] {
        simulator.acceptedCounts()
    }

    func receipt(_ token: DeviceToken, edition: Edition, _ result: ReceiptResult = .newData) async throws {
        _ = try await ReceiptRepository(client: db.client).record(
            appID: app.id,
            token: token,
            ReceiptReport(editionID: edition.id, result: result),
            logger: logger
        )
    }
}
