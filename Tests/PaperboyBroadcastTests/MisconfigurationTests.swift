import APNs
import APNsSimulator
import Crypto
import FCMSimulator
import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// A misconfiguration never deactivates a fleet, with real `paperboy worker` processes against the simulators: an app
/// added with the wrong bundle id, workers pointed at the other APNs environment, `apps set-fcm` with another Firebase
/// project's service account. Every device answers "not valid for this app"; the provider is held, no device is
/// deactivated; the operator fixes the configuration as the runbook says; the broadcast resumes and reaches every
/// device exactly once.
@Suite(
    "misconfigurations: held, nothing deactivated, resumed after the fix",
    .serialized,
    .enabled(if: FileManager.default.isExecutableFile(atPath: FaultRig.binary.path), "the paperboy binary is built beside the tests")
)
struct MisconfigurationTests {
    static let devices = 2000

    static func activeDevices(_ rig: FaultRig) async throws -> Int {
        let rows = try await rig.client.query("SELECT count(*)::integer FROM devices WHERE active", logger: rig.logger).collect()
        return try rows.first?.decode(Int.self) ?? -1
    }

    static func holds(_ rig: FaultRig) async throws -> [ProviderHold] {
        try await ProviderHoldRepository(client: rig.client).all(logger: rig.logger)
    }

    /// An APNs simulator whose key may push to the real app's topic and the beta app's, and whose devices' tokens were
    /// issued to the real app: pushed with the beta topic, every device answers DeviceTokenNotForTopic.
    static func betaTopicSimulator() async throws -> APNsSimulator {
        var validation = APNsRequestValidator.Configuration(
            teamID: "TEAM123456",
            keys: ["KEY1234567": BroadcastFixture.privateKey.publicKey],
            topics: [BroadcastFixture.topic, "com.example.news.beta"]
        )
        validation.maximumTokenAge = 3600 * 24
        validation.deviceTopic = BroadcastFixture.topic
        var configuration = APNsSimulator.Configuration(validation: validation, faults: .init(), port: 0)
        configuration.eventLoopThreads = 1
        let simulator = APNsSimulator(configuration: configuration)
        try await simulator.start()
        return simulator
    }

    static func run(_ arguments: [String], rig: FaultRig) async throws {
        let run = try await PaperboyBinary.run(arguments, environment: ["DATABASE_URL": rig.databaseURL])
        #expect(run.status == 0, "paperboy \(arguments.joined(separator: " ")): \(run.output)")
    }

    @Test(
        "an app added with the wrong bundle id: APNs answers DeviceTokenNotForTopic for every device; held, 0 of 2,000 deactivated; apps set-bundle-id, then every device once",
        .timeLimit(.minutes(3))
    )
    func wrongBundleID() async throws {
        let simulator = try await Self.betaTopicSimulator()
        defer { Task { try? await simulator.shutdown() } }
        try await FaultRig.with { rig in
            _ = try await AppRepository(client: rig.client).setBundleID(appID: rig.app.id, "com.example.news.beta", logger: rig.logger)
            let tokens = try await rig.seed(Self.devices)
            let workers = try (1...2).map { try rig.worker("topic-\($0)", endpoint: simulator.url) }
            defer { for worker in workers { worker.stop() } }
            let id = try await rig.startBroadcast(window: 15)
            try await WorkerProcessTests.waitUntil(seconds: 40) { (try? await Self.holds(rig).isEmpty) == false }
            let hold = try #require(try await Self.holds(rig).first)
            #expect(hold.provider == .apns && hold.answer == "DeviceTokenNotForTopic", "\(hold)")
            #expect(hold.likelyCause.contains("bundle id"), "\(hold.likelyCause)")
            let progress = try #require(await rig.progress(id))
            #expect(progress.state == .running, "held, not failed")
            #expect(progress.held?.first?.provider == .apns)
            #expect(simulator.stats().accepted == 0)
            #expect(workers.contains { $0.output.contains("a misconfiguration is likely") }, "a log line names it")
            #expect(try await Self.activeDevices(rig) == Self.devices, "0 devices deactivated")

            // The operator fixes the bundle id, as the runbook says; the workers pick it up without a restart.
            try await Self.run(["apps", "set-bundle-id", "--app", "\(rig.app.id)", "--bundle-id", BroadcastFixture.topic], rig: rig)
            let done = try await rig.waitForCompletion(id, seconds: 90)
            #expect(done.state == .completed)
            await rig.expectExactlyOnce(tokens, simulator, broadcast: id, workers: workers, label: "wrong bundle id")
            #expect(try await Self.activeDevices(rig) == Self.devices)
            #expect(try await ProviderHoldRepository(client: rig.client).heldCount(logger: rig.logger) == 0, "the held deactivations were dropped")
        }
    }

