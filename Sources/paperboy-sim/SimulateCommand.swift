import ArgumentParser
import Foundation
import PaperboySimulation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `paperboy-sim`: seeded simulations of production weeks against the worker's real machines (`PaperboySimulation`).
@main
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paperboy-sim",
        abstract: "Run seeded, deterministic simulations of workers sending broadcasts through faults, and check the invariants after each.",
        discussion: """
            Each seed draws its workers, fleets, broadcasts and faults (SIGKILL, SIGSTOP, deploys, pods without a key, \
            key rotations and revocations, misconfigured apps, provider and database outages, lost COMMIT answers, a \
            slow database, cancelled broadcasts, shared origins, skewed clocks) and runs the real worker machines \
            against models of PostgreSQL and the providers on a virtual clock. A failing seed prints the command that \
            replays it; with --seed and --trace, every event of that run.
            """
    )

    @Option(help: "How many seeds to run.")
    var seeds = 1000

    @Option(help: "The first seed.")
    var first: UInt64 = 1

    @Option(help: "Run only this seed, and print its scenario and findings.")
    var seed: UInt64?

    @Flag(help: "With --seed: print every event of the run.")
    var trace = false

    @Option(help: "Seeds run at once (default: the machine's cores).")
    var jobs = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: "Stop starting new seeds after this many seconds (the seeds run so far are reported).")
    var timeLimit: Double?

    @Flag(help: "Print the summary as JSON.")
    var json = false

    func validate() throws {
        guard seeds > 0 else { throw ValidationError("--seeds must be at least 1") }
        guard jobs > 0 else { throw ValidationError("--jobs must be at least 1") }
        if let timeLimit, timeLimit <= 0 { throw ValidationError("--time-limit must be more than 0 seconds") }
    }

    func run() async throws {
        Self.deterministicHashing()
        if let seed {
            let result = await Simulation(scenario: Scenario(seed: seed), options: .init(trace: trace)).run()
            print(result.scenario)
            print(
                "\(result.events) events, \(Int(result.seconds)) virtual seconds, \(result.pushes) pushes; covered: \(result.covered.sorted().joined(separator: ", "))"
            )
            if result.violations.isEmpty {
                print("no invariant broken")
            } else {
                for violation in result.violations { print("violation: \(violation)") }
                throw ExitCode(1)
            }
            return
        }
        let summary = await SimulationRun.run(
            first: first,
            seeds: seeds,
            jobs: jobs,
            timeLimit: timeLimit,
            options: Simulation.Options()
        ) { done in
            if !json && done % 1000 == 0 { FileHandle.standardError.write(Data("\(done) seeds\n".utf8)) }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(summary), as: UTF8.self))
        } else {
            print(summary.text)
        }
        if !summary.failures.isEmpty { throw ExitCode(1) }
    }

    /// Swift seeds its hashing per process; a seed replays only if dictionaries iterate alike in every run, so the
    /// process starts again with deterministic hashing when it was not asked for.
    static func deterministicHashing() {
        guard ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"] == nil else { return }
        setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
        let arguments = CommandLine.arguments
        var pointers = arguments.map { strdup($0) }
        pointers.append(nil)
        execv("/proc/self/exe", &pointers)
        // execv returns only when it failed: go on with per-process hashing (a seed may then not replay exactly).
        FileHandle.standardError.write(Data("paperboy-sim: could not restart with deterministic hashing; runs may not replay exactly\n".utf8))
    }
}
