import ArgumentParser
import Foundation
import Histogram
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a provider's benchmark (`paperboy-bench apns`, `paperboy-bench fcm`) plugs into the shared harness:
/// Paperboy's client for that provider, and the request h2load repeats beside it.
protocol PushBenchSubject: Sendable {
    /// Sends the messages numbered `indices` (each to its own token; `salt` keeps rounds' tokens apart) in one
    /// call, as a broadcast's dispatcher sends a batch, and returns one result per message in order.
    func send(_ indices: Range<Int>, salt: UInt64) async -> [PushSendResult]
}

/// One message's fate in the benchmark: accepted or not (and why not), and how long it took.
struct PushSendResult: Sendable {
    var accepted: Bool
    var latency: Duration
    /// Why it was not accepted (the outcome's description); nil when accepted.
    var failure: String?
}

/// The request h2load sends: the provider's path, headers and body, the same as Paperboy's client sends.
struct H2loadRequest {
    var url: String
    var headers: [(String, String)]
    var body: [UInt8]
}

/// The flags both push benchmarks share.
struct PushBenchOptions: ParsableArguments {
    @Option(name: .short, help: "Notifications per round.")
    var n = 1_000_000

    @Option(help: "HTTP/2 connections (the client's and h2load's).")
    var connections = 8

    @Option(
        help: ArgumentHelp(
            "Notifications in flight at once (h2load: this many streams over the connections). Default: apns 2000, fcm connections × streams.",
            valueName: "n"
        )
    )
    var concurrency: Int?

    @Option(help: "Notifications per client.send call (a broadcast sends batches); 1 sends them one by one. Default: apns 250, fcm streams.")
    var batch: Int?

    @Option(help: "Rounds; each runs Paperboy then h2load, and the report gives each round and the medians.")
    var rounds = 1

    @Option(help: ArgumentHelp("h2load to run beside: auto (if on PATH), off, or its path.", valueName: "path"))
    var h2load = "auto"

    @Option(help: ArgumentHelp("The paperboy binary whose simulator to start (default: the one beside paperboy-bench).", valueName: "path"))
    var paperboy: String?

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Flag(help: "Run Swift concurrency's tasks on NIO's event loops (an experiment).")
    var nioExecutor = false

    func validate() throws {
        guard n > 0 else { throw ValidationError("-n: must be positive") }
        guard (1...64).contains(connections) else { throw ValidationError("--connections: 1 to 64") }
        guard rounds > 0 else { throw ValidationError("--rounds: must be positive") }
        if let concurrency, concurrency <= 0 { throw ValidationError("--concurrency: must be positive") }
        if let batch, batch <= 0 { throw ValidationError("--batch: must be positive") }
    }

    /// The h2load executable to run beside, or nil (off, or not installed: said on standard error).
    func resolveH2load(command: String) -> String? {
        switch h2load {
        case "off": return nil
        case "auto":
            let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
            for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/h2load") {
                return "\(directory)/h2load"
            }
            progress("paperboy-bench \(command): h2load not found (apt-get install nghttp2-client); measuring Paperboy alone")
            return nil
        default:
            return h2load
        }
    }
}

/// The rounds of a push benchmark: a warm-up, then per round Paperboy's client and h2load with the same
/// connections and streams in flight; any message not accepted by either stops the benchmark with an error.
struct PushBenchRun {
    var command: String
    var options: PushBenchOptions
    var concurrency: Int
    var batch: Int
    var simulator: SimulatorProcess?

