import APNs
import ArgumentParser
import Crypto
import Foundation
import Histogram
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `paperboy-bench apns`: the APNs client's throughput, latency, CPU and memory against an APNs-compatible
/// endpoint, next to h2load sending the same request to the same endpoint in the same run.
///
/// A benchmark, not a test: it prints numbers and asserts nothing.
struct APNsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Measure the APNs client (notifications/s, latency, CPU, memory) against an endpoint, beside h2load.",
        discussion: """
            Without --endpoint it starts `paperboy apns-sim` (the `paperboy` binary beside this one, or --paperboy) as
            a separate process on a free loopback port with a throwaway key. Each round sends -n background notifications to distinct tokens with Paperboy's client,
            then the same request -n times with h2load (Debian package nghttp2-client) when it is installed.
            Results go to BENCHMARKS.md; see the README for the commands used there.
            """
    )

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

    @Option(name: .short, help: "Notifications per round.")
    var n = 1_000_000

    @Option(help: "HTTP/2 connections (the client's and h2load's).")
    var connections = 8

    @Option(help: ArgumentHelp("Notifications in flight at once (h2load: this many streams over the connections).", valueName: "n"))
    var concurrency = 2000

    @Option(help: "Notifications per client.send call (a broadcast sends batches); 1 sends them one by one.")
    var batch = 250

    @Option(help: "Rounds; each runs Paperboy then h2load, and the report gives each round and the medians.")
    var rounds = 1

    @Option(help: ArgumentHelp("h2load to run beside: auto (if on PATH), off, or its path.", valueName: "path"))
    var h2load = "auto"

    @Option(help: ArgumentHelp("The paperboy binary whose apns-sim to start (default: the one beside paperboy-bench).", valueName: "path"))
    var paperboy: String?

    @Flag(help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        guard n > 0 else { throw ValidationError("-n: must be positive") }
        guard (1...64).contains(connections) else { throw ValidationError("--connections: 1 to 64") }
        guard rounds > 0 else { throw ValidationError("--rounds: must be positive") }
        guard concurrency > 0 else { throw ValidationError("--concurrency: must be positive") }
        guard batch > 0 else { throw ValidationError("--batch: must be positive") }
        if endpoint != nil, keyFile == nil { throw ValidationError("--key-file: needed with --endpoint") }
    }

    @Flag(help: "Run Swift concurrency's tasks on NIO's event loops (an experiment).")
    var nioExecutor = false

    func run() async throws {
        LoggingSystem.bootstrapBench()
        if nioExecutor { _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() }
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
            let started = try SimulatorProcess.start(
                paperboy: try paperboyBinary(paperboy),
                privateKeyPEM: privateKey.pemRepresentation,
                keyID: keyID,
                teamID: teamID
            )
            simulator = started
            endpointText = started.url
        }
        defer { simulator?.stop() }

        var configuration = APNsClient.Configuration(endpoint: try APNsEndpoint(endpointText))
        configuration.connections = connections
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            configuration.tls = tls
        }
        let client = try APNsClient(configuration: configuration, key: key, logger: logger)
        let notification = try APNsNotification.background([
            "edition": "2026-11-23-morning", "manifest": "https://cdn.example.com/e/2026-11-23-morning.json",
        ])
        let inFlight = concurrency
        let h2loadPath = resolveH2load()

        // Connections open and streams raised before anything is measured.
        _ = await ClientRun.run(
            client: client,
            notification: notification,
            topic: topic,
            count: min(n, 2000),
            concurrency: min(inFlight, 200),
            batch: batch,
            tokenSalt: 0xFFFF,
            progress: false
        )

        var report = BenchReport(
            endpoint: endpointText,
            notifications: n,
            connections: connections,
            concurrency: inFlight,
            simulatorStartedByBench: simulator != nil
        )
        for round in 1...rounds {
            let simulatorBefore = simulator?.cpuSeconds()
            let ours = await ClientRun.run(
                client: client,
                notification: notification,
                topic: topic,
                count: n,
                concurrency: inFlight,
                batch: batch,
                tokenSalt: UInt64(round),
                progress: !json && isatty(STDERR_FILENO) == 1
            )
            var side = ours.side
            if let simulatorBefore, let after = simulator?.cpuSeconds() {
                side.serverCPUCores = (after - simulatorBefore) / max(ours.seconds, 1e-9)
            }
            report.paperboy.append(side)
            if let h2loadPath {
                let token = String(repeating: "ab", count: 32)
                let providerToken = try key.providerToken(issuedAt: Date())
                let simulatorBefore = simulator?.cpuSeconds()
                var result = try H2loadRun.run(
                    path: h2loadPath,
                    url: endpointText + "/3/device/" + token,
                    headers: [
                        ("authorization", "bearer " + providerToken), ("apns-topic", topic), ("apns-push-type", "background"),
                        ("apns-priority", "5"), ("apns-expiration", "0"),
                    ],
                    payload: notification.payload,
                    count: n,
                    connections: connections,
                    streams: max(1, inFlight / connections)
                )
                if let simulatorBefore, let after = simulator?.cpuSeconds() {
                    result.serverCPUCores = (after - simulatorBefore) / max(result.seconds, 1e-9)
                }
                report.h2load.append(result)
            }
        }
        await client.shutdown()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(report.table)
        }
    }

    private func resolveH2load() -> String? {
        switch h2load {
        case "off": return nil
        case "auto":
            let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
            for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/h2load") {
                return "\(directory)/h2load"
            }
            FileHandle.standardError.write(
                Data("paperboy-bench apns: h2load not found (apt-get install nghttp2-client); measuring Paperboy alone\n".utf8)
            )
            return nil
        default:
            return h2load
        }
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
    /// CPU of the simulator process while this side ran, in cores (when the bench started it).
    var serverCPUCores: Double?
}