    @Test(
        "a small app spread over three workers (20 devices at one a second, the wrong bundle id): no worker sees ten 'not valid' answers, the fleet rule holds the provider from every worker's answers, 0 deactivated; fixed, then completed with none sent twice (issue 47, finding 1)",
        .timeLimit(.minutes(3))
    )
    func smallFleetOverThreeWorkers() async throws {
        let simulator = try await Self.betaTopicSimulator()
        defer { Task { try? await simulator.shutdown() } }
        try await FaultRig.with { rig in
            _ = try await AppRepository(client: rig.client).setBundleID(appID: rig.app.id, "com.example.news.beta", logger: rig.logger)
            let devices = 20
            let tokens = try await rig.seed(devices)
            let workers = try (1...3).map { try rig.worker("small-\($0)", endpoint: simulator.url) }
            defer { for worker in workers { worker.stop() } }
            let id = try await rig.startBroadcast(window: 20, cohorts: 1)
            try await WorkerProcessTests.waitUntil(seconds: 60) { (try? await Self.holds(rig).isEmpty) == false }
            let hold = try #require(try await Self.holds(rig).first)
            #expect(hold.provider == .apns && hold.answer == "DeviceTokenNotForTopic", "\(hold)")
            #expect(hold.reason.contains("from every worker"), "the fleet rule raised it, not one worker's guard: \(hold.reason)")
            #expect(hold.likelyCause.contains("bundle id"), "\(hold.likelyCause)")
            #expect(try await Self.activeDevices(rig) == devices, "0 devices deactivated")
            #expect(workers.contains { $0.output.contains("from every worker say its tokens are not valid") }, "a log line names it")
            let answered = simulator.stats().rejected.values.reduce(0, +)
            #expect(answered >= 10 && answered < devices, "the hold stopped the sends: \(answered) answered")

            try await Self.run(["apps", "set-bundle-id", "--app", "\(rig.app.id)", "--bundle-id", BroadcastFixture.topic], rig: rig)
            let done = try await rig.waitForCompletion(id, seconds: 90)
            #expect(done.state == .completed)
            // The devices answered before the hold keep their rejection in this broadcast (sent once, with the wrong
            // topic); every other device is accepted once; none is sent twice or deactivated.
            let rows = try await rig.client.query(
                "SELECT outcome, count(*)::integer, count(DISTINCT device_id)::integer FROM deliveries WHERE broadcast_id = \(id) GROUP BY outcome",
                logger: rig.logger
            )
            var outcomes: [String: Int] = [:]
            for try await (outcome, count, distinct) in rows.decode((String, Int, Int).self) {
                outcomes[outcome] = count
                #expect(count == distinct, "\(outcome): a device recorded twice")
            }
            #expect(outcomes["accepted", default: 0] + outcomes["rejected", default: 0] == devices, "\(outcomes)")
            #expect(simulator.stats().accepted == outcomes["accepted", default: 0])
            let counts = simulator.acceptedCounts()
            #expect(tokens.filter { counts[$0.hex, default: 0] > 1 }.isEmpty, "none accepted twice")
            #expect(try await Self.activeDevices(rig) == devices)
            #expect(try await ProviderHoldRepository(client: rig.client).heldCount(logger: rig.logger) == 0, "the held deactivations were dropped")
        }
    }