    /// Runs the rounds and returns the report (not yet printed).
    ///
    /// - Parameters:
    ///   - h2loadRequest: made once, before the first h2load round (e.g. after fetching an access token).
    func run(
        subject: some PushBenchSubject,
        report: BenchReport,
        h2loadRequest: () async throws -> H2loadRequest
    ) async throws -> BenchReport {
        var report = report
        let h2loadPath = options.resolveH2load(command: command)
        // Connections open and streams raised before anything is measured.
        let warmUp = await ClientRun.run(
            subject: subject,
            count: min(options.n, 2000),
            concurrency: min(concurrency, 200),
            batch: batch,
            tokenSalt: 0xFFFF,
            progress: false
        )
        try Self.requireAccepted(warmUp.side, failures: warmUp.failures, who: "paperboy (warm-up)", report: report)
        let request = h2loadPath == nil ? nil : try await h2loadRequest()
        for round in 1...options.rounds {
            let simulatorBefore = simulator?.cpuSeconds()
            let ours = await ClientRun.run(
                subject: subject,
                count: options.n,
                concurrency: concurrency,
                batch: batch,
                tokenSalt: UInt64(round),
                progress: !options.json && isatty(STDERR_FILENO) == 1
            )
            var side = ours.side
            if let simulatorBefore, let after = simulator?.cpuSeconds() {
                side.serverCPUCores = (after - simulatorBefore) / max(ours.seconds, 1e-9)
            }
            report.paperboy.append(side)
            try Self.requireAccepted(side, failures: ours.failures, who: "paperboy round \(round)", report: report)
            if let h2loadPath, let request {
                let simulatorBefore = simulator?.cpuSeconds()
                var result = try H2loadRun.run(
                    path: h2loadPath,
                    request: request,
                    count: options.n,
                    connections: options.connections,
                    streams: max(1, concurrency / options.connections)
                )
                if let simulatorBefore, let after = simulator?.cpuSeconds() {
                    result.side.serverCPUCores = (after - simulatorBefore) / max(result.side.seconds, 1e-9)
                }
                report.h2load.append(result.side)
                try Self.requireAccepted(result.side, failures: [:], who: "h2load round \(round)", report: report, output: result.output)
            }
        }
        return report
    }

    /// A side with failures ends the benchmark: its numbers would measure errors, not sends.
    static func requireAccepted(
        _ side: BenchSide,
        failures: [String: Int],
        who: String,
        report: BenchReport,
        output: String? = nil
    ) throws {
        guard side.failed > 0 else { return }
        progress(report.table)
        var lines = ["\(who): \(side.failed.formatted()) of \((side.accepted + side.failed).formatted()) not accepted; no numbers are valid"]
        for (reason, count) in failures.sorted(by: { $0.value > $1.value }).prefix(5) {
            lines.append("  \(count.formatted()) × \(reason)")
        }
        if let output { lines.append(output) }
        throw BenchError(lines.joined(separator: "\n"))
    }
}

/// One side's numbers in one round.
struct BenchSide: Codable {
    var notificationsPerSecond: Double
    var seconds: Double
    var accepted: Int
    var failed: Int
    var p50Milliseconds: Double?
    var p99Milliseconds: Double?
    var meanMilliseconds: Double?
    /// CPU seconds (user + system) of the sending process per 100,000 notifications.
    var cpuSecondsPer100k: Double
    var peakRSSMegabytes: Double?
    /// The process's peak RSS when the round had sent 100,000 (rounds of more than 100,000), to compare
    /// with the peak at the end: flat memory means they are about equal.
    var peakRSSAt100kMegabytes: Double?
    /// CPU of the simulator process while this side ran, in cores (when the bench started it).
    var serverCPUCores: Double?
}

/// Another library's run against the same simulator in the same session (e.g. firebase-admin).
struct LibrarySide: Codable {
    var library: String
    var notifications: Int
    var accepted: Int
    var failed: Int
    var seconds: Double
    var notificationsPerSecond: Double
    var cpuSecondsPer100k: Double
    var peakRSSMegabytes: Double?
    /// Access tokens it fetched, counted at the simulator.
    var tokenFetches: Int?
}

struct BenchReport: Codable {
    var provider: String
    /// What one notification is, e.g. "background notifications", "Android data messages".
    var kind: String
    var endpoint: String
    var notifications: Int
    var connections: Int
    var concurrency: Int
    var batch: Int
    var simulatorStartedByBench: Bool
    var paperboy: [BenchSide] = []
    var h2load: [BenchSide] = []
    /// Access tokens Paperboy's client fetched over the whole run, counted at the simulator (FCM).
    var tokenFetches: Int?
    var library: LibrarySide?
    /// Lines of provider-specific facts for the table (e.g. the simulator's GOAWAYs).
    var notes: [String] = []

