import ArgumentParser
import EmbeddedPostgres
import Foundation
import Logging
import PaperboyConsole
import PaperboyCore
import PaperboyDemo
import PaperboyStore
import Synchronization
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract:
            "Deliver a morning edition to a simulated iOS and Android fleet three ways, and compare: blast, staggered, staggered with waves.",
        discussion: """
            Needs no set-up: without a database configured it starts a private PostgreSQL that it removes \
            afterwards. Everything is real except the devices, APNs and FCM: Paperboy's dispatcher sends through its \
            APNs and FCM clients to the APNs and FCM simulators, and the simulated devices fetch the edition from \
            Paperboy's HTTP API and post receipts. Android devices (--android-share) register through the API with \
            FCM; whether Doze holds their messages follows a stated model whose parameters are assumptions. Time is compressed (the factor is printed); every figure is computed from what \
            the simulator, the API and the receipts table recorded. The waves strategy sends follow-up waves \
            20 minutes apart (Apple's cadence) until the deadline (--max-pushes auto). Beside each strategy's \
            held share the report prints the ceiling: the share of reachable iOS devices a policy could hold \
            that pushes each one from its wave-1 slot every 20 minutes until it holds the edition or the \
            deadline passes, computed from the model's parameters, and each strategy's share of it. \
            The model's parameters are assumptions, not measurements: try others with --fleet FILE.json \
            (docs/fleets/ has two). With --json (each strategy's result, with its ceiling, heldShareOfCeiling and \
            the assumptions), progress still goes to standard error.

            --days N runs the waves strategy on N mornings in a row on one fleet, a new edition each morning: \
            devices that posted no receipt for their last 3 editions are dormant from then on (wave 1's push, \
            no follow-ups), so pushes per device fall while the held share stays. About 2 minutes a morning.

            The operator's web console runs beside the demo's API: the demo prints its address and a one-time \
            operator token, so the strategies can be watched live in a browser (in demo time). --keep-console keeps \
            it up after the report until Ctrl-C.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Simulated iOS devices (per strategy). Time is compressed more slowly for fleets over 20,000, so they take longer.")
    var devices = 20_000

    @Option(
        help: ArgumentHelp(
            "Android devices' share of the whole fleet, 0 to 0.9, added on top of the iOS devices so that the iOS figures stay comparable (default 0.2: 5,000 Android devices beside 20,000 iOS ones).",
            valueName: "share"
        )
    )
    var androidShare = 0.2

    @Option(help: ArgumentHelp("android.priority of the broadcasts: normal (waits for Doze's maintenance windows) or high.", valueName: "priority"))
    var androidPriority: BroadcastOptions.AndroidPriority = .normal

    @Option(help: "Seeds the fleet and every draw of the device model: the same seed, the same run.")
    var seed: UInt64 = 1

    @Option(
        help: ArgumentHelp(
            "Strategies to run, comma-separated: blast, staggered, waves (the default three); hash and oracle run waves in hash order and in the order of this morning's opens, to compare with waves' habit order.",
            valueName: "list"
        )
    )
    var strategies: String?

    @Option(
        help: ArgumentHelp(
            "Mornings to run, 1 to 14 (default 1). More than one runs the waves strategy only, one edition a morning on one fleet, to show dormant devices spared.",
            valueName: "n"
        )
    )
    var days = 1

    @Option(help: ArgumentHelp("Also write a self-contained HTML report with SVG charts here.", valueName: "file"))
    var report: String?

    @Option(
        help: ArgumentHelp(
            "The device model's parameters as JSON (any FleetParameters fields; see `PaperboyDemo/Model/FleetModel.swift`), e.g. run probabilities and delays: the defaults are assumptions, this is how to try others (docs/fleets/cellular-older.json, docs/fleets/charging-newer.json).",
            valueName: "file"
        )
    )
    var fleet: String?

    @Flag(name: .customLong("keep-console"), help: "Keep the web console (and the demo's database) up after the report, until Ctrl-C.")
    var keepConsole = false

    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard (100...1_000_000).contains(devices) else { throw ValidationError("--devices: between 100 and 1000000, got \(devices)") }
        guard (0...0.9).contains(androidShare) else { throw ValidationError("--android-share: between 0 and 0.9, got \(androidShare)") }
        guard (1...14).contains(days) else { throw ValidationError("--days: between 1 and 14, got \(days)") }
        _ = try chosenStrategies()
    }

    func run() async throws {
        var logger = Logger(label: "paperboy.demo")
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        var configuration = DemoConfiguration()
        configuration.devices = devices
        configuration.seed = seed
        configuration.strategies = try chosenStrategies()
        configuration.days = days
        configuration.androidShare = androidShare
        configuration.androidPriority = androidPriority
        if let fleet { configuration.fleet = try fleetParameters(fleet) }
        // Keep the wall-clock load of a bigger fleet where 20,000 devices put it: compress time less.
        let scale = min(1, 20_000 / Double(devices))
        configuration.timeCompression = configuration.timeCompression.mapValues { max(1, ($0 * scale).rounded()) }
        let display = ProgressDisplay()
        let started = Date()
        // The console: an operator token made for this run only, printed with the address.
        let consoleToken = (0..<24).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max)) }.joined()
        configuration.console = try ConsoleAccess(operatorToken: consoleToken, viewerToken: nil)
        configuration.onConsoleReady = { url in
            display.show(.step("web console: \(url) (sign in with the operator token \(consoleToken))"))
        }
        let reported = ReportPrinted()
        if keepConsole {
            let reportConfiguration = configuration
            let (seed, devices, report, json) = (seed, devices, report, output.json)
            configuration.whileConsoleKept = { recordings in
                display.finish()
                try Self.printReport(
                    recordings,
                    configuration: reportConfiguration,
                    started: started,
                    seed: seed,
                    devices: devices,
                    report: report,
                    json: json
                )
                reported.flag.store(true, ordering: .relaxed)
                FileHandle.standardError.write(Data("the web console stays up until Ctrl-C\n".utf8))
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
        }
        let runner = DemoRunner(configuration: configuration, logger: logger)

        let configured = try database.configuration()
        let clusterLogger = logger
        let recordings: [DemoRecording]
        do {
            recordings = try await Self.cancellingOnSignals {
                if let configured {
                    return try await runner.run(database: configured) { display.show($0) }
                }
                display.show(.step("starting a private PostgreSQL (removed afterwards)"))
                let cluster = try await EmbeddedPostgres.start(logger: clusterLogger)
                do {
                    let name = "paperboy_demo"
                    try await cluster.createDatabase(name)
                    let recordings = try await runner.run(database: DatabaseConfiguration(url: cluster.url(database: name))) { display.show($0) }
                    try await cluster.stop()
                    return recordings
                } catch {
                    try? await cluster.stop()
                    throw error
                }
            }
        } catch is Interrupted {
            display.finish()
            // Kept up after the report: Ctrl-C is how it ends.
            if reported.flag.load(ordering: .relaxed) { return }
            FileHandle.standardError.write(Data("paperboy demo: interrupted; its temporary key files and private PostgreSQL were removed\n".utf8))
            throw ExitCode(130)
        }
        display.finish()
        try Self.printReport(
            recordings,
            configuration: configuration,
            started: started,
            seed: seed,
            devices: devices,
            report: report,
            json: output.json
        )
    }

    /// The report: terminal text, or JSON with --json, and the HTML file with --report.
    private static func printReport(
        _ recordings: [DemoRecording],
        configuration: DemoConfiguration,
        started: Date,
        seed: UInt64,
        devices: Int,
        report: String?,
        json: Bool
    ) throws {
        let model = FleetModel(seed: seed, parameters: configuration.fleet)
        // Every Android device is reachable (the model has no force-stopped apps).
        let reachable = (0..<devices).filter { model.isReachable($0) }.count + configuration.androidDevices
        let results = recordings.map { StrategyResult($0, reachable: reachable) }
        let demoReport = DemoReport(
            results: results,
            devices: devices + configuration.androidDevices,
            seed: seed,
            timeCompression: configuration.timeCompression,
            parameters: configuration.fleet,
            window: configuration.window,
            deadline: configuration.deadlineAfter,
            // The fleet this run had: its iOS devices, as drawn.
            ceiling: Ceiling(model: model, devices: 0..<devices, window: configuration.window, deadline: configuration.deadlineAfter)
        )
        if let report {
            do {
                try demoReport.html().write(toFile: report, atomically: true, encoding: .utf8)
            } catch {
                throw CommandError("--report: could not write \(report): \(error.localizedDescription)")
            }
        }
        if json { return try printJSON(demoReport.results) }
        print(demoReport.terminal(width: min(terminalWidth(), 120)))
        print()
        print("demo finished in \(String(format: "%.0f", Date().timeIntervalSince(started))) s" + (report.map { "; report written to \($0)" } ?? ""))
    }

    /// Whether the report was printed (before the console was kept up).
    final class ReportPrinted: Sendable {
        let flag = Atomic<Bool>(false)
    }

    /// SIGINT or SIGTERM arrived while the demo ran.
    struct Interrupted: Error {}

    /// Runs `body`, cancelling it on SIGINT or SIGTERM and throwing ``Interrupted`` once it has unwound, so
    /// that its cleanup runs: the demo's throwaway APNs key and FCM service account in the temporary
    /// directory, its simulators and its private PostgreSQL. Killed by the default handlers, it would leave
    /// the two key files behind.
    static func cancellingOnSignals<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                for await _ in signals { return nil }
                // Cancelled: the demo finished first.
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let result = next { return result }
                // A signal: cancel the demo and wait until it has cleaned up.
                group.cancelAll()
                while (try? await group.next()) != nil {}
                throw Interrupted()
            }
            throw Interrupted()
        }
    }

    private func fleetParameters(_ path: String) throws -> FleetParameters {
        guard let data = FileManager.default.contents(atPath: path) else { throw CommandError("--fleet: cannot read \(path)") }
        do {
            // The file's fields over the defaults, so a file may name only what it changes.
            let defaults = try JSONSerialization.jsonObject(with: JSONEncoder().encode(FleetParameters())) as? [String: Any] ?? [:]
            guard let given = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw CommandError("--fleet: \(path) must hold a JSON object")
            }
            let unknown = Set(given.keys).subtracting(defaults.keys)
            guard unknown.isEmpty else {
                throw CommandError(
                    "--fleet: unknown fields \(unknown.sorted().joined(separator: ", ")); known: \(defaults.keys.sorted().joined(separator: ", "))"
                )
            }
            let merged = try JSONSerialization.data(withJSONObject: defaults.merging(given) { $1 })
            return try JSONDecoder().decode(FleetParameters.self, from: merged)
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError("--fleet: \(path) is not FleetParameters JSON: \(error)")
        }
    }

    private func chosenStrategies() throws -> [DemoStrategy] {
        guard let strategies else { return days > 1 ? [.waves] : DemoStrategy.defaults }
        let chosen = try strategies.split(separator: ",").map { name in
            guard let strategy = DemoStrategy(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--strategies: '\(name)' is not one of \(DemoStrategy.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return strategy
        }
        if days > 1, chosen != [.waves] {
            throw ValidationError(
                "--strategies: with --days \(days) only waves runs (dormant devices show in follow-up waves); leave --strategies out"
            )
        }
        return chosen
    }
}

/// Progress on standard error: steps as lines, the running strategy's status redrawn in place on a
/// terminal (a line every few seconds otherwise).
final class ProgressDisplay: Sendable {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private let lastLine = Mutex<Date>(.distantPast)

    func show(_ progress: DemoProgress) {
        switch progress {
        case .step(let text):
            write((isTerminal ? "\r\u{1B}[K" : "") + "• " + text + "\n")
        case .finished(_, let text):
            write((isTerminal ? "\r\u{1B}[K" : "") + "  done: " + text + "\n")
        case .status(let text):
            if isTerminal {
                write("\r\u{1B}[K  " + String(text.prefix(max(20, terminalWidth() - 3))))
            } else {
                let due = lastLine.withLock { last -> Bool in
                    guard Date().timeIntervalSince(last) >= 5 else { return false }
                    last = Date()
                    return true
                }
                if due { write("  " + text + "\n") }
            }
        }
    }

    func finish() {
        if isTerminal { write("\r\u{1B}[K") }
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
