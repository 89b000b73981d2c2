import ArgumentParser

/// What tells `apns-sim` and `fcm-sim` apart in their shared flags (``SimulatorOptions``): defaults, and how their
/// outcomes are written.
protocol SimulatorFlavor {
    static var defaultPort: Int { get }
    static var defaultMaxConcurrentStreams: Int { get }
    static var maxConcurrentStreamsHelp: String { get }
    /// How an outcome is written, e.g. `STATUS:Reason`.
    static var outcomeSyntax: String { get }
    /// A `--fail` value, e.g. `429:TooManyRequests=0.01`.
    static var failExample: String { get }
    /// How a token prefix is written, e.g. `HEXPREFIX`.
    static var prefixSyntax: String { get }
    /// A `--token-outcome` value, e.g. `dead=410:Unregistered`.
    static var tokenOutcomeExample: String { get }
}

/// The flags both simulators take: where to listen, the stream limit, latency and failure faults, the seed, threads
/// and what to record and print.
struct SimulatorOptions<Flavor: SimulatorFlavor>: ParsableArguments {
    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = Flavor.defaultPort

    @Option(name: .customLong("max-concurrent-streams"), help: ArgumentHelp(Flavor.maxConcurrentStreamsHelp))
    var maxConcurrentStreams = Flavor.defaultMaxConcurrentStreams

    @Option(help: ArgumentHelp("Added before each response, e.g. 5ms, 1s, 250us.", valueName: "duration"))
    var latency = "0"

    @Option(
        name: .customLong("fail"),
        help: ArgumentHelp(
            "Answer \(Flavor.outcomeSyntax) with this probability instead of accepting, e.g. \(Flavor.failExample); repeatable.",
            valueName: "failure"
        )
    )
    var failures: [String] = []

    @Option(
        name: .customLong("token-outcome"),
        help: ArgumentHelp(
            "Answer tokens starting with \(Flavor.prefixSyntax) with \(Flavor.outcomeSyntax), e.g. \(Flavor.tokenOutcomeExample); repeatable.",
            valueName: "outcome"
        )
    )
    var tokenOutcomes: [String] = []

    @Option(help: "Seed of the random failures.")
    var seed: UInt64 = 1

    @Option(help: "Event loop threads (default: one per core).")
    var threads: Int?

    @Flag(name: .customLong("no-record"), help: "Keep no per-token records (for long benchmarks).")
    var noRecord = false

    @Flag(help: "Print a rate line every second on standard error even when it is not a terminal.")
    var progress = false

    @Flag(help: "On exit, print the stats as JSON on standard output.")
    var json = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port: \(port) is not a TCP port (0-65535)") }
        guard maxConcurrentStreams > 0 else { throw ValidationError("--max-concurrent-streams: must be at least 1") }
        if let threads, threads < 1 { throw ValidationError("--threads: must be at least 1") }
        _ = try latencyDuration()
    }

    /// `--latency` as a duration.
    func latencyDuration() throws -> Duration {
        guard let latency = Self.duration(latency) else {
            throw ValidationError("--latency: '\(latency)' is not a duration such as 5ms, 1s or 250us")
        }
        return latency
    }

    /// `--fail` values, `OUTCOME=PROBABILITY`, read with `parse`.
    func failureRates<Outcome>(parse: (Substring) -> Outcome?) throws -> [(outcome: Outcome, probability: Double)] {
        try failures.map { failure in
            let parts = failure.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let outcome = parse(parts[0]), let probability = Double(parts[1]), (0...1).contains(probability) else {
                throw ValidationError("--fail: '\(failure)' is not \(Flavor.outcomeSyntax)=PROBABILITY, e.g. \(Flavor.failExample)")
            }
            return (outcome, probability)
        }
    }

    /// `--token-outcome` values, `PREFIX=OUTCOME`, the prefix checked with `isPrefix` and the outcome read with `parse`.
    func outcomesByTokenPrefix<Outcome>(
        isPrefix: (Substring) -> Bool,
        parse: (Substring) -> Outcome?
    ) throws -> [(prefix: String, outcome: Outcome)] {
        try tokenOutcomes.map { text in
            let parts = text.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, isPrefix(parts[0]), let outcome = parse(parts[1]) else {
                throw ValidationError(
                    "--token-outcome: '\(text)' is not \(Flavor.prefixSyntax)=\(Flavor.outcomeSyntax), e.g. \(Flavor.tokenOutcomeExample)"
                )
            }
            return (String(parts[0]), outcome)
        }
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
}
