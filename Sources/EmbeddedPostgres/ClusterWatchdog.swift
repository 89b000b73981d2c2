import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A shell that stops a throwaway cluster and removes its directory once the process that started it is
/// gone, however it went: `SIGKILL`, `timeout`, Ctrl-C or a crash.
///
/// It learns of its owner's death through a lifeline: it reads one end of a socket pair whose other end
/// only the owner holds, and the read returns end-of-file when the owner's end closes, which the kernel
/// does when the owner dies. The owner's end is close-on-exec from its creation, so no other child (not
/// `pg_ctl`, not the postmaster) inherits it and keeps the line open. The shell runs in a session of its
/// own: a signal to the owner's process group (Ctrl-C in a terminal, `timeout`) does not reach it, as it
/// does not reach the postmaster, which `pg_ctl` puts in its own session too.
final class ClusterWatchdog: Sendable {
    private let lifeline: Mutex<Int32>
    private let pid: pid_t

    private init(lifeline: Int32, pid: pid_t) {
        self.lifeline = Mutex(lifeline)
        self.pid = pid
    }

    /// Starts the watchdog of a cluster in `directory`.
    ///
    /// - Parameters:
    ///   - directory: the cluster's directory, removed when the owner dies; if it is gone by then (the
    ///     owner stopped the cluster), the watchdog does nothing.
    ///   - stopCommand: stops the server at once (`pg_ctl stop -m immediate`); its failure is ignored, as
    ///     when no server was started yet.
    static func start(directory: String, stopCommand: [String]) throws -> ClusterWatchdog {
        var ends: [Int32] = [-1, -1]
        // Atomically close-on-exec: a process spawned by another thread in between must not inherit it.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw EmbeddedPostgresError(step: "start the watchdog", message: String(cString: strerror(errno)))
        }
        let (owned, watched) = (ends[0], ends[1])
        defer { close(watched) }
        // `cd /`: the stop command may run as `postgres`, which cannot read root's working directory.
        // `read` returns non-zero at end-of-file; nothing is ever written.
        let script = """
            cd /
            while read -r _; do :; done
            [ -d \(quoteShell(directory)) ] || exit 0
            \(stopCommand.map(quoteShell).joined(separator: " ")) >/dev/null 2>&1
            rm -rf \(quoteShell(directory))
            """
        do {
            let pid = try ChildProcess.spawn(["/bin/sh", "-c", script], input: watched, output: "/dev/null", group: .newSession)
            return ClusterWatchdog(lifeline: owned, pid: pid)
        } catch {
            close(owned)
            throw EmbeddedPostgresError(step: "start the watchdog", message: error.description)
        }
    }

    /// Cuts the lifeline and waits for the watchdog to exit: at once when the owner has removed the
    /// directory, else after stopping the server and removing it.
    func release() {
        let released = lifeline.withLock { end -> Bool in
            guard end >= 0 else { return false }
            close(end)
            end = -1
            return true
        }
        guard released else { return }
        _ = ChildProcess.waitForExit(pid)
    }

    static func quoteShell(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
