import ArgumentParser
import AsyncHTTPClient
import FCM
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import PushTransport

/// `paperboy-bench fcm`: the FCM client's throughput, latency, CPU and memory against `paperboy fcm-sim` as a
/// separate process, next to h2load sending the same request and, on request, the Python Firebase Admin SDK,
/// all in the same run.
///
/// A benchmark, not a test: it prints numbers; it fails only when a message is not accepted.
struct FCMBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "Measure the FCM client (messages/s, latency, CPU, memory) against fcm-sim, beside h2load and firebase-admin.",
        discussion: """
            Starts `paperboy fcm-sim --no-record` (the `paperboy` binary beside this one, or --paperboy) on a free loopback
            port with a throwaway service account whose token_uri is the simulator's. Each round sends -n Android data
            messages (normal priority, a broadcast's edition, manifest, tier, deadline and fetch list) to distinct
            FCM-shaped tokens with Paperboy's FCMClient, then the same POST (path, headers, body, a bearer token from the
            simulator's token endpoint) -n times with h2load over cleartext HTTP/2 with the same connections and streams.
            With --firebase-admin PYTHON, scripts/bench-firebase-admin.py then sends --firebase-admin-n messages with
            firebase-admin's send_each to the same simulator. Any message not accepted ends the run with an error.
            """
    )

    @OptionGroup var options: PushBenchOptions

    @Option(
        name: .customLong("streams"),
        help: "Streams per connection: the client's cap, the simulator's limit and h2load's -m (FCM allows about 100)."
    )
    var streamsPerConnection = 100

    @Option(name: .customLong("project-id"), help: "The Firebase project of the throwaway service account.")
    var projectID = "paperboy-bench"

    @Option(
        name: .customLong("quota-per-minute"),
        help: ArgumentHelp(
            "The client's project quota (messages a minute). Default: high enough never to wait, so that the client's machinery is measured; FCM's default quota is 600000.",
            valueName: "n"
        )
    )
    var quotaPerMinute = 1_000_000_000

    @Option(
        name: .customLong("firebase-admin"),
        help: ArgumentHelp(
            "A Python with firebase-admin installed: run scripts/bench-firebase-admin.py against the same simulator.",
            valueName: "python"
        )
    )
    var firebaseAdminPython: String?

    @Option(name: .customLong("firebase-admin-n"), help: "Messages the firebase-admin run sends (it is slow).")
    var firebaseAdminN = 20_000

    @Option(name: .customLong("firebase-admin-script"), help: ArgumentHelp("The script to run.", valueName: "file"))
    var firebaseAdminScript = "scripts/bench-firebase-admin.py"

    func validate() throws {
        guard (1...1000).contains(streamsPerConnection) else { throw ValidationError("--streams: 1 to 1000") }
        guard quotaPerMinute > 0 else { throw ValidationError("--quota-per-minute: must be positive") }
        guard FCMServiceAccount.isProjectID(projectID) else { throw ValidationError("--project-id: '\(projectID)' is not a Firebase project id") }
        guard firebaseAdminN > 0 else { throw ValidationError("--firebase-admin-n: must be positive") }
        if firebaseAdminPython != nil, !FileManager.default.fileExists(atPath: firebaseAdminScript) {
            throw ValidationError("--firebase-admin-script: no file at \(firebaseAdminScript) (run from the repository or pass the path)")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrapBench()
        installNIOExecutor(options.nioExecutor)
        let logger = Logger(label: "paperboy-bench.fcm")
        let directory = try SimulatorProcess.makeDirectory()
        let accountFile = directory.appendingPathComponent("throwaway-service-account.json")
        let simulator = try SimulatorProcess.start(
            paperboy: try paperboyBinary(options.paperboy),
            subcommand: "fcm-sim",
            arguments: [
                "--port", "0", "--no-record", "--write-service-account", accountFile.path, "--project-id", projectID,
                "--max-concurrent-streams", String(streamsPerConnection),
            ],
            directory: directory
        )
        defer { simulator.stop() }
        let control = FCMSimulatorControl(url: simulator.url)
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(contentsOf: accountFile.path)
        } catch {
            throw BenchError("fcm-sim's service account \(accountFile.path): \(error)")
        }

        var configuration = FCMClient.Configuration()
        configuration.endpoint = try PushEndpoint(url: simulator.url)
        configuration.connections = options.connections
        configuration.initialStreamLimit = streamsPerConnection
        configuration.maximumStreamsPerConnection = streamsPerConnection
        configuration.quotaPerMinute = quotaPerMinute
        let client = try FCMClient(configuration: configuration, account: account, logger: logger)
        let message = try FCMMessage.data(Self.broadcastData, for: .android(priority: .normal, ttl: .seconds(3600), collapseKey: "daily-paper"))
        let subject = FCMBenchSubject(client: client, message: message)
        let concurrency = options.concurrency ?? options.connections * streamsPerConnection
        let batch = options.batch ?? streamsPerConnection
        let bench = PushBenchRun(command: "fcm", options: options, concurrency: concurrency, batch: batch, simulator: simulator)
        // fcm-sim names every account it makes for a project with the same client_email (and trusts only the
        // latest key for it), so all three senders use the one account it wrote, and each side's fetches are the
        // growth of the count while it ran: h2load's token is fetched before Paperboy's first send.
        let h2loadToken = try await FCMAccessTokens(account: account).current()
        let h2loadRequest = H2loadRequest(
            url: simulator.url + "/v1/projects/\(projectID)/messages:send",
            headers: [("authorization", "Bearer " + h2loadToken), ("content-type", "application/json; charset=UTF-8")],
            body: message.body(token: fcmBenchToken(0, salt: 0xB2))
        )
        let fetchesBefore = try await control.stats().tokenFetchesOfProject
        var report: BenchReport
        do {
            report = try await bench.run(
                subject: subject,
                report: BenchReport(
                    provider: "fcm",
                    kind: "Android data messages (\(message.body(token: fcmBenchToken(0, salt: 0)).count)-byte bodies)",
                    endpoint: simulator.url,
                    notifications: options.n,
                    connections: options.connections,
                    concurrency: concurrency,
                    batch: batch,
                    simulatorStartedByBench: true
                )
            ) { h2loadRequest }
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
        var stats = try await control.stats()
        report.tokenFetches = stats.tokenFetchesOfProject - fetchesBefore

        if let firebaseAdminPython {
            let fetchesBefore = stats.tokenFetchesOfProject
            report.library = try FirebaseAdminRun.run(
                python: firebaseAdminPython,
                script: firebaseAdminScript,
                endpoint: simulator.url,
                accountFile: accountFile.path,
                count: firebaseAdminN
            )
            stats = try await control.stats()
            report.library?.tokenFetches = stats.tokenFetchesOfProject - fetchesBefore
        }
        report.notes.append(
            "fcm-sim over the run: \(stats.accepted.formatted()) accepted, \(stats.rejected.values.reduce(0, +)) rejected, "
                + "\(stats.goAwaysSent) GOAWAYs, \(stats.streamLimitViolations) stream-limit violations, peak \(stats.peakConcurrentStreams) streams on a connection"
        )
        try printPushReport(report, json: options.json)
        guard stats.rejected.isEmpty else {
            throw BenchError("fcm-sim rejected sends during the run: \(stats.rejected); no numbers are valid")
        }
    }

    /// A broadcast's data message (EditionPush.fcmData's keys), the same as scripts/bench-firebase-admin.py sends.
    static let broadcastData = [
        "edition": "2026-11-24-morning",
        "manifest": "https://cdn.example.com/e/2026-11-24-morning.json",
        "tier": "full",
        "deadline": "2026-11-24T06:30:00Z",
        "fetch": #"["https://cdn.example.com/e/2026-11-24-morning/front.json","https://cdn.example.com/e/2026-11-24-morning/top.json"]"#,
    ]
}

