import APNs
import APNsSimulator
import Crypto
import Foundation
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The ordinary events of a production week, with real `paperboy worker` processes against the simulator: a rolling
/// restart mid-broadcast, a pod started without its secret, an APNs key revoked and rotated, nobody able to send.
/// Every device is accepted exactly once (the simulator's per-token counts are the truth), and what an operator
/// sees (exit codes and times, `/health/ready`, the broadcast's state and reason) is checked as they would.
@Suite(
    "day two: deploys, missing secrets, rotated keys",
    .serialized,
    .enabled(if: FileManager.default.isExecutableFile(atPath: FaultRig.binary.path), "the paperboy binary is built beside the tests")
)
struct DayTwoTests {
    static let keyVariable = "PAPERBOY_FAULT_APNS_KEY"
    static var pem: String { BroadcastFixture.privateKey.pemRepresentation }

    /// Every device accepted exactly once; on failure, which were not, through which batch, lease, connection and
    /// stream (``FaultRig/expectExactlyOnce(_:_:broadcast:workers:label:sourceLocation:)``).
    static func expectExactlyOnce(
        _ tokens: [DeviceToken],
        _ simulator: APNsSimulator,
        rig: FaultRig,
        broadcast: UUID,
        workers: [WorkerProcess],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await rig.expectExactlyOnce(tokens, simulator, broadcast: broadcast, workers: workers, label: "day two", sourceLocation: sourceLocation)
    }

    static func ready(port: Int) async -> (status: Int, body: String)? {
        guard let url = URL(string: "http://127.0.0.1:\(port)/health/ready"),
            let (body, response) = try? await URLSession.shared.data(from: url), let http = response as? HTTPURLResponse
        else { return nil }
        return (http.statusCode, String(decoding: body, as: UTF8.self))
    }

    @Test(
        "three workers, one started without the app's key (its variable unset): every device reached once, the broadcast completes, that worker reports itself unready and logs once per backoff",
        .timeLimit(.minutes(2))
    )
    func podWithoutItsSecret() async throws {
        let devices = 3000
        try await FaultRig.with(keyInEnvironment: Self.keyVariable) { rig in
            try await FaultTests.withSimulator { simulator in
                let tokens = try await rig.seed(devices)
                let port = try reserveLoopbackPort()
                let bad = try rig.worker("no-secret", endpoint: simulator.url, arguments: ["--port", "\(port)"])
                defer { bad.stop() }
                let id = try await rig.startBroadcast(window: 15)
                // The keyless worker learns it cannot send when it leases a batch: alone, it leases the first one.
                // (Started together, the two healthy workers once took every batch of the 15 s window first, and
                // the keyless one never leased: CI, 2026-11-29.)
                try await WorkerProcessTests.waitUntil(seconds: 30) { await Self.ready(port: port)?.status == 503 }
                let good = try (1...2).map { try rig.worker("good-\($0)", endpoint: simulator.url, environment: [Self.keyVariable: Self.pem]) }
                defer { for worker in good { worker.stop() } }
                let readiness = await Self.ready(port: port)
                // A stranger learns up or down only (issue 35); the reason is the console's (the workers' table, its
                // Workers page) and the log's.
                #expect(readiness?.body.contains("not_ready") == true)
                #expect(readiness?.body.contains(Self.keyVariable) == false, "no reasons for strangers: \(readiness?.body ?? "")")
                let workers = WorkerRepository(client: rig.client)
                try await WorkerProcessTests.waitUntil(seconds: 30) {
                    let listed = (try? await workers.list(seenSince: Date().addingTimeInterval(-60), logger: rig.logger)) ?? []
                    return listed.first { $0.name == "no-secret" }?.problems.joined().contains(Self.keyVariable) == true
                }
                #expect(bad.output.contains(Self.keyVariable), "the log names what is missing")

                let progress = try await rig.waitForCompletion(id, seconds: 60)
                #expect(progress.state == .completed)
                #expect(progress.waves[0].counts.sent == devices)
                await Self.expectExactlyOnce(tokens, simulator, rig: rig, broadcast: id, workers: [bad] + good)

                let told = bad.output.components(separatedBy: "this worker cannot send for the app").count - 1
                #expect((1...4).contains(told), "logged once per backoff (15 s, then 30 s), not per batch: \(told) times")
                for worker in [bad] + good {
                    #expect(await worker.terminate(within: 15) != nil && worker.process.terminationStatus == 0)
                }
            }
        }
    }

