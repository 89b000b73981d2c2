import Foundation

/// A program run to completion: its exit status and what it printed.
public struct CommandRun: Sendable {
    public var status: Int32
    /// Standard output and standard error together, in the order written.
    public var output: String

    /// Runs `executable` with `arguments` and exactly `environment`, standard input from /dev/null, its
    /// output in a file (not a pipe, which a chatty child could fill while nobody reads it).
    ///
    /// Waits for the exit suspended, not blocked: async code runs on one cooperative thread per core (two on
    /// CI), and a test blocked in `waitUntilExit()` stalls every other test whose tasks would run on that
    /// thread. Foundation sees the exit when every holder of the child's end of its exit socket has gone, as
    /// for `waitUntilExit()`: a child that leaves a daemon behind is waited for until the daemon exits (see
    /// `ChildProcess` for programs that do). Cancelling the task does not stop the child.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]) async throws -> CommandRun {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-run-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        // Set before `run()`: Foundation reads the handler, without a lock, only once the child has exited,
        // and calls it once, on a thread of its own, after `terminationStatus` is set.
        let exit = ExitSignal()
        process.terminationHandler = { _ in exit.fire() }
        try process.run()
        await exit.wait()
        return CommandRun(status: process.terminationStatus, output: try String(contentsOf: log, encoding: .utf8))
    }
}
