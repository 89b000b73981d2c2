import ArgumentParser
import FCMSimulator
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

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

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on, for HTTP/2 and HTTP/1.1 (0 picks a free one).")
    var port = 8089

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

    @Option(name: .customLong("max-concurrent-streams"), help: "HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS.")
    var maxConcurrentStreams = 100

    @Option(
        name: .customLong("stream-limit"),
        help: ArgumentHelp("What a client opening more streams gets: goaway (GOAWAY, then close) or refuse (RST_STREAM).", valueName: "action")
    )
    var streamLimit = "goaway"

    @Option(help: ArgumentHelp("Added before each answer, e.g. 5ms, 1s, 250us.", valueName: "duration"))
    var latency = "0"

    @Option(
        name: .customLong("token-outcome"),
        help: ArgumentHelp(
            "Answer tokens starting with PREFIX with an FCM error, e.g. dead-=UNREGISTERED, bad-=INVALID_TOKEN; repeatable.",
            valueName: "prefix=code"
        )
    )
    var tokenOutcomes: [String] = []

    @Option(
        name: .customLong("fail"),
        help: ArgumentHelp(
            "Answer CODE[:RETRY_AFTER] with this probability instead of accepting, e.g. UNAVAILABLE=0.01, QUOTA_EXCEEDED:30=0.001; repeatable.",
            valueName: "code=probability"
        )
    )
    var failures: [String] = []

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

    @Option(help: "Seed of the random failures.")
    var seed: UInt64 = 1

    @Option(help: "Event loop threads (default: one per core).")
    var threads: Int?

    @Flag(name: .customLong("no-record"), help: "Keep no per-token ledger (for long benchmarks).")
    var noRecord = false

    @Flag(help: "Print a rate line every second on standard error even when it is not a terminal.")
    var progress = false

    @Flag(help: "On exit, print the stats as JSON on standard output.")
    var json = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port: \(port) is not a TCP port (0-65535)") }
        guard (writeServiceAccount == nil) == (projectID == nil) else {
            throw ValidationError(
                writeServiceAccount == nil ? "--project-id needs --write-service-account" : "--write-service-account needs --project-id"
            )
        }
        if let threads, threads < 1 { throw ValidationError("--threads: must be at least 1") }
        _ = try simulatorConfiguration()
    }

    func run() async throws {
        LoggingSystem.bootstrapPaperboy()
        let logger = Logger(label: "paperboy.fcm-sim")
        let simulator = try FCMSimulator(configuration: try simulatorConfiguration())
        let showProgress = progress || isatty(STDERR_FILENO) == 1
        let service = FCMSimulatorService(
            simulator: simulator,
            writeServiceAccount: writeServiceAccount.map { ($0, projectID ?? "") },
            showProgress: showProgress
        )
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
        guard maxConcurrentStreams > 0 else { throw ValidationError("--max-concurrent-streams: must be at least 1") }
        faults.maxConcurrentStreams = maxConcurrentStreams
        guard let action = FCMSimulator.StreamLimitAction(rawValue: streamLimit) else {
            throw ValidationError("--stream-limit: '\(streamLimit)' is not goaway or refuse")
        }
        faults.streamLimitAction = action
        guard let latency = APNsSimCommand.duration(latency) else {
            throw ValidationError("--latency: '\(latency)' is not a duration such as 5ms, 1s or 250us")
        }
        faults.latency = latency
        for tokenOutcome in tokenOutcomes {
            let parts = tokenOutcome.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, let outcome = FCMSimulator.Outcome(parsing: parts[1]) else {
                throw ValidationError("--token-outcome: '\(tokenOutcome)' is not PREFIX=CODE, e.g. dead-=UNREGISTERED or bad-=INVALID_TOKEN")
            }
            faults.outcomesByTokenPrefix.append((String(parts[0]), outcome))
        }
        for failure in failures {
            let parts = failure.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let outcome = FCMSimulator.Outcome(parsing: parts[0]), let probability = Double(parts[1]),
                (0...1).contains(probability)
            else { throw ValidationError("--fail: '\(failure)' is not CODE[:RETRY_AFTER]=PROBABILITY, e.g. UNAVAILABLE=0.01") }
            faults.failureRates.append((outcome, probability))
        }
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
        faults.seed = seed
        guard let lifetime = APNsSimCommand.duration(tokenLifetime), lifetime >= .seconds(1) else {
            throw ValidationError("--token-lifetime: '\(tokenLifetime)' is not a duration of at least 1s, such as 3600s or 5m")
        }
        var configuration = FCMSimulator.Configuration(serviceAccounts: accounts, faults: faults, host: host, port: port)
        configuration.tokenLifetime = lifetime
        configuration.iosTokenPrefixes = iosTokenPrefixes
        configuration.recordsLedger = !noRecord
        if let threads { configuration.eventLoopThreads = threads }
        return configuration
    }

    static func table(_ stats: FCMSimulator.Stats) -> String {
        var rows: [(String, String)] = [
            ("send requests", "\(stats.requests)"),
            ("accepted", "\(stats.accepted)"),
            ("validated only", "\(stats.validatedOnly)"),
        ]
        for (code, count) in stats.rejected.sorted(by: { $0.key < $1.key }) {
            rows.append(("rejected \(code)", "\(count)"))
        }
        for (account, count) in stats.tokenFetches.sorted(by: { $0.key < $1.key }) {
            rows.append(("token fetches \(account)", "\(count)"))
        }
        for (error, count) in stats.tokenRejections.sorted(by: { $0.key < $1.key }) {
            rows.append(("token requests refused \(error)", "\(count)"))
        }
        rows += [
            ("HTTP/2 connections", "\(stats.http2Connections)"),
            ("HTTP/1.1 connections", "\(stats.http1Connections)"),
            ("GOAWAYs sent", "\(stats.goAwaysSent)"),
            ("stream limit violations", "\(stats.streamLimitViolations)"),
            ("peak concurrent streams", "\(stats.peakConcurrentStreams)"),
            ("peak accepts/s", "\(stats.acceptsPerSecond.max() ?? 0)"),
            ("seconds until the last accept", "\(stats.acceptsPerSecond.count)"),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.1 }.joined(separator: "\n") + "\n"
    }
}

