import Foundation
import Synchronization

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
        // Foundation sees the exit only once every holder of its exit socket has gone: a long-lived child spawned by
        // another test at the same moment may hold it (the inheritance ``ChildProcess`` closes for its own children).
        // The kernel knows sooner: a child that has been a zombie for 5 s is taken as exited, with the status the
        // kernel keeps for it, and said so on standard error.
        let unseen = Mutex<Int32?>(nil)
        let pid = process.processIdentifier
        let watch = Task {
            var zombieSince: ContinuousClock.Instant?
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                guard let status = Self.zombieStatus(pid) else {
                    zombieSince = nil
                    continue
                }
                let since = zombieSince ?? .now
                zombieSince = since
                if since.duration(to: .now) >= .seconds(5) {
                    FileHandle.standardError.write(
                        Data(
                            "CommandRun: \(executable.lastPathComponent) \(arguments.prefix(3).joined(separator: " ")) (pid \(pid)) exited with status \(status), unseen by Foundation for 5 s: its exit socket is held by another child\n"
                                .utf8
                        )
                    )
                    unseen.withLock { $0 = status }
                    exit.fire()
                    return
                }
            }
        }
        await exit.wait()
        watch.cancel()
        let status = unseen.withLock { $0 } ?? process.terminationStatus
        return CommandRun(status: status, output: try String(contentsOf: log, encoding: .utf8))
    }

    /// The exit status of `pid` if it has exited and nobody has reaped it yet (a zombie), as `terminationStatus` gives
    /// it (the exit code, or the signal that ended it), from `/proc/PID/stat`; nil while it runs, once reaped, or where
    /// there is no `/proc`.
    static func zombieStatus(_ pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
            return nil
        }
        // After the command's name: the state (field 3) first; the wait status is field 52 (`exit_code`, Linux 3.5).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.first == "Z", fields.count >= 50, let raw = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) else {
            return nil
        }
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }
}