    @Test(
        "workers pointed at the other APNs environment: BadDeviceToken for every device; held, 0 deactivated; restarted on the right endpoint and released, then every device once",
        .timeLimit(.minutes(3))
    )
    func otherEnvironment() async throws {
        var faults = APNsSimulator.Faults()
        faults.outcomesByTokenPrefix = [("", .init(status: 400, reason: .badDeviceToken))]
        try await FaultRig.with { rig in
            try await FaultTests.withSimulator(faults: faults) { sandbox in
                try await FaultTests.withSimulator { production in
                    let tokens = try await rig.seed(Self.devices)
                    let wrong = try (1...2).map { try rig.worker("sandbox-\($0)", endpoint: sandbox.url) }
                    defer { for worker in wrong { worker.stop() } }
                    let id = try await rig.startBroadcast(window: 15)
                    try await WorkerProcessTests.waitUntil(seconds: 40) { (try? await Self.holds(rig).isEmpty) == false }
                    #expect(try await Self.holds(rig).first?.answer == "BadDeviceToken")
                    #expect(try await Self.activeDevices(rig) == Self.devices, "0 devices deactivated")
                    let answered = sandbox.stats().rejected.values.reduce(0, +)
                    #expect(answered > 0 && answered < Self.devices, "the hold stopped the sends: \(answered) answered")

                    // The fix: the workers' endpoint (a deploy), then the hold released.
                    for worker in wrong { #expect(await worker.terminate(within: 20) != nil) }
                    let right = try (1...2).map { try rig.worker("production-\($0)", endpoint: production.url) }
                    defer { for worker in right { worker.stop() } }
                    try await Self.run(["apps", "release", "--app", "\(rig.app.id)", "--provider", "apns"], rig: rig)
                    let done = try await rig.waitForCompletion(id, seconds: 90)
                    #expect(done.state == .completed)
                    await rig.expectExactlyOnce(tokens, production, broadcast: id, workers: right, label: "other environment")
                    #expect(try await Self.activeDevices(rig) == Self.devices)
                }
            }
        }
    }

    @Test(
        "apps set-fcm with another Firebase project's service account: SENDER_ID_MISMATCH for every device; held, 0 deactivated; set-fcm with the right one, then every device once",
        // About 2 minutes of broadcast.
        .timeLimit(.minutes(4))
    )
    func otherFirebaseProject() async throws {
        var configuration = FCMSimulator.Configuration()
        configuration.eventLoopThreads = 1
        let fcm = try FCMSimulator(configuration: configuration)
        _ = try await fcm.start()
        let directory = FileManager.default.temporaryDirectory
        let wrongFile = directory.appendingPathComponent("paperboy-misconfigured-\(UUID().uuidString).json").path
        let rightFile = directory.appendingPathComponent("paperboy-configured-\(UUID().uuidString).json").path
        defer {
            try? FileManager.default.removeItem(atPath: wrongFile)
            try? FileManager.default.removeItem(atPath: rightFile)
        }
        do {
            try await FaultRig.with { rig in
                try await FaultTests.withSimulator { apns in
                    try fcm.makeServiceAccount(projectID: "paperboy-other").write(to: wrongFile)
                    try fcm.makeServiceAccount(projectID: "paperboy-news").write(to: rightFile)
                    _ = try await AppRepository(client: rig.client).setFCM(
                        appID: rig.app.id,
                        try FCMCredentials(serviceAccount: wrongFile, projectID: "paperboy-other"),
                        logger: rig.logger
                    )
                    // The tokens were issued for the app's project: any other project's sender is refused.
                    fcm.updateFaults { $0.outcomesByTokenPrefix = [("", .senderIDMismatch)] }
                    let tokens = try await rig.seedFCM(Self.devices)
                    let workers = try (1...2).map { try rig.worker("firebase-\($0)", endpoint: apns.url, fcmEndpoint: fcm.url) }
                    defer { for worker in workers { worker.stop() } }
                    // A broadcast to FCM devices starts outside Firebase's quarter-hour margins: one started inside them
                    // would wait up to 4 minutes. Started as of the last instant outside them (at most 4 minutes ago), it
                    // starts now and catches up at its plan's rate.
                    let id = try await rig.startBroadcast(window: 15, now: Self.outsideQuarterHourMargins(Date()))
                    try await WorkerProcessTests.waitUntil(seconds: 40) { (try? await Self.holds(rig).isEmpty) == false }
                    let hold = try #require(try await Self.holds(rig).first)
                    #expect(hold.provider == .fcm && hold.answer == "SENDER_ID_MISMATCH", "\(hold)")
                    #expect(try await Self.activeDevices(rig) == Self.devices, "0 devices deactivated")

                    fcm.updateFaults { $0.outcomesByTokenPrefix = [] }
                    try await Self.run(["apps", "set-fcm", "--app", "\(rig.app.id)", "--service-account", rightFile], rig: rig)
                    let done = try await rig.waitForCompletion(id, seconds: 90)
                    #expect(done.state == .completed)
                    let counts = Dictionary(uniqueKeysWithValues: tokens.map { ($0.text, fcm.acceptedCount(for: $0.text)) })
                    #expect(counts.values.allSatisfy { $0 == 1 }, "every device accepted once: \(counts.values.filter { $0 != 1 }.count) not")
                    #expect(try await Self.activeDevices(rig) == Self.devices)
                }
            }
        } catch {
            try? await fcm.shutdown()
            throw error
        }
        try await fcm.shutdown()
    }

    /// The latest instant at or before `instant` from which a broadcast's start (plus its jitter of up to a second)
    /// stays outside Firebase's quarter-hour margins (``StaggerPlan/avoidingQuarterHours(_:margin:)``).
    static func outsideQuarterHourMargins(_ instant: Date) -> Date {
        var start = instant
        while StaggerPlan.avoidingQuarterHours(start) != start
            || StaggerPlan.avoidingQuarterHours(start.addingTimeInterval(2)) != start.addingTimeInterval(2)
        {
            start = start.addingTimeInterval(-10)
        }
        return start
    }
}