/// The simulator as a `Service`: starts it, writes the service account once the port is known, prints the
/// listening lines, optionally a rate line each second, and shuts it down on SIGINT or SIGTERM.
private struct FCMSimulatorService: Service {
    let simulator: FCMSimulator
    let writeServiceAccount: (file: String, projectID: String)?
    let showProgress: Bool

    func run() async throws {
        try await simulator.start()
        if let (file, projectID) = writeServiceAccount {
            let account = try simulator.makeServiceAccount(projectID: projectID)
            try account.write(to: file)
            FileHandle.standardOutput.write(Data("fcm-sim wrote \(account) to \(file)\n".utf8))
        }
        FileHandle.standardOutput.write(
            Data("fcm-sim listening on \(simulator.url)\nfcm-sim token endpoint \(simulator.tokenURL)\n".utf8)
        )
        let simulator = self.simulator
        await waitForShutdown(stats: { simulator.stats() }, progress: showProgress ? Self.progressLine : nil)
        try await simulator.shutdown()
    }

    /// Accepted and rejected so far and in the last second, and what else shows the load.
    private static func progressLine(_ now: FCMSimulator.Stats, _ last: FCMSimulator.Stats) -> String {
        let rejected = now.rejected.values.reduce(0, +)
        let lastRejected = last.rejected.values.reduce(0, +)
        return "accepted \(now.accepted) (+\(now.accepted - last.accepted)/s)  rejected \(rejected) (+\(rejected - lastRejected)/s)"
            + "  token fetches \(now.tokenFetches.values.reduce(0, +))  peak streams \(now.peakConcurrentStreams)"
    }
}