struct BenchReport: Codable {
    var endpoint: String
    var notifications: Int
    var connections: Int
    var concurrency: Int
    var simulatorStartedByBench: Bool
    var paperboy: [BenchSide] = []
    var h2load: [BenchSide] = []

    var table: String {
        var lines = [
            "paperboy-bench apns: \(notifications.formatted()) background notifications per round to \(endpoint)"
                + (simulatorStartedByBench ? " (apns-sim started by the bench)" : "")
                + ", \(connections) connections, \(concurrency) in flight",
            "",
            "side               notif/s     p50 ms   p99 ms  mean ms  CPU s/100k  peak RSS MB  server cores",
        ]
        func row(_ name: String, _ side: BenchSide) -> String {
            func number(_ value: Double?, _ digits: Int) -> String { value.map { String(format: "%.\(digits)f", $0) } ?? "-" }
            return name.padding(toLength: 17, withPad: " ", startingAt: 0)
                + String(format: "%9.0f", side.notificationsPerSecond)
                + number(side.p50Milliseconds, 2).leftPadded(9) + number(side.p99Milliseconds, 2).leftPadded(9)
                + number(side.meanMilliseconds, 2).leftPadded(9) + String(format: "%12.3f", side.cpuSecondsPer100k)
                + number(side.peakRSSMegabytes, 1).leftPadded(13) + number(side.serverCPUCores, 2).leftPadded(14)
        }
        for (index, side) in paperboy.enumerated() {
            lines.append(row("paperboy #\(index + 1)", side))
            if index < h2load.count { lines.append(row("h2load   #\(index + 1)", h2load[index])) }
        }
        if let ours = median(paperboy.map(\.notificationsPerSecond)) {
            lines.append("")
            lines.append(
                "median paperboy: \(Int(ours).formatted()) notifications/s, \(String(format: "%.3f", median(paperboy.map(\.cpuSecondsPer100k)) ?? 0)) CPU s per 100k"
            )
            if let theirs = median(h2load.map(\.notificationsPerSecond)), theirs > 0 {
                let ratios = zip(paperboy, h2load).map { $0.notificationsPerSecond / $1.notificationsPerSecond }
                let cpuRatios = zip(paperboy, h2load).map { $0.cpuSecondsPer100k / max($1.cpuSecondsPer100k, 1e-9) }
                lines.append(
                    "median h2load:   \(Int(theirs).formatted()) requests/s, \(String(format: "%.3f", median(h2load.map(\.cpuSecondsPer100k)) ?? 0)) CPU s per 100k"
                )
                lines.append(
                    "paperboy / h2load (median of the rounds' ratios): throughput \(String(format: "%.2f", median(ratios) ?? 0)), CPU per notification \(String(format: "%.2f", median(cpuRatios) ?? 0))"
                )
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// Paperboy's side: `count` sends to distinct tokens by `concurrency` tasks.
enum ClientRun {
    struct Result {
        var side: BenchSide
        var seconds: Double
    }

    final class Shared: Sendable {
        let next = Atomic<Int>(0)
        let done = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        let latencies = Mutex(Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three))
    }

    static func run(
        client: APNsClient,
        notification: APNsNotification,
        topic: String,
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
                        let deliveries = (first..<min(first + batchSize, count)).map {
                            APNsDelivery(notification, to: benchToken($0, salt: tokenSalt), topic: topic)
                        }
                        let results = await client.send(deliveries)
                        shared.latencies.withLock { histogram in
                            for result in results { _ = histogram.record(UInt64(max(1, Int(result.latency.seconds * 1e6)))) }
                        }
                        shared.accepted.wrappingAdd(results.count { $0.outcome.isAccepted }, ordering: .relaxed)
                        shared.done.wrappingAdd(results.count, ordering: .relaxed)
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
                peakRSSMegabytes: peakRSSMegabytes()
            ),
            seconds: seconds
        )
    }
}

/// A distinct 64-hex-character token per index, made without formatting machinery.
func benchToken(_ index: Int, salt: UInt64) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(unsafeUninitializedCapacity: 64) { buffer in
        var value = UInt64(truncatingIfNeeded: index)
        let high = salt
        for position in 0..<16 {
            buffer[15 - position] = digits[Int((high >> (UInt64(position) * 4)) & 0xF)]
        }
        for position in 16..<48 { buffer[position] = UInt8(ascii: "0") }
        for position in 0..<16 {
            buffer[63 - position] = digits[Int(value & 0xF)]
            value >>= 4
        }
        return 64
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
    static func run(
        path: String,
        url: String,
        headers: [(String, String)],
        payload: [UInt8],
        count: Int,
        connections: Int,
        streams: Int
    ) throws -> BenchSide {
        let payloadFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-bench-\(getpid()).json")
        try Data(payload).write(to: payloadFile)
        defer { try? FileManager.default.removeItem(at: payloadFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        let threads = min(connections, ProcessInfo.processInfo.activeProcessorCount)
        var arguments = ["-n", String(count), "-c", String(connections), "-t", String(threads), "-m", String(streams), "-d", payloadFile.path]
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        arguments.append(url)
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
        var succeeded = 0
        if let requests = text.split(separator: "\n").first(where: { $0.hasPrefix("requests:") }),
            let index = requests.split(separator: " ").firstIndex(of: "succeeded,")
        {
            succeeded = Int(requests.split(separator: " ")[index - 1]) ?? 0
        }
        var mean: Double?
        if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("time for request:") }) {
            let values = line.split(separator: " ").dropFirst(3)
            if values.count >= 3 { mean = milliseconds(String(values[values.startIndex + 2])) }
        }
        return BenchSide(
            notificationsPerSecond: rate,
            seconds: seconds,
            accepted: succeeded,
            failed: count - succeeded,
            meanMilliseconds: mean,
            cpuSecondsPer100k: cpu / Double(count) * 100_000
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

/// `paperboy apns-sim` as a child process on a free port, for a zero-setup benchmark.
final class SimulatorProcess {
    let process: Process
    let url: String
    private let directory: URL

    private init(process: Process, url: String, directory: URL) {
        self.process = process
        self.url = url
        self.directory = directory
    }

    static func start(paperboy: String, privateKeyPEM: String, keyID: String, teamID: String) throws -> SimulatorProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-bench-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let keyFile = directory.appendingPathComponent("AuthKey_\(keyID).p8")
        try Data(privateKeyPEM.utf8).write(to: keyFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: paperboy)
        process.arguments = [
            "apns-sim", "--port", "0", "--key-file", keyFile.path, "--key-id", keyID, "--team-id", teamID, "--no-record",
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // The first line names the port: "apns-sim listening on http://127.0.0.1:PORT".
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let url = text.split(separator: " ").last, url.hasPrefix("http") else {
            process.terminate()
            throw BenchError("apns-sim did not start: \(text)")
        }
        return SimulatorProcess(process: process, url: String(url), directory: directory)
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
