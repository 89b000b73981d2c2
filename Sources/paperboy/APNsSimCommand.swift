import APNs
import APNsSimulator
import ArgumentParser
import Crypto
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

struct APNsSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sim",
        abstract: "Run an APNs-compatible HTTP/2 server for tests, demos and benchmarks until SIGINT or SIGTERM.",
        discussion: """
            It checks every request as APNs does (path, token, provider token signature and age, topic, push type, \
            priority, payload), advertises one stream until a valid provider token, then --max-concurrent-streams, \
            and injects faults on demand. On start it prints one line, `apns-sim listening on http://HOST:PORT`; \
            on SIGINT or SIGTERM it prints what it saw and exits 0.
            """
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 2197

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain: serve TLS (with --tls-key).", valueName: "file"))
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    @Option(
        name: .customLong("key-file"),
        help: ArgumentHelp(
            "A provider-token key: the APNs .p8 private key or its PEM public key. Repeat with one --key-id each.",
            valueName: "file"
        )
    )
    var keyFiles: [String] = []

    @Option(name: .customLong("key-id"), help: ArgumentHelp("The key id (JWT kid) of each --key-file, in order.", valueName: "id"))
    var keyIDs: [String] = []

    @Option(name: .customLong("team-id"), help: ArgumentHelp("Accept only tokens of this team (JWT iss); default any.", valueName: "id"))
    var teamID: String?

    @Option(name: .customLong("topic"), help: ArgumentHelp("An accepted apns-topic (bundle id); repeatable; default any.", valueName: "bundle"))
    var topics: [String] = []

    @Option(name: .customLong("max-concurrent-streams"), help: "Streams per connection after a valid provider token.")
    var maxConcurrentStreams = 1000

    @Option(name: .customLong("initial-max-concurrent-streams"), help: "Streams per connection until a valid provider token.")
    var initialMaxConcurrentStreams = 1

    @Option(help: ArgumentHelp("Added before each response, e.g. 5ms, 1s, 250us.", valueName: "duration"))
    var latency = "0"

    @Option(
        name: .customLong("fail"),
        help: ArgumentHelp(
            "Answer STATUS:Reason with this probability instead of accepting, e.g. 429:TooManyRequests=0.01; repeatable.",
            valueName: "failure"
        )
    )
    var failures: [String] = []

    @Option(
        name: .customLong("token-outcome"),
        help: ArgumentHelp(
            "Answer tokens starting with this hex prefix with STATUS:Reason, e.g. dead=410:Unregistered; repeatable.",
            valueName: "outcome"
        )
    )
    var tokenOutcomes: [String] = []

    @Option(name: .customLong("goaway-every"), help: ArgumentHelp("Send GOAWAY after this many streams on each connection.", valueName: "n"))
    var goAwayEvery: Int?

    @Option(name: .customLong("drop-every"), help: ArgumentHelp("Drop each connection abruptly after this many requests.", valueName: "n"))
    var dropEvery: Int?

    @Option(help: "Seed of the random failures.")
    var seed: UInt64 = 1

    @Option(help: "Event loop threads (default: one per core).")
    var threads: Int?

    @Flag(name: .customLong("no-record"), help: "Do not keep per-token accept counts (for long benchmarks).")
    var noRecord = false

    @Flag(help: "Print a rate line every second on standard error even when it is not a terminal.")
    var progress = false

    @Flag(help: "On exit, print the stats as JSON on standard output.")
    var json = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port: \(port) is not a TCP port (0-65535)") }
        guard (tlsCertificate == nil) == (tlsKey == nil) else {
            throw ValidationError(tlsCertificate == nil ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key")
        }
        guard !keyFiles.isEmpty else {
            throw ValidationError(
                "--key-file: the simulator checks provider token signatures, so give it the key (.p8 or public PEM) and its --key-id"
            )
        }
        guard keyFiles.count == keyIDs.count else {
            throw ValidationError("--key-id: give one --key-id per --key-file (\(keyFiles.count) key files, \(keyIDs.count) key ids)")
        }
        guard maxConcurrentStreams > 0 else { throw ValidationError("--max-concurrent-streams: must be at least 1") }
        guard initialMaxConcurrentStreams > 0 else { throw ValidationError("--initial-max-concurrent-streams: must be at least 1") }
        if let goAwayEvery, goAwayEvery < 1 { throw ValidationError("--goaway-every: must be at least 1") }
        if let dropEvery, dropEvery < 1 { throw ValidationError("--drop-every: must be at least 1") }
        if let threads, threads < 1 { throw ValidationError("--threads: must be at least 1") }
        _ = try simulatorConfiguration()
    }

    func run() async throws {
        LoggingSystem.bootstrapPaperboy()
        let logger = Logger(label: "paperboy.apns-sim")
        let simulator = APNsSimulator(configuration: try simulatorConfiguration())
        let showProgress = progress || isatty(STDERR_FILENO) == 1
        let service = APNsSimulatorService(simulator: simulator, showProgress: showProgress)
        let group = ServiceGroup(
            configuration: .init(services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await group.run()

        let stats = simulator.stats()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            encoder.dateEncodingStrategy = .iso8601
            FileHandle.standardOutput.write(try encoder.encode(stats) + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(Self.table(stats).utf8))
        }
    }

    /// The simulator's configuration from the flags; a ValidationError naming the flag when one is wrong.
    private func simulatorConfiguration() throws -> APNsSimulator.Configuration {
        var keys: [String: P256.Signing.PublicKey] = [:]
        for (file, keyID) in zip(keyFiles, keyIDs) {
            keys[keyID] = try Self.publicKey(file: file)
        }
        var faults = APNsSimulator.Faults()
        faults.initialMaxConcurrentStreams = initialMaxConcurrentStreams
        faults.maxConcurrentStreams = maxConcurrentStreams
        faults.goAwayAfterStreams = goAwayEvery
        faults.dropConnectionAfterStreams = dropEvery
        faults.seed = seed
        guard let latency = Self.duration(latency) else {
            throw ValidationError("--latency: '\(latency)' is not a duration such as 5ms, 1s or 250us")
        }
        faults.latency = latency
        for failure in failures {
            let parts = failure.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let outcome = Self.outcome(parts[0]), let probability = Double(parts[1]), (0...1).contains(probability) else {
                throw ValidationError("--fail: '\(failure)' is not STATUS:Reason=PROBABILITY, e.g. 429:TooManyRequests=0.01")
            }
            faults.failureRates.append((outcome, probability))
        }
        for tokenOutcome in tokenOutcomes {
            let parts = tokenOutcome.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, parts[0].allSatisfy(\.isHexDigit), let outcome = Self.outcome(parts[1]) else {
                throw ValidationError("--token-outcome: '\(tokenOutcome)' is not HEXPREFIX=STATUS:Reason, e.g. dead=410:Unregistered")
            }
            faults.outcomesByTokenPrefix.append((String(parts[0]).lowercased(), outcome))
        }
        var configuration = APNsSimulator.Configuration(
            validation: .init(teamID: teamID, keys: keys, topics: topics.isEmpty ? nil : Set(topics)),
            faults: faults,
            host: host,
            port: port
        )
        configuration.recordsAccepted = !noRecord
        if let threads { configuration.eventLoopThreads = threads }
        if let tlsCertificate, let tlsKey {
            do {
                try configuration.useTLS(certificateChainFile: tlsCertificate, privateKeyFile: tlsKey)
            } catch {
                throw ValidationError("--tls-cert/--tls-key: cannot load \(tlsCertificate) and \(tlsKey) as PEM: \(error)")
            }
        }
        return configuration
    }

    /// The public key of a PEM file holding either a P-256 private key (an APNs .p8) or a public key.
    private static func publicKey(file: String) throws -> P256.Signing.PublicKey {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ValidationError("--key-file: \(file) does not exist or cannot be read")
        }
        let pem = String(decoding: data, as: UTF8.self)
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) { return key.publicKey }
        if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) { return key }
        throw ValidationError("--key-file: \(file) is not a PEM P-256 private key (.p8) or public key")
    }

    /// `410:Unregistered` as an outcome.
    private static func outcome(_ text: Substring) -> APNsSimulator.Outcome? {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let status = Int(parts[0]), (400...599).contains(status), !parts[1].isEmpty else { return nil }
        return APNsSimulator.Outcome(status: status, reason: APNsReason(rawValue: String(parts[1])))
    }

    /// `5ms`, `1s`, `250us`, `100ns` or `0`.
    static func duration(_ text: String) -> Duration? {
        if text == "0" { return .zero }
        for (suffix, scale) in [("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)] where text.hasSuffix(suffix) {
            guard let value = Double(text.dropLast(suffix.count)), value >= 0 else { return nil }
            return .nanoseconds(Int64((value * scale * 1e9).rounded()))
        }
        return nil
    }

    static func table(_ stats: APNsSimulator.Stats) -> String {
        let seconds = stats.acceptsPerSecond.count
        var rows: [(String, String)] = [
            ("accepted", "\(stats.accepted)")
        ]
        for (reason, count) in stats.rejected.sorted(by: { $0.key < $1.key }) {
            rows.append(("rejected \(reason)", "\(count)"))
        }
        rows += [
            ("connections opened", "\(stats.connectionsOpened)"),
            ("GOAWAYs sent", "\(stats.goAwaysSent)"),
            ("connections dropped", "\(stats.connectionsDropped)"),
            ("stream limit violations", "\(stats.streamLimitViolations)"),
            ("peak concurrent streams", "\(stats.peakConcurrentStreams)"),
            ("peak accepts/s", "\(stats.acceptsPerSecond.max() ?? 0)"),
            ("seconds until the last accept", "\(seconds)"),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.1 }.joined(separator: "\n") + "\n"
    }
}

/// The simulator as a `Service`: starts it, prints the listening line, optionally a rate line each second,
/// and shuts it down on graceful shutdown (SIGINT or SIGTERM).
private struct APNsSimulatorService: Service {
    let simulator: APNsSimulator
    let showProgress: Bool

    func run() async throws {
        try await simulator.start()
        FileHandle.standardOutput.write(Data("apns-sim listening on \(simulator.url)\n".utf8))
        let simulator = self.simulator
        await waitForShutdown(stats: { simulator.stats() }, progress: showProgress ? Self.progressLine : nil)
        try await simulator.shutdown()
    }

    /// Accepted and rejected so far and in the last second, and what else shows the load.
    private static func progressLine(_ now: APNsSimulator.Stats, _ last: APNsSimulator.Stats) -> String {
        let rejected = now.rejected.values.reduce(0, +)
        let lastRejected = last.rejected.values.reduce(0, +)
        return "accepted \(now.accepted) (+\(now.accepted - last.accepted)/s)  rejected \(rejected) (+\(rejected - lastRejected)/s)"
            + "  connections \(now.connectionsOpened)  peak streams \(now.peakConcurrentStreams)"
    }
}
