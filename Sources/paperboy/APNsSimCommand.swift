import APNs
import APNsSimulator
import ArgumentParser
import Crypto
import Foundation
import Logging
import PaperboyCore

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

    @OptionGroup var options: SimulatorOptions<APNsSimCommand>

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

    @Option(name: .customLong("initial-max-concurrent-streams"), help: "Streams per connection until a valid provider token.")
    var initialMaxConcurrentStreams = 1

    @Option(name: .customLong("goaway-every"), help: ArgumentHelp("Send GOAWAY after this many streams on each connection.", valueName: "n"))
    var goAwayEvery: Int?

    @Option(name: .customLong("drop-every"), help: ArgumentHelp("Drop each connection abruptly after this many requests.", valueName: "n"))
    var dropEvery: Int?

    func validate() throws {
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
        guard initialMaxConcurrentStreams > 0 else { throw ValidationError("--initial-max-concurrent-streams: must be at least 1") }
        if let goAwayEvery, goAwayEvery < 1 { throw ValidationError("--goaway-every: must be at least 1") }
        if let dropEvery, dropEvery < 1 { throw ValidationError("--drop-every: must be at least 1") }
        _ = try simulatorConfiguration()
    }

    func run() async throws {
        LoggingSystem.bootstrapPaperboy()
        let simulator = APNsSimulator(configuration: try simulatorConfiguration())
        let service = SimulatorService(
            start: {
                try await simulator.start()
                return ["apns-sim listening on \(simulator.url)"]
            },
            stats: { simulator.stats() },
            stop: { try await simulator.shutdown() },
            showProgress: options.progress || isatty(STDERR_FILENO) == 1
        )
        try await service.runUntilSignalled(logger: Logger(label: "paperboy.apns-sim"), json: options.json)
    }

    /// The simulator's configuration from the flags; a ValidationError naming the flag when one is wrong.
    private func simulatorConfiguration() throws -> APNsSimulator.Configuration {
        var keys: [String: P256.Signing.PublicKey] = [:]
        for (file, keyID) in zip(keyFiles, keyIDs) {
            keys[keyID] = try Self.publicKey(file: file)
        }
        var faults = APNsSimulator.Faults()
        faults.initialMaxConcurrentStreams = initialMaxConcurrentStreams
        faults.maxConcurrentStreams = options.maxConcurrentStreams
        faults.goAwayAfterStreams = goAwayEvery
        faults.dropConnectionAfterStreams = dropEvery
        faults.seed = options.seed
        faults.latency = try options.latencyDuration()
        faults.failureRates = try options.failureRates(parse: Self.outcome)
        faults.outcomesByTokenPrefix = try options.outcomesByTokenPrefix(isPrefix: { $0.allSatisfy(\.isHexDigit) }, parse: Self.outcome)
            .map { ($0.prefix.lowercased(), $0.outcome) }
        var configuration = APNsSimulator.Configuration(
            validation: .init(teamID: teamID, keys: keys, topics: topics.isEmpty ? nil : Set(topics)),
            faults: faults,
            host: options.host,
            port: options.port
        )
        configuration.recordsAccepted = !options.noRecord
        if let threads = options.threads { configuration.eventLoopThreads = threads }
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
}

extension APNsSimCommand: SimulatorFlavor {
    static let defaultPort = 2197
    static let defaultMaxConcurrentStreams = 1000
    static let maxConcurrentStreamsHelp = "Streams per connection after a valid provider token."
    static let outcomeSyntax = "STATUS:Reason"
    static let failExample = "429:TooManyRequests=0.01"
    static let prefixSyntax = "HEXPREFIX"
    static let tokenOutcomeExample = "dead=410:Unregistered"
}

extension APNsSimulator.Stats: SimulatorStats {
    var leadingRows: [(label: String, value: Int)] { [("accepted", accepted)] }
    var detailRows: [(label: String, value: Int)] { [("connections opened", connectionsOpened), ("connections dropped", connectionsDropped)] }
    var progressFigure: (label: String, value: Int) { ("connections", connectionsOpened) }
}
