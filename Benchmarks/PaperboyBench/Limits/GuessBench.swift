import ArgumentParser
import Foundation
import PaperboyAPI

/// `paperboy-bench guesses`: the wrong-token limiter's cost per decision at the scale an attacker with many addresses
/// reaches (issue 48, item 2).
struct GuessBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guesses",
        abstract: "The wrong-token limiter (GuessThrottle) under a flood: distinct addresses failing once, then new failures, each decision timed.",
        discussion: """
            First --fill distinct addresses fail once each (untimed, but the total time is printed), then --failures new \
            addresses each make a try and fail, one decision (`attempt`: decided, checked, counted) timed at a time, on a clock that \
            advances a millisecond per failure (the time a request holds the limiter's lock: the addresses a failure \
            forgets are let go of after it). Prints the decisions' p50, p99, p99.9 and maximum, and the process's \
            resident memory before and after (VmRSS).
            """
    )

    @Option(help: "Distinct addresses that fail once first.")
    var fill = 1_000_000

    @Option(help: "New addresses that then try and fail, each timed.")
    var failures = 100_000

    @Flag(help: "Print the results as JSON.")
    var json = false

    func validate() throws {
        guard fill >= 0 else { throw ValidationError("--fill must be at least 0") }
        guard failures > 0 else { throw ValidationError("--failures must be at least 1") }
    }

    func run() throws {
        let before = Self.residentBytes()
        var throttle = GuessThrottle()
        var now = 0.0
        let fillStart = ContinuousClock.now
        for index in 0..<fill {
            throttle.failed(address: Self.address(index), now: now)
            now += 0.001
        }
        let fillTime = ContinuousClock.now - fillStart
        var nanoseconds: [Int64] = []
        nanoseconds.reserveCapacity(failures)
        for index in 0..<failures {
            let address = Self.address(fill + index)
            let start = ContinuousClock.now
            let (_, forgotten) = throttle.attempt(address: address, now: now) { false }
            let elapsed = (ContinuousClock.now - start).components
            // Let go of after the decision, as GuessGuard does after its lock.
            withExtendedLifetime(forgotten) {}
            nanoseconds.append(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
            now += 0.001
        }
        let after = Self.residentBytes()
        nanoseconds.sort()
        func percentile(_ p: Double) -> Int64 { nanoseconds[min(nanoseconds.count - 1, Int(Double(nanoseconds.count) * p))] }
        let fillSeconds = Double(fillTime.components.seconds) + Double(fillTime.components.attoseconds) / 1e18
        let results: [String: Double] = [
            "fill": Double(fill), "failures": Double(failures), "fillSeconds": fillSeconds,
            "p50Nanoseconds": Double(percentile(0.5)), "p99Nanoseconds": Double(percentile(0.99)),
            "p999Nanoseconds": Double(percentile(0.999)), "maxNanoseconds": Double(nanoseconds.last ?? 0),
            "addressesRemembered": Double(throttle.count), "residentBytesBefore": Double(before), "residentBytesAfter": Double(after),
        ]
        if json {
            let data = try JSONSerialization.data(withJSONObject: results, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("filled \(fill) addresses in \(String(format: "%.2f", fillSeconds)) s; \(throttle.count) remembered")
        print(
            "\(failures) decisions: p50 \(percentile(0.5)) ns, p99 \(percentile(0.99)) ns, p99.9 \(percentile(0.999)) ns, max \(nanoseconds.last ?? 0) ns"
        )
        print("resident memory: \(before / 1_048_576) MiB before, \(after / 1_048_576) MiB after")
    }

    /// A distinct IPv6 /64 per index, as the limiter keys them.
    static func address(_ index: Int) -> String {
        "2001:db8:\(String(index >> 16, radix: 16)):\(String(index & 0xFFFF, radix: 16))::/64"
    }

    /// The process's resident memory (VmRSS), in bytes; 0 where /proc is not there.
    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kilobytes * 1024
    }
}
