import APNs
import ArgumentParser
import Crypto
import Foundation
import Logging
import NIOSSL

/// `paperboy-bench apns`: the APNs client's throughput, latency, CPU and memory against an APNs-compatible
/// endpoint, next to h2load sending the same request to the same endpoint in the same run.
///
/// A benchmark, not a test: it prints numbers; it fails only when a notification is not accepted.
struct APNsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Measure the APNs client (notifications/s, latency, CPU, memory) against an endpoint, beside h2load.",
        discussion: """
            Without --endpoint it starts `paperboy apns-sim` (the `paperboy` binary beside this one, or --paperboy) as
            a separate process on a free loopback port with a throwaway key. Each round sends -n background notifications to distinct tokens with Paperboy's client,
            then the same request -n times with h2load (Debian package nghttp2-client) when it is installed. Any notification
            not accepted, by either, ends the run with an error.
            Results go to BENCHMARKS.md; see the README for the commands used there.
            """
    )

    @OptionGroup var options: PushBenchOptions

    @Option(help: ArgumentHelp("An APNs-compatible endpoint (https://host:port or http://host:port). Default: start a simulator.", valueName: "url"))
    var endpoint: String?

    @Option(name: .customLong("key-file"), help: ArgumentHelp("The .p8 key (needed with --endpoint).", valueName: "file"))
    var keyFile: String?

    @Option(name: .customLong("key-id"), help: "The key's id.")
    var keyID = "BENCHKEY01"

    @Option(name: .customLong("team-id"), help: "The team id.")
    var teamID = "BENCHTEAM1"

    @Option(help: "The apns-topic.")
    var topic = "com.example.paperboy"

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Trust this PEM certificate (an https:// simulator).", valueName: "file"))
    var caFile: String?

    func validate() throws {
        if endpoint != nil, keyFile == nil { throw ValidationError("--key-file: needed with --endpoint") }
    }

    func run() async throws {
        LoggingSystem.bootstrapBench()
        installNIOExecutor(options.nioExecutor)
        let logger = Logger(label: "paperboy-bench.apns")
        var simulator: SimulatorProcess?
        let endpointText: String
        let key: APNsSigningKey
        if let endpoint {
            endpointText = endpoint
            do {
                key = try APNsSigningKey(pemFile: keyFile!, keyID: keyID, teamID: teamID)
            } catch {
                throw BenchError("--key-file: \(error)")
            }
        } else {
            let privateKey = P256.Signing.PrivateKey()
            key = try APNsSigningKey(pem: privateKey.pemRepresentation, keyID: keyID, teamID: teamID)
            let directory = try SimulatorProcess.makeDirectory()
            let keyFile = directory.appendingPathComponent("AuthKey_\(keyID).p8")
            try Data(privateKey.pemRepresentation.utf8).write(to: keyFile)
            let started = try SimulatorProcess.start(
                paperboy: try paperboyBinary(options.paperboy),
                subcommand: "apns-sim",
                arguments: ["--port", "0", "--key-file", keyFile.path, "--key-id", keyID, "--team-id", teamID, "--no-record"],
                directory: directory
            )
            simulator = started
            endpointText = started.url
        }
        defer { simulator?.stop() }

        var configuration = APNsClient.Configuration(endpoint: try APNsEndpoint(endpointText))
        configuration.connections = options.connections
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            configuration.tls = tls
        }
        let client = try APNsClient(configuration: configuration, key: key, logger: logger)
        let notification = try APNsNotification.background([
            "edition": "2026-11-23-morning", "manifest": "https://cdn.example.com/e/2026-11-23-morning.json",
        ])
        let subject = APNsBenchSubject(client: client, notification: notification, topic: topic)
        let concurrency = options.concurrency ?? 2000
        let batch = options.batch ?? 250
        let bench = PushBenchRun(command: "apns", options: options, concurrency: concurrency, batch: batch, simulator: simulator)
        let report: BenchReport
        do {
            report = try await bench.run(
                subject: subject,
                report: BenchReport(
                    provider: "apns",
                    kind: "background notifications",
                    endpoint: endpointText,
                    notifications: options.n,
                    connections: options.connections,
                    concurrency: concurrency,
                    batch: batch,
                    simulatorStartedByBench: simulator != nil
                )
            ) {
                let providerToken = try key.providerToken(issuedAt: Date())
                return H2loadRequest(
                    url: endpointText + "/3/device/" + String(repeating: "ab", count: 32),
                    headers: [
                        ("authorization", "bearer " + providerToken), ("apns-topic", topic), ("apns-push-type", "background"),
                        ("apns-priority", "5"), ("apns-expiration", "0"),
                    ],
                    body: notification.payload
                )
            }
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
        try printPushReport(report, json: options.json)
    }
}

/// Paperboy's APNs client sending the same background notification to distinct device tokens.
struct APNsBenchSubject: PushBenchSubject {
    let client: APNsClient
    let notification: APNsNotification
    let topic: String

    func send(_ indices: Range<Int>, salt: UInt64) async -> [PushSendResult] {
        let deliveries = indices.map { APNsDelivery(notification, to: apnsBenchToken($0, salt: salt), topic: topic) }
        return await client.send(deliveries).map {
            PushSendResult(accepted: $0.outcome.isAccepted, latency: $0.latency, failure: $0.outcome.isAccepted ? nil : "\($0.outcome)")
        }
    }
}

/// A distinct 64-hex-character device token per index: the salt, zeros, the index.
func apnsBenchToken(_ index: Int, salt: UInt64) -> String {
    String(unsafeUninitializedCapacity: 64) { buffer in
        writeHex(salt, into: buffer, 0..<16)
        for position in 16..<48 { buffer[position] = UInt8(ascii: "0") }
        writeHex(UInt64(truncatingIfNeeded: index), into: buffer, 48..<64)
        return 64
    }
}