/// Paperboy's FCM client sending the same data message to distinct registration tokens.
struct FCMBenchSubject: PushBenchSubject {
    let client: FCMClient
    let message: FCMMessage

    func send(_ indices: Range<Int>, salt: UInt64) async -> [PushSendResult] {
        let deliveries = indices.map { FCMDelivery(message, to: fcmBenchToken($0, salt: salt)) }
        return await client.send(deliveries).map {
            PushSendResult(accepted: $0.outcome.isAccepted, latency: $0.latency, failure: $0.outcome.isAccepted ? nil : "\($0.outcome)")
        }
    }
}

/// A distinct FCM-shaped registration token per index, 163 characters as real ones: a 22-character
/// instance id (`b`, the salt, the index), `:APA91b`, then filler. scripts/bench-firebase-admin.py makes the same.
func fcmBenchToken(_ index: Int, salt: UInt64) -> String {
    String(unsafeUninitializedCapacity: 163) { buffer in
        buffer[0] = UInt8(ascii: "b")
        writeHex(salt, into: buffer, 1..<5)
        writeHex(UInt64(truncatingIfNeeded: index), into: buffer, 5..<22)
        for (offset, byte) in fcmTokenTail.enumerated() { buffer[22 + offset] = byte }
        return 163
    }
}