    /// `serve` runs the device API and, unless `--no-dispatch`, a dispatcher. A dispatcher that cannot send for an app
    /// (a pod without the app's key) must not take the devices' API out of the load balancer: `serve`'s readiness does
    /// not depend on sending, while a `paperboy worker`'s does (``podWithoutItsSecret()``). The admin listener's
    /// readiness says why it cannot send.
    @Test(
        "a serve whose dispatcher cannot send for the app (its key's variable unset) stays ready on --port; its --admin-port readiness names what is missing",
        .timeLimit(.minutes(2))
    )
    func serveStaysReadyWithoutTheKey() async throws {
        try await FaultRig.with(keyInEnvironment: Self.keyVariable) { rig in
            try await FaultTests.withSimulator { simulator in
                _ = try await rig.seed(200)
                _ = try await rig.startBroadcast(window: 30)
                let (port, adminPort) = (try reserveLoopbackPort(), try reserveLoopbackPort())
                let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-keyless-\(UUID().uuidString).log")
                let serve = try PaperboyBinary.start(
                    [
                        "serve", "--port", "\(port)", "--admin-port", "\(adminPort)", "--apns-endpoint", simulator.url, "--worker-name",
                        "keyless-serve", "--lease", FaultRig.lease, "--no-scheduler",
                    ],
                    environment: [
                        "DATABASE_URL": rig.databaseURL, "PAPERBOY_ADMIN_TOKEN": "admin-token-for-the-test-000", Self.keyVariable: nil,
                    ],
                    log: log
                )
                defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
                // Its dispatcher learns that it cannot send when it leases a batch of the app.
                try await WorkerProcessTests.waitUntil(seconds: 60) {
                    await Self.ready(port: adminPort)?.body.contains(Self.keyVariable) == true
                }
                let admin = await Self.ready(port: adminPort)
                #expect(admin?.status == 200, "the admin listener's readiness: \(admin?.body ?? "none")")
                let exposed = await Self.ready(port: port)
                #expect(exposed?.status == 200, "serve's API stays in the load balancer: \(exposed?.body ?? "none")")
                #expect(exposed?.body.contains(Self.keyVariable) == false, "no reasons for strangers: \(exposed?.body ?? "")")
                kill(serve.processIdentifier, SIGTERM)
                #expect(await serve.exited(within: .seconds(30)))
            }
        }
    }

    @Test(
        "nobody can load the app's key: the broadcast fails after --fail-after, naming every worker's reason",
        .timeLimit(.minutes(2))
    )
    func nobodyCanSend() async throws {
        try await FaultRig.with(keyInEnvironment: Self.keyVariable) { rig in
            try await FaultTests.withSimulator { simulator in
                _ = try await rig.seed(300)
                let workers = try (1...2).map { try rig.worker("keyless-\($0)", endpoint: simulator.url, arguments: ["--fail-after", "10s"]) }
                defer { for worker in workers { worker.stop() } }
                let id = try await rig.startBroadcast(window: 10)
                try await WorkerProcessTests.waitUntil(seconds: 60) { await rig.progress(id)?.state == .failed }
                let broadcast = try #require(try await rig.repository.find(id: id, logger: rig.logger))
                let reason = broadcast.failure ?? ""
                #expect(reason.contains("no worker could send its APNs pushes"), "\(reason)")
                #expect(reason.contains("keyless-1") && reason.contains("keyless-2") && reason.contains(Self.keyVariable), "\(reason)")
                #expect(simulator.stats().accepted == 0)
            }
        }
    }

