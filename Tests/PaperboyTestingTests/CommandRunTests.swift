import Foundation
import Testing

@testable import PaperboyTesting

#if canImport(Glibc)
import Glibc
#endif

/// What ``CommandRun`` falls back on when Foundation does not see a child's exit: the kernel's word.
@Suite("CommandRun")
struct CommandRunTests {
    @Test(
        "a child that exited and is not reaped yet is read from /proc with its exit code or its signal; a running or reaped one is not",
        .timeLimit(.minutes(1))
    )
    func zombieStatus() async throws {
        func spawn(_ script: String) throws -> pid_t {
            var pid: pid_t = 0
            let words: [String] = ["/bin/sh", "-c", script]
            let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            try #require(posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0)
            return pid
        }
        func reap(_ pid: pid_t) {
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
        func zombie(_ pid: pid_t) async throws -> Int32? {
            // Until it has exited (bounded by the time limit).
            while CommandRun.zombieStatus(pid) == nil { try await Task.sleep(for: .milliseconds(20)) }
            return CommandRun.zombieStatus(pid)
        }

        let exited = try spawn("exit 3")
        #expect(try await zombie(exited) == 3)
        reap(exited)
        #expect(CommandRun.zombieStatus(exited) == nil, "reaped: gone from /proc")

        let killed = try spawn("kill -9 $$")
        #expect(try await zombie(killed) == SIGKILL)
        reap(killed)

        let running = try spawn("sleep 5")
        try await Task.sleep(for: .milliseconds(100))
        #expect(CommandRun.zombieStatus(running) == nil, "still running")
        kill(running, SIGKILL)
        reap(running)
    }
}
