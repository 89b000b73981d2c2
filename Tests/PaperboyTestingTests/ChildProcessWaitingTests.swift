import Foundation
import PaperboyTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Waiting for a child process suspends the test's task instead of blocking one of the cooperative threads
/// (one per core) that every test in the process shares.
///
/// Timed against a ticker: `.ci/run` runs this target in its one-test-at-a-time step, because in the parallel
/// step other tests' own work on those threads stalls the ticker too (7.5 s at its start, on 2 cores).
@Suite("waiting for child processes")
struct ChildProcessWaitingTests {
    /// The ways the tests wait for a child.
    enum Waiting: String, CaseIterable, Sendable {
        case commandRun = "CommandRun.run"
        case processExited = "Process.exited()"
        case pipeReadOnDedicatedThread = "a pipe read to its end through onDedicatedThread"

        /// Runs a child that sleeps for `seconds` and waits for it this way; its exit status.
        func sleep(_ seconds: Int) async throws -> Int32 {
            switch self {
            case .commandRun:
                return try await CommandRun.run(URL(fileURLWithPath: "/bin/sleep"), [String(seconds)], environment: [:]).status
            case .processExited:
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/sleep")
                process.arguments = [String(seconds)]
                try process.run()
                try await process.exited()
                return process.terminationStatus
            case .pipeReadOnDedicatedThread:
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "sleep \(seconds); echo slept"]
                let pipe = Pipe()
                process.standardOutput = pipe
                try process.run()
                let output = await onDedicatedThread { pipe.fileHandleForReading.readDataToEndOfFile() }
                try await process.exited()
                #expect(String(decoding: output, as: UTF8.self) == "slept\n")
                return process.terminationStatus
            }
        }
    }

    @Test(
        "more 2-second children than there are cores, waited for at once, leave other tasks running every 50 ms meanwhile",
        arguments: Waiting.allCases
    )
    func waitingLeavesTheCooperativeThreadsFree(_ waiting: Waiting) async throws {
        // Blocked waits would hold every cooperative thread: the ticks would stop for the children's 2 s.
        let children = max(4, ProcessInfo.processInfo.activeProcessorCount + 2)
        let clock = ContinuousClock()
        let start = clock.now
        let ticker = Task {
            var last = start
            var longestGap = Duration.zero
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                let now = clock.now
                longestGap = max(longestGap, now - last)
                last = now
            }
            return longestGap
        }
        let statuses = try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<children { group.addTask { try await waiting.sleep(2) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = clock.now - start
        ticker.cancel()
        let longestGap = await ticker.value
        #expect(statuses == Array(repeating: 0, count: children), "every child slept and exited 0")
        #expect(elapsed >= .seconds(2), "the ticks were counted while the children ran")
        #expect(longestGap < .milliseconds(1500), "with \(children) children waited for \(waiting.rawValue), the ticks stopped for \(longestGap)")
    }

    @Test("CommandRun returns a failing program's exit status and its output and errors in the order written")
    func commandRunReturnsStatusAndOutput() async throws {
        let run = try await CommandRun.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", #"echo "out $GREETING"; echo err >&2; echo more; exit 3"#],
            environment: ["GREETING": "hello"]
        )
        #expect(run.status == 3)
        #expect(run.output == "out hello\nerr\nmore\n")
    }

    @Test("CommandRun gives the environment exactly and standard input from /dev/null")
    func commandRunEnvironmentAndInput() async throws {
        let run = try await CommandRun.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "env; cat"], environment: ["ONLY": "this"])
        #expect(run.status == 0)
        #expect(run.output.split(separator: "\n").filter { !$0.hasPrefix("PWD=") } == ["ONLY=this"])
    }

    @Test("CommandRun throws when the program cannot be started")
    func commandRunMissingExecutable() async throws {
        await #expect(throws: (any Error).self) {
            try await CommandRun.run(URL(fileURLWithPath: "/nonexistent/program"), [], environment: [:])
        }
    }

    @Test("Process.exited(within:) answers false while the child runs and true once it exited, its status then readable")
    func boundedWait() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["30"]
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(await process.exited(within: .milliseconds(200)) == false)
        #expect(process.isRunning)
        // SIGKILL: a child that Foundation spawns from a cooperative thread inherits its signal mask, in which
        // SIGTERM is blocked, and plain `sleep` never unblocks it.
        kill(process.processIdentifier, SIGKILL)
        try #require(await process.exited(within: .seconds(10)))
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
    }

    @Test("Process.exited() returns once a child exits by itself, with its exit status")
    func unboundedWait() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "sleep 0.2; exit 7"]
        try process.run()
        try await process.exited()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 7)
    }

    @Test("Process.exited() throws CancellationError when its task is cancelled, leaving the child running")
    func cancelledWait() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["30"]
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let waiter = Task { try await process.exited() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(process.isRunning)
    }
}
