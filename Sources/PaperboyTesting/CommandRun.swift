import Foundation

/// A program run to completion: its exit status and what it printed.
public struct CommandRun: Sendable {
    public var status: Int32
    /// Standard output and standard error together, in the order written.
    public var output: String

    /// Runs `executable` with `arguments` and exactly `environment`, standard input from /dev/null, its
    /// output in a file (not a pipe, which a chatty child could fill while nobody reads it).
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]) throws -> CommandRun {
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
        try process.run()
        process.waitUntilExit()
        return CommandRun(status: process.terminationStatus, output: try String(contentsOf: log, encoding: .utf8))
    }
}