    @Test(
        "an APNs key revoked mid-week and rotated with `apps set-apns` while workers run: no device deactivated, every device then reached once without a restart",
        .timeLimit(.minutes(2))
    )
    func keyRevokedThenRotated() async throws {
        let devices = 600
        let newKey = P256.Signing.PrivateKey()
        let newKeyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-rotated-\(UUID().uuidString).p8").path
        try newKey.pemRepresentation.write(toFile: newKeyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: newKeyFile) }
        // Apple knows the new key only: the app's key was revoked.
        var validation = APNsRequestValidator.Configuration(
            teamID: "TEAM123456",
            keys: ["NEWKEY0001": newKey.publicKey],
            topics: [BroadcastFixture.topic]
        )
        validation.maximumTokenAge = 3600 * 24
        var configuration = APNsSimulator.Configuration(validation: validation, faults: .init(), port: 0)
        configuration.eventLoopThreads = 1
        let simulator = APNsSimulator(configuration: configuration)
        try await simulator.start()
        defer { Task { try? await simulator.shutdown() } }
        try await FaultRig.with { rig in
            let tokens = try await rig.seed(devices)
            let workers = try (1...2).map { try rig.worker("rotate-\($0)", endpoint: simulator.url) }
            defer { for worker in workers { worker.stop() } }
            let id = try await rig.startBroadcast(window: 10)
            try await WorkerProcessTests.waitUntil(seconds: 30) {
                workers.allSatisfy { $0.output.contains("this worker cannot send for the app") }
            }
            #expect(simulator.stats().accepted == 0)
            // The operator rotates the key as the runbook says, while the workers run.
            let rotated = try await PaperboyBinary.run(
                ["apps", "set-apns", "--app", "\(rig.app.id)", "--team-id", "TEAM123456", "--key-id", "NEWKEY0001", "--key-file", newKeyFile],
                environment: ["DATABASE_URL": rig.databaseURL]
            )
            #expect(rotated.status == 0, "apps set-apns: \(rotated.output)")
            let progress = try await rig.waitForCompletion(id, seconds: 90)
            #expect(progress.waves[0].counts.sent == devices)
            await Self.expectExactlyOnce(tokens, simulator, rig: rig, broadcast: id, workers: workers)
            let active = try await rig.client.query("SELECT count(*) FROM devices WHERE active", logger: rig.logger).collect()
            #expect(try active.first?.decode(Int.self) == devices, "an auth error is never a token's fault")
        }
    }

    @Test(
        "a rolling restart mid-broadcast (each worker SIGTERMed in turn, a replacement started), APNs answering in 150 ms with 3 % 429s: every device once, each old worker out within --drain-timeout + 2 s, no second above 1.10 × the plan",
        .timeLimit(.minutes(3))
    )
    func rollingRestart() async throws {
        let devices = 4000
        let window = 30.0
        var faults = APNsSimulator.Faults()
        faults.latency = .milliseconds(150)
        faults.failureRates = [(.init(status: 429, reason: .tooManyRequests), 0.03)]
        try await FaultRig.with { rig in
            try await FaultTests.withSimulator(faults: faults) { simulator in
                let tokens = try await rig.seed(devices)
                let drain = ["--drain-timeout", "5s"]
                var running = try ["a", "b"].map { try rig.worker("roll-\($0)", endpoint: simulator.url, arguments: drain) }
                var all = running
                defer { for worker in all { worker.stop() } }
                let id = try await rig.startBroadcast(window: window)
                var exits: [Double] = []
                for (turn, share) in [0.3, 0.6].enumerated() {
                    try await WorkerProcessTests.waitUntil(seconds: 60) { simulator.stats().accepted >= Int(Double(devices) * share) }
                    let old = running.removeFirst()
                    let seconds = try #require(await old.terminate(within: 30), "\(old.name) exits after SIGTERM")
                    exits.append(seconds)
                    #expect(old.process.terminationReason == .exit && old.process.terminationStatus == 0)
                    #expect(try await rig.openBatches(id, owner: old.name) == 0, "\(old.name) holds no lease: what it did not send went back")
                    let replacement = try rig.worker("roll-new-\(turn)", endpoint: simulator.url, arguments: drain)
                    running.append(replacement)
                    all.append(replacement)
                }
                let progress = try await rig.waitForCompletion(id, seconds: 90)
                print(
                    "[day two] rolling restart: old workers exited in \(exits.map { String(format: "%.2f s", $0) }); per second \(simulator.stats().acceptsPerSecond)"
                )
                for seconds in exits { #expect(seconds < 7, "out within --drain-timeout 5 s + 2 s: \(seconds) s") }
                #expect(progress.waves[0].counts.sent == devices)
                await Self.expectExactlyOnce(tokens, simulator, rig: rig, broadcast: id, workers: all)
                FaultTests.expectPaced(simulator, rate: Double(devices) / window, "rolling restart")
            }
        }
    }

    @Test(
        "a keyless pod left running from the morning into the evening; the healthy worker paused 3 s as the evening starts, so the keyless one leases first: the evening does not fail, every device once",
        .timeLimit(.minutes(3))
    )
    func keylessPodIntoTheEvening() async throws {
        try await FaultRig.with(keyInEnvironment: Self.keyVariable) { rig in
            try await FaultTests.withSimulator { simulator in
                _ = try await PublicationRepository(client: rig.client).add(appID: rig.app.id, slug: "evening", title: nil, logger: rig.logger)
                let morningTokens = try await rig.seed(300)
                let eveningTokens = try await rig.seed(2000, publication: "evening", first: 10_000)
                let failAfter = ["--fail-after", "10s"]
                let keyless = try rig.worker("keyless", endpoint: simulator.url, arguments: failAfter)
                defer { keyless.stop() }
                let healthy = try rig.worker("healthy", endpoint: simulator.url, arguments: failAfter, environment: [Self.keyVariable: Self.pem])
                defer { healthy.stop() }
                let morning = try await rig.startBroadcast(window: 3)
                #expect(try await rig.waitForCompletion(morning, seconds: 60).state == .completed)
                await Self.expectExactlyOnce(morningTokens, simulator, rig: rig, broadcast: morning, workers: [keyless, healthy])
                // Longer than --fail-after after the morning's last send: measured from it, the evening would fail at once.
                try await Task.sleep(for: .seconds(12))
                simulator.reset()
                kill(healthy.pid, SIGSTOP)
                let evening = try await rig.startBroadcast(window: 10, publication: "evening")
                try await WorkerProcessTests.waitUntil(seconds: 20) { keyless.output.contains("gave a batch back to its cohort") }
                try await Task.sleep(for: .seconds(3))
                #expect(await rig.progress(evening)?.state == .running, "not failed while the healthy worker is paused")
                kill(healthy.pid, SIGCONT)
                let progress = try await rig.waitForCompletion(evening, seconds: 90)
                #expect(progress.state == .completed, "\(progress.failure ?? "")")
                await Self.expectExactlyOnce(eveningTokens, simulator, rig: rig, broadcast: evening, workers: [keyless, healthy])
            }
        }
    }

    @Test(
        "a key rotated mid-broadcast with `apps set-apns`, the old .p8 removed at once and the old key revoked at Apple a moment later: no device deactivated, every device once, no restart",
        .timeLimit(.minutes(3))
    )
    func keyRotatedMidBroadcast() async throws {
        let devices = 2000
        let newKey = P256.Signing.PrivateKey()
        let newKeyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-rotated-\(UUID().uuidString).p8").path
        try newKey.pemRepresentation.write(toFile: newKeyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: newKeyFile) }
        var validation = APNsRequestValidator.Configuration(
            teamID: "TEAM123456",
            keys: ["KEY1234567": BroadcastFixture.privateKey.publicKey, "NEWKEY0001": newKey.publicKey],
            topics: [BroadcastFixture.topic]
        )
        validation.maximumTokenAge = 3600 * 24
        var configuration = APNsSimulator.Configuration(validation: validation, faults: .init(), port: 0)
        configuration.eventLoopThreads = 1
        configuration.faults.latency = .milliseconds(100)
        let simulator = APNsSimulator(configuration: configuration)
        try await simulator.start()
        defer { Task { try? await simulator.shutdown() } }
        try await FaultRig.with { rig in
            let oldKeyFile = try #require(rig.app.apns?.keyReference)
            let tokens = try await rig.seed(devices)
            let workers = try (1...2).map { try rig.worker("rotate-mid-\($0)", endpoint: simulator.url) }
            defer { for worker in workers { worker.stop() } }
            let id = try await rig.startBroadcast(window: 15)
            try await WorkerProcessTests.waitUntil(seconds: 40) { simulator.stats().accepted >= devices / 3 }
            let rotated = try await PaperboyBinary.run(
                ["apps", "set-apns", "--app", "\(rig.app.id)", "--team-id", "TEAM123456", "--key-id", "NEWKEY0001", "--key-file", newKeyFile],
                environment: ["DATABASE_URL": rig.databaseURL]
            )
            #expect(rotated.status == 0, "apps set-apns: \(rotated.output)")
            try FileManager.default.removeItem(atPath: oldKeyFile)
            try await Task.sleep(for: .milliseconds(500))
            validation.revoked.revoke("KEY1234567")
            let progress = try await rig.waitForCompletion(id, seconds: 90)
            #expect(progress.state == .completed)
            #expect(progress.waves[0].counts.sent == devices)
            await Self.expectExactlyOnce(tokens, simulator, rig: rig, broadcast: id, workers: workers)
            let active = try await rig.client.query("SELECT count(*) FROM devices WHERE active", logger: rig.logger).collect()
            #expect(try active.first?.decode(Int.self) == devices, "an auth error is never a token's fault")
        }
    }
}