    var table: String {
        var lines = [
            "paperboy-bench \(provider): \(notifications.formatted()) \(kind) per round to \(endpoint)"
                + (simulatorStartedByBench ? " (simulator started by the bench)" : "")
                + ", \(connections) connections, \(concurrency) in flight, batches of \(batch)",
            "",
            "side               notif/s     p50 ms   p99 ms  mean ms  CPU s/100k  peak RSS MB  (at 100k)  server cores",
        ]
        func number(_ value: Double?, _ digits: Int) -> String { value.map { String(format: "%.\(digits)f", $0) } ?? "-" }
        func row(_ name: String, _ side: BenchSide) -> String {
            name.padding(toLength: 17, withPad: " ", startingAt: 0)
                + String(format: "%9.0f", side.notificationsPerSecond)
                + number(side.p50Milliseconds, 2).leftPadded(9) + number(side.p99Milliseconds, 2).leftPadded(9)
                + number(side.meanMilliseconds, 2).leftPadded(9) + String(format: "%12.3f", side.cpuSecondsPer100k)
                + number(side.peakRSSMegabytes, 1).leftPadded(13) + number(side.peakRSSAt100kMegabytes, 1).leftPadded(11)
                + number(side.serverCPUCores, 2).leftPadded(14)
        }
        for (index, side) in paperboy.enumerated() {
            lines.append(row("paperboy #\(index + 1)", side))
            if index < h2load.count { lines.append(row("h2load   #\(index + 1)", h2load[index])) }
        }
        if let ours = median(paperboy.map(\.notificationsPerSecond)) {
            lines.append("")
            lines.append(
                "median paperboy: \(Int(ours).formatted()) notifications/s, \(number(median(paperboy.map(\.cpuSecondsPer100k)), 3)) CPU s per 100k"
            )
            if let theirs = median(h2load.map(\.notificationsPerSecond)), theirs > 0 {
                let ratios = zip(paperboy, h2load).map { $0.notificationsPerSecond / $1.notificationsPerSecond }
                let cpuRatios = zip(paperboy, h2load).map { $0.cpuSecondsPer100k / max($1.cpuSecondsPer100k, 1e-9) }
                lines.append(
                    "median h2load:   \(Int(theirs).formatted()) requests/s, \(number(median(h2load.map(\.cpuSecondsPer100k)), 3)) CPU s per 100k"
                )
                lines.append(
                    "paperboy / h2load (median of the rounds' ratios): throughput \(number(median(ratios), 2)), CPU per notification \(number(median(cpuRatios), 2))"
                )
            }
            if let library {
                lines.append(
                    "\(library.library): \(Int(library.notificationsPerSecond).formatted()) notifications/s (n = \(library.notifications.formatted())), "
                        + "\(number(library.cpuSecondsPer100k, 2)) CPU s per 100k, peak RSS \(number(library.peakRSSMegabytes, 0)) MB"
                        + (library.tokenFetches.map { ", \($0) access tokens fetched" } ?? "")
                )
                lines.append(
                    "paperboy (median) / \(library.library): throughput \(number(ours / library.notificationsPerSecond, 1)), "
                        + "CPU per notification \(number((median(paperboy.map(\.cpuSecondsPer100k)) ?? 0) / library.cpuSecondsPer100k, 3))"
                )
            }
        }
        if let tokenFetches { lines.append("access tokens fetched by Paperboy's client over the run (at the simulator): \(tokenFetches)") }
        lines += notes
        return lines.joined(separator: "\n")
    }
}

/// Paperboy's side: `count` sends to distinct tokens, in batches, by `concurrency / batch` tasks.
enum ClientRun {
    struct Result {
        var side: BenchSide
        var seconds: Double
        /// Why messages were not accepted, with how many each.
        var failures: [String: Int]
    }

    /// The peak RSS is read once this many have been sent (to compare with the end: flat memory).
    static let memoryCheckpoint = 100_000

