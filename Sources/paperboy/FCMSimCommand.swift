import ArgumentParser
import FCMSimulator
import Foundation
import Logging

struct FCMSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm-sim",
        abstract: "Run an FCM HTTP v1-compatible server for tests, demos and benchmarks until SIGINT or SIGTERM.",
        discussion: """
            One port speaks HTTP/2 with prior knowledge (h2c) and HTTP/1.1. It serves Google's OAuth2 token endpoint \
            (POST /token) for the service accounts it trusts (--service-account, --write-service-account) and FCM's \
            send (POST /v1/projects/P/messages:send), checked as FCM does, with faults on demand and /control/ \
            endpoints (docs/fcm-simulator.md). On start it prints `fcm-sim listening on http://HOST:PORT` and \
            `fcm-sim token endpoint http://HOST:PORT/token`; on SIGINT or SIGTERM it prints what it saw and exits 0.
            """
    )

    @OptionGroup var options: SimulatorOptions<FCMSimCommand>

    @Option(
        name: .customLong("service-account"),
        help: ArgumentHelp("A service-account JSON file whose assertions the token endpoint accepts; repeatable.", valueName: "file")
    )
    var serviceAccounts: [String] = []

    @Option(
        name: .customLong("write-service-account"),
        help: ArgumentHelp(
            "Write a fresh throwaway service account (RSA-2048, token_uri = this simulator) to this file once listening, and trust it.",
            valueName: "file"
        )
    )
    var writeServiceAccount: String?

    @Option(name: .customLong("project-id"), help: ArgumentHelp("The project of --write-service-account.", valueName: "id"))
    var projectID: String?

    @Option(name: .customLong("token-lifetime"), help: ArgumentHelp("How long access tokens live, e.g. 3600s or 90s.", valueName: "duration"))
    var tokenLifetime = "3600s"

    @Option(
        name: .customLong("stream-limit"),
        help: ArgumentHelp("What a client opening more streams gets: goaway (GOAWAY, then close) or refuse (RST_STREAM).", valueName: "action")
    )
    var streamLimit = "goaway"

    @Option(
        name: .customLong("fail-first"),
        help: ArgumentHelp("Answer the first N sends with CODE[:RETRY_AFTER], e.g. INTERNAL=3.", valueName: "code=n")
    )
    var failFirst: String?

    @Option(help: ArgumentHelp("Messages per sliding minute per project; over it 429 QUOTA_EXCEEDED.", valueName: "n"))
    var quota: Int?

    @Option(
        name: .customLong("ios-token-prefix"),
        help: ArgumentHelp("Tokens starting with this are iOS devices (data-only messages need apns-priority 5); repeatable.", valueName: "prefix")
    )
    var iosTokenPrefixes: [String] = []

    func validate() throws {
        guard (writeServiceAccount == nil) == (projectID == nil) else {
            throw ValidationError(
                writeServiceAccount == nil ? "--project-id needs --write-service-account" : "--write-service-account needs --project-id"
            )
        }
        _ = try simulatorConfiguration()
    }

    func run() async throws {
        LoggingSystem.bootstrapPaperboy()
        let simulator = try FCMSimulator(configuration: try simulatorConfiguration())
        let writeServiceAccount = self.writeServiceAccount.map { ($0, projectID ?? "") }
        let service = SimulatorService(
            start: {
                try await simulator.start()
                var lines: [String] = []
                if let (file, projectID) = writeServiceAccount {
                    let account = try simulator.makeServiceAccount(projectID: projectID)
                    try account.write(to: file)
                    lines.append("fcm-sim wrote \(account) to \(file)")
                }
                return lines + ["fcm-sim listening on \(simulator.url)", "fcm-sim token endpoint \(simulator.tokenURL)"]
            },
            stats: { simulator.stats() },
            stop: { try await simulator.shutdown() },
            showProgress: options.progress || isatty(STDERR_FILENO) == 1
        )
        try await service.runUntilSignalled(logger: Logger(label: "paperboy.fcm-sim"), json: options.json)
    }

    /// The simulator's configuration from the flags; a ValidationError naming the flag when one is wrong.
    private func simulatorConfiguration() throws -> FCMSimulator.Configuration {
        var accounts: [FCMSimulator.ServiceAccount] = []
        for file in serviceAccounts {
            do {
                accounts.append(try FCMSimulator.ServiceAccount.load(file: file))
            } catch {
                throw ValidationError("--service-account: \(error)")
            }
        }
        var faults = FCMSimulator.Faults()
        faults.maxConcurrentStreams = options.maxConcurrentStreams
        guard let action = FCMSimulator.StreamLimitAction(rawValue: streamLimit) else {
            throw ValidationError("--stream-limit: '\(streamLimit)' is not goaway or refuse")
        }
        faults.streamLimitAction = action
        faults.latency = try options.latencyDuration()
        faults.outcomesByTokenPrefix = try options.outcomesByTokenPrefix(isPrefix: { _ in true }, parse: { FCMSimulator.Outcome(parsing: $0) })
        faults.failureRates = try options.failureRates(parse: { FCMSimulator.Outcome(parsing: $0) })
        if let failFirst {
            let parts = failFirst.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let outcome = FCMSimulator.Outcome(parsing: parts[0]), let count = Int(parts[1]), count > 0 else {
                throw ValidationError("--fail-first: '\(failFirst)' is not CODE[:RETRY_AFTER]=N, e.g. INTERNAL=3")
            }
            faults.failNext = (outcome, count)
        }
        if let quota {
            guard quota > 0 else { throw ValidationError("--quota: must be at least 1 message per minute") }
            faults.quotaPerMinute = quota
        }
        faults.seed = options.seed
        guard let lifetime = SimulatorOptions<Self>.duration(tokenLifetime), lifetime >= .seconds(1) else {
            throw ValidationError("--token-lifetime: '\(tokenLifetime)' is not a duration of at least 1s, such as 3600s or 5m")
        }
        var configuration = FCMSimulator.Configuration(serviceAccounts: accounts, faults: faults, host: options.host, port: options.port)
        configuration.tokenLifetime = lifetime
        configuration.iosTokenPrefixes = iosTokenPrefixes
        configuration.recordsLedger = !options.noRecord
        if let threads = options.threads { configuration.eventLoopThreads = threads }
        return configuration
    }
}

extension FCMSimCommand: SimulatorFlavor {
    static let defaultPort = 8089
    static let defaultMaxConcurrentStreams = 100
    static let maxConcurrentStreamsHelp = "HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS."
    static let outcomeSyntax = "CODE[:RETRY_AFTER]"
    static let failExample = "UNAVAILABLE=0.01, QUOTA_EXCEEDED:30=0.001"
    static let prefixSyntax = "PREFIX"
    static let tokenOutcomeExample = "dead-=UNREGISTERED, bad-=INVALID_TOKEN"
}

extension FCMSimulator.Stats: SimulatorStats {
    var leadingRows: [(label: String, value: Int)] { [("send requests", requests), ("accepted", accepted), ("validated only", validatedOnly)] }

    var detailRows: [(label: String, value: Int)] {
        tokenFetches.sorted(by: { $0.key < $1.key }).map { ("token fetches \($0.key)", $0.value) }
            + tokenRejections.sorted(by: { $0.key < $1.key }).map { ("token requests refused \($0.key)", $0.value) }
            + [("HTTP/2 connections", http2Connections), ("HTTP/1.1 connections", http1Connections)]
    }

    var progressFigure: (label: String, value: Int) { ("token fetches", tokenFetches.values.reduce(0, +)) }
}
