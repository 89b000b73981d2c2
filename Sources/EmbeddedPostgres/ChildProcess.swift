import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts child processes with `posix_spawn` and reaps them with `waitpid`, rather than with Foundation's
/// `Process`: `pg_ctl start` leaves a server running that inherits the descriptors `Process` watches for
/// the child's exit, so `Process.waitUntilExit()` would never return. The embedded cluster, its watchdog
/// and the tests that start `paperboy` or `pg_ctl` themselves all start processes through here.
public enum ChildProcess {
    /// Which session and process group the child joins.
    public enum Group: Sendable {
        /// The parent's.
        case inherited
        /// A new session (`setsid`): no terminal's signals reach it, and it outlives the parent's group.
        case newSession
        /// A new process group led by the child, so that the whole group can be signalled without
        /// signalling the parent.
        case newProcessGroup
    }

    /// Starts `command` (an absolute path and its arguments) with standard input from `input` (by default
    /// `/dev/null`) and standard output and error appended to the file `output`.
    ///
    /// - Parameters:
    ///   - group: the session and process group the child joins.
    ///   - environment: the child's environment; the parent's when nil.
    /// - Returns: the child's process id; reap it with ``waitForExit(_:)``.
    public static func spawn(
        _ command: [String],
        input: Int32? = nil,
        output: String,
        group: Group = .inherited,
        environment: [String: String]? = nil
    ) throws(ChildProcessError) -> pid_t {
        precondition(!command.isEmpty, "a command names at least its executable")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let input {
            posix_spawn_file_actions_adddup2(&actions, input, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        closeInheritedDescriptors(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let flags: Int16 =
            switch group {
            case .inherited: 0
            case .newSession: spawnInNewSession
            case .newProcessGroup: Int16(POSIX_SPAWN_SETPGROUP)
            }
        if flags != 0 {
            let result = posix_spawnattr_setflags(&attributes, flags)
            guard result == 0 else {
                throw ChildProcessError(command: command, message: "cannot set the process group: \(String(cString: strerror(result)))")
            }
        }
        if case .newProcessGroup = group { posix_spawnattr_setpgroup(&attributes, 0) }
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = (environment ?? [:]).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result =
            if environment == nil {
                posix_spawn(&pid, command[0], &actions, &attributes, &argv, environ)
            } else {
                posix_spawn(&pid, command[0], &actions, &attributes, &argv, &envp)
            }
        guard result == 0 else { throw ChildProcessError(command: command, message: "cannot run it: \(String(cString: strerror(result)))") }
        return pid
    }

    /// Waits for the child `pid` to exit and returns its `waitpid` status (see ``exitedCleanly(_:)``).
    public static func waitForExit(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return status
    }

    /// Whether a `waitpid` status says the child exited by itself with status 0.
    public static func exitedCleanly(_ status: Int32) -> Bool {
        status & 0x7f == 0 && (status >> 8) & 0xff == 0
    }

    /// Adds the action that closes every descriptor from 3 up in the child, after the ones above. Without
    /// it a long-lived child (the watchdog, `postgres`) keeps whatever the parent had open when it was
    /// spawned: the parent's sockets, and the end of the socket pair through which Foundation learns that
    /// a `Process` started at the same moment on another thread has exited, which then never returns
    /// from `waitUntilExit()` nor calls its `terminationHandler` (a test run hung on a `paperboy --help`
    /// so, its zombie waiting beside the watchdog that held the socket).
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        #if os(Linux)
        // glibc 2.34 has it, declared only for `_GNU_SOURCE`: looked up rather than imported.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
            return
        }
        #endif
        // Elsewhere, each descriptor open now (one opened after this by another thread still leaks).
        let highest = Int32(min(sysconf(Int32(_SC_OPEN_MAX)), 65536))
        for descriptor in 3..<max(3, highest) where fcntl(descriptor, F_GETFD) != -1 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }

    /// `POSIX_SPAWN_SETSID`: glibc defines it (since 2.26) only for `_GNU_SOURCE`, which Swift's Glibc
    /// module does not import with.
    #if os(Linux)
    private static let spawnInNewSession = Int16(0x80)
    #else
    private static let spawnInNewSession = Int16(POSIX_SPAWN_SETSID)
    #endif
}

/// A child process could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// The command, its executable first.
    public var command: [String]
    public var message: String

    public var description: String { "\(command.first ?? "a command"): \(message)" }
}
