import Foundation
import Synchronization

/// Many seeds at once, and what they found: the seeds per second, the failures with the command that replays each,
/// and the share of runs that went through each fault and path.
public struct SimulationRun: Sendable, Codable {
    public struct Failure: Sendable, Codable {
        public var seed: UInt64
        public var replay: String
        public var scenario: String
        public var violations: [String]
    }

    public var first: UInt64
    public var seeds: Int
    public var seconds: Double
    public var seedsPerSecond: Double
    public var events: Int
    public var virtualSeconds: Double
    public var pushes: Int
    public var failures: [Failure]
    /// Per fault or path, the share of runs that went through it.
    public var coverage: [String: Double]

    /// Runs `seeds` seeds from `first`, `jobs` at a time, stopping new ones after `timeLimit` seconds.
    public static func run(
        first: UInt64,
        seeds: Int,
        jobs: Int,
        timeLimit: Double? = nil,
        options: Simulation.Options = Simulation.Options(),
        progress: @escaping @Sendable (Int) -> Void = { _ in }
    ) async -> SimulationRun {
        let shared = Shared()
        let started = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<jobs {
                group.addTask {
                    while true {
                        let index = shared.next.wrappingAdd(1, ordering: .relaxed).oldValue
                        guard index < seeds else { return }
                        if let timeLimit, (ContinuousClock.now - started) > .seconds(timeLimit) { return }
                        let seed = first + UInt64(index)
                        let result = await Simulation(scenario: Scenario(seed: seed), options: options).run()
                        let done = shared.tally.withLock { tally -> Int in
                            tally.done += 1
                            tally.events += result.events
                            tally.virtual += result.seconds
                            tally.pushes += result.pushes
                            for key in result.covered { tally.covered[key, default: 0] += 1 }
                            if !result.violations.isEmpty {
                                tally.failures.append(
                                    Failure(
                                        seed: seed,
                                        replay:
                                            "swift run -c release paperboy-sim --seed \(seed) --trace",
                                        scenario: result.scenario.description,
                                        violations: result.violations
                                    )
                                )
                            }
                            return tally.done
                        }
                        progress(done)
                    }
                }
            }
        }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let result = shared.tally.withLock { $0 }
        return SimulationRun(
            first: first,
            seeds: result.done,
            seconds: seconds,
            seedsPerSecond: Double(result.done) / max(seconds, 1e-9),
            events: result.events,
            virtualSeconds: result.virtual,
            pushes: result.pushes,
            failures: result.failures.sorted { $0.seed < $1.seed },
            coverage: result.covered.mapValues { Double($0) / Double(max(result.done, 1)) }
        )
    }

    /// What the jobs share while they run: the next seed to take, and what the seeds found so far.
    private final class Shared: Sendable {
        struct Tally {
            var done = 0
            var events = 0
            var virtual = 0.0
            var pushes = 0
            var failures: [Failure] = []
            var covered: [String: Int] = [:]
        }

        let tally = Mutex(Tally())
        let next = Atomic<Int>(0)
    }

    /// The summary a person reads.
    public var text: String {
        var lines = [
            String(
                format: "%d seeds from %llu in %.1f s (%.0f seeds/s): %d events, %.1f virtual hours, %d pushes",
                seeds,
                first,
                seconds,
                seedsPerSecond,
                events,
                virtualSeconds / 3600,
                pushes
            )
        ]
        lines.append("runs that went through each fault and path:")
        for (key, share) in coverage.sorted(by: { $0.key < $1.key }) {
            lines.append(String(format: "  %-20@ %5.1f %%", key as NSString, share * 100))
        }
        if failures.isEmpty {
            lines.append("no invariant broken")
        } else {
            lines.append("\(failures.count) seeds broke an invariant:")
            for failure in failures.prefix(20) {
                lines.append(
                    "  seed \(failure.seed): \(failure.violations.first ?? "")\(failure.violations.count > 1 ? " (and \(failure.violations.count - 1) more)" : "")"
                )
                lines.append("    replay: \(failure.replay)")
            }
        }
        return lines.joined(separator: "\n")
    }
}