    final class Shared: Sendable {
        let next = Atomic<Int>(0)
        let done = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        let latencies = Mutex(Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three))
        let failures = Mutex<[String: Int]>([:])
        let peakRSSAtCheckpoint = Mutex<Double?>(nil)
    }

    static func run(
        subject: some PushBenchSubject,
        count: Int,
        concurrency: Int,
        batch: Int,
        tokenSalt: UInt64,
        progress: Bool
    ) async -> Result {
        let shared = Shared()
        let cpuBefore = cpuSeconds(RUSAGE_SELF)
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            if progress {
                group.addTask {
                    var last = 0
                    while shared.done.load(ordering: .relaxed) < count {
                        try? await Task.sleep(for: .seconds(1))
                        let done = shared.done.load(ordering: .relaxed)
                        FileHandle.standardError.write(
                            Data("\r  paperboy: \(done.formatted()) / \(count.formatted())  (\((done - last).formatted())/s)   ".utf8)
                        )
                        last = done
                    }
                    FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
                }
            }
            // Each worker sends a batch and waits for all of it, as a broadcast's dispatcher does.
            let batchSize = max(1, min(batch, concurrency))
            for _ in 0..<max(1, min(concurrency / batchSize, (count + batchSize - 1) / batchSize)) {
                group.addTask {
                    while true {
                        let first = shared.next.wrappingAdd(batchSize, ordering: .relaxed).oldValue
                        guard first < count else { return }
                        let results = await subject.send(first..<min(first + batchSize, count), salt: tokenSalt)
                        shared.latencies.withLock { histogram in
                            for result in results { _ = histogram.record(UInt64(max(1, Int(result.latency.seconds * 1e6)))) }
                        }
                        let accepted = results.count { $0.accepted }
                        if accepted < results.count {
                            shared.failures.withLock { failures in
                                for result in results where !result.accepted { failures[result.failure ?? "unknown", default: 0] += 1 }
                            }
                        }
                        shared.accepted.wrappingAdd(accepted, ordering: .relaxed)
                        let done = shared.done.wrappingAdd(results.count, ordering: .relaxed).newValue
                        if count > memoryCheckpoint, done >= memoryCheckpoint, done - results.count < memoryCheckpoint {
                            shared.peakRSSAtCheckpoint.withLock { $0 = peakRSSMegabytes() }
                        }
                    }
                }
            }
        }
        let seconds = (ContinuousClock.now - start).seconds
        let cpu = cpuSeconds(RUSAGE_SELF) - cpuBefore
        let accepted = shared.accepted.load(ordering: .relaxed)
        let (p50, p99, mean) = shared.latencies.withLock {
            (Double($0.valueAtPercentile(50)) / 1000, Double($0.valueAtPercentile(99)) / 1000, $0.mean / 1000)
        }
        return Result(
            side: BenchSide(
                notificationsPerSecond: Double(count) / seconds,
                seconds: seconds,
                accepted: accepted,
                failed: count - accepted,
                p50Milliseconds: p50,
                p99Milliseconds: p99,
                meanMilliseconds: mean,
                cpuSecondsPer100k: cpu / Double(count) * 100_000,
                peakRSSMegabytes: peakRSSMegabytes(),
                peakRSSAt100kMegabytes: shared.peakRSSAtCheckpoint.withLock { $0 }
            ),
            seconds: seconds,
            failures: shared.failures.withLock { $0 }
        )
    }
}

/// Writes hexadecimal digits of `value` right-aligned into `buffer[range]`, without formatting machinery.
func writeHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, _ range: Range<Int>) {
    let digits: StaticString = "0123456789abcdef"
    var value = value
    for position in range.reversed() {
        buffer[position] = digits.utf8Start[Int(value & 0xF)]
        value >>= 4
    }
}

/// User plus system CPU seconds so far of this process (`RUSAGE_SELF`) or of the children it has waited
/// for (`RUSAGE_CHILDREN`).
func cpuSeconds(_ who: __rusage_who) -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(who.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// The process's peak resident set (VmHWM), in MB.
func peakRSSMegabytes() -> Double? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return nil }
    return kilobytes / 1024
}

/// h2load driving the same endpoint with the same request: the reference ceiling.
enum H2loadRun {
    struct Result {
        var side: BenchSide
        /// h2load's own report, quoted when it counted failures.
        var output: String
    }