/// `:APA91b` and 134 characters of filler, as a token's part after its instance id.
private let fcmTokenTail: [UInt8] = Array(":APA91b".utf8) + Array(String(repeating: "Fz7_kQ-2", count: 17).utf8.prefix(134))

/// fcm-sim's control endpoints (HTTP/1.1 on the same port).
struct FCMSimulatorControl {
    let url: String

    /// The counters `GET /control/stats` answers (the fields the benchmark reads).
    struct Stats: Decodable {
        var accepted: Int
        var rejected: [String: Int]
        var tokenFetches: [String: Int]
        var goAwaysSent: Int
        var streamLimitViolations: Int
        var peakConcurrentStreams: Int

        /// Tokens issued to any account (the simulator's accounts of one project share their client_email).
        var tokenFetchesOfProject: Int { tokenFetches.values.reduce(0, +) }
    }

    func stats() async throws -> Stats {
        let body = try await request("/control/stats", method: .GET, body: nil)
        do {
            return try JSONDecoder().decode(Stats.self, from: body)
        } catch {
            throw BenchError("fcm-sim's /control/stats: \(error)")
        }
    }

    private func request(_ path: String, method: HTTPMethod, body: String?) async throws -> Data {
        var request = HTTPClientRequest(url: url + path)
        request.method = method
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let data = Data(buffer: try await response.body.collect(upTo: 16 * 1024 * 1024))
        guard response.status == .ok else {
            throw BenchError("fcm-sim's \(path) answered \(response.status.code): \(String(decoding: data, as: UTF8.self))")
        }
        return data
    }
}

/// scripts/bench-firebase-admin.py as a child process, its JSON line read back.
enum FirebaseAdminRun {
    static func run(python: String, script: String, endpoint: String, accountFile: String, count: Int) throws -> LibrarySide {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, "--endpoint", endpoint, "--service-account", accountFile, "-n", String(count), "--json"]
        let output = Pipe()
        process.standardOutput = output
        progress("paperboy-bench fcm: firebase-admin sending \(count.formatted()) messages…")
        do {
            try process.run()
        } catch {
            throw BenchError("--firebase-admin: cannot run \(python): \(error)")
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("--firebase-admin: \(script) failed (exit \(process.terminationStatus)); its reasons are above")
        }
        do {
            let side = try JSONDecoder().decode(LibrarySide.self, from: data)
            guard side.failed == 0 else { throw BenchError("firebase-admin: \(side.failed) of \(side.notifications) not accepted") }
            return side
        } catch let error as BenchError {
            throw error
        } catch {
            throw BenchError("--firebase-admin: cannot read \(script)'s JSON (\(error)): \(String(decoding: data, as: UTF8.self))")
        }
    }
}