    static func run(path: String, request: H2loadRequest, count: Int, connections: Int, streams: Int) throws -> Result {
        let payloadFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-bench-\(getpid()).json")
        try Data(request.body).write(to: payloadFile)
        defer { try? FileManager.default.removeItem(at: payloadFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        let threads = min(connections, ProcessInfo.processInfo.activeProcessorCount)
        var arguments = ["-n", String(count), "-c", String(connections), "-t", String(threads), "-m", String(streams), "-d", payloadFile.path]
        for (name, value) in request.headers { arguments += ["-H", "\(name): \(value)"] }
        arguments.append(request.url)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let cpuBefore = cpuSeconds(RUSAGE_CHILDREN)
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let cpu = cpuSeconds(RUSAGE_CHILDREN) - cpuBefore
        let text = String(decoding: data, as: UTF8.self)
        // "finished in 10.04s, 99573.40 req/s, 4.85MB/s"
        guard let finished = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }) else {
            throw BenchError("h2load did not finish:\n\(text)")
        }
        let fields = finished.split(separator: " ")
        // "10.04s," or "736.04ms,"
        let seconds = (milliseconds(String(fields[2].dropLast())) ?? 0) / 1000
        let rate = Double(fields[3]) ?? 0
        // "requests: 100 total, 100 started, 100 done, 100 succeeded, 0 failed, 0 errored, 0 timeout"; a request
        // counts as succeeded only with a 2xx status ("status codes: 100 2xx, …").
        var succeeded = 0
        if let requests = text.split(separator: "\n").first(where: { $0.hasPrefix("requests:") }),
            let index = requests.split(separator: " ").firstIndex(of: "succeeded,")
        {
            succeeded = Int(requests.split(separator: " ")[index - 1]) ?? 0
        }
        if let codes = text.split(separator: "\n").first(where: { $0.hasPrefix("status codes:") }),
            let index = codes.split(separator: " ").firstIndex(of: "2xx,")
        {
            succeeded = min(succeeded, Int(codes.split(separator: " ")[index - 1]) ?? 0)
        }
        var mean: Double?
        if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("time for request:") }) {
            let values = line.split(separator: " ").dropFirst(3)
            if values.count >= 3 { mean = milliseconds(String(values[values.startIndex + 2])) }
        }
        return Result(
            side: BenchSide(
                notificationsPerSecond: rate,
                seconds: seconds,
                accepted: succeeded,
                failed: count - succeeded,
                meanMilliseconds: mean,
                cpuSecondsPer100k: cpu / Double(count) * 100_000
            ),
            output: text
        )
    }

    /// "9.87ms", "116us", "1.2s" in milliseconds.
    static func milliseconds(_ text: String) -> Double? {
        if text.hasSuffix("ms") { return Double(text.dropLast(2)) }
        if text.hasSuffix("us") { return Double(text.dropLast(2)).map { $0 / 1000 } }
        if text.hasSuffix("s") { return Double(text.dropLast(1)).map { $0 * 1000 } }
        return nil
    }
}

/// A `paperboy` simulator (`apns-sim`, `fcm-sim`) as a child process on a free port, for a zero-setup
/// benchmark, with a temporary directory for its key files (removed at ``stop()``).
final class SimulatorProcess {
    let process: Process
    let url: String
    let directory: URL

    private init(process: Process, url: String, directory: URL) {
        self.process = process
        self.url = url
        self.directory = directory
    }

    /// A fresh directory for the key files the simulator is started with.
    static func makeDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-bench-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Runs `paperboy <subcommand> <arguments>` and waits for its line `<subcommand> listening on URL`; its
    /// standard error goes to `<subcommand>.log` in `directory`, quoted when it does not start.
    static func start(paperboy: String, subcommand: String, arguments: [String], directory: URL) throws -> SimulatorProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: paperboy)
        process.arguments = [subcommand] + arguments
        let output = Pipe()
        process.standardOutput = output
        let log = directory.appendingPathComponent("\(subcommand).log")
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else { throw BenchError("cannot create \(log.path)") }
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        let prefix = "\(subcommand) listening on "
        var lines: [String] = []
        while lines.count < 20 {
            var line = Data()
            while true {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                line.append(byte)
            }
            let text = String(decoding: line, as: UTF8.self)
            if text.hasPrefix(prefix) {
                return SimulatorProcess(process: process, url: String(text.dropFirst(prefix.count)), directory: directory)
            }
            if line.isEmpty, !process.isRunning { break }
            lines.append(text)
        }
        process.terminate()
        let errors = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: directory)
        throw BenchError("\(subcommand) did not start:\n" + (lines + [errors]).joined(separator: "\n"))
    }

    /// CPU seconds the simulator has used so far (from /proc).
    func cpuSeconds() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3; utime and stime are fields 14 and 15.
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The JSON or the table of `report` on standard output.
func printPushReport(_ report: BenchReport, json: Bool) throws {
    if json {
        try printJSON(report)
    } else {
        print(report.table)
    }
}

/// Installs NIO's event loops as Swift concurrency's executor when `--nio-executor` asks for it.
func installNIOExecutor(_ enabled: Bool) {
    if enabled { _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() }
}
