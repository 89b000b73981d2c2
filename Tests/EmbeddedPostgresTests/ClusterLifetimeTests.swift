import EmbeddedPostgres
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway cluster does not outlive the process that started it, however that process dies: here
/// `paperboy serve` without a database (which starts one) is killed without a chance to stop it.
@Suite("Throwaway clusters die with their owner")
struct ClusterLifetimeTests {
    /// The `paperboy` binary that `swift build --build-tests` built beside the test bundle.
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("paperboy").path
    static let runnable =
        FileManager.default.isExecutableFile(atPath: binary) && (try? PostgresBinaries.locate()) != nil

    @Test(
        "SIGKILL to the owner: within 5 s the postmaster is gone, its port refuses connections, its directory is removed",
        .enabled(if: runnable, "needs the paperboy binary and PostgreSQL's server programs")
    )
    func ownerKilled() async throws {
        try await Self.killOwner { owner in kill(owner, SIGKILL) }
    }

    @Test(
        "SIGKILL to the owner's whole process group (timeout -s KILL, a terminal's job): the cluster goes with it within 5 s",
        .enabled(if: runnable, "needs the paperboy binary and PostgreSQL's server programs")
    )
    func groupKilled() async throws {
        try await Self.killOwner { owner in kill(-owner, SIGKILL) }
    }

    /// Starts `paperboy serve` in a process group of its own, waits until it serves, kills it with `kill`,
    /// and checks the cluster is cleaned up within 5 seconds.
    private static func killOwner(_ kill: (pid_t) -> Int32) async throws {
        let log = NSTemporaryDirectory() + "paperboy-owner-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        // A process group of its own, so that the test can signal the group without signalling itself; no
        // database configured, so that serve starts its own cluster.
        let unset: Set = ["DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "LOG_FORMAT"]
        let owner = try ChildProcess.spawn(
            [binary, "serve", "--port", "0", "--no-dispatch", "--no-scheduler"],
            output: log,
            group: .newProcessGroup,
            environment: ProcessInfo.processInfo.environment.filter { !unset.contains($0.key) }
        )
        var reaped = false
        defer {
            if !reaped {
                _ = Glibc.kill(-owner, SIGKILL)
                var status: Int32 = 0
                waitpid(owner, &status, 0)
            }
        }

        // Bounded: starting a cluster on two busy cores can take a while, but not 2 minutes.
        var text = ""
        for _ in 0..<1200 {
            text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if text.contains("listening") { break }
            var status: Int32 = 0
            try #require(waitpid(owner, &status, WNOHANG) == 0, "serve exited early: \(text)")
            try await Task.sleep(for: .milliseconds(100))
        }
        try #require(text.contains("listening"), "serve did not start: \(text)")
        let directory = try #require(
            text.firstMatch(of: /directory=(\S*paperboy-pg-[A-Za-z0-9]+)/).map { String($0.1) },
            "the log names the cluster's directory: \(text)"
        )
        let pidFile = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8).split(separator: "\n")
        let postmaster = try #require(pidFile.first.flatMap { pid_t($0) })
        let port = try #require(pidFile.count > 3 ? Int(pidFile[3]) : nil)
        #expect(isRunning(postmaster) && acceptsConnections(port: port), "the cluster was up before the kill")

        #expect(kill(owner) == 0)
        var status: Int32 = 0
        waitpid(owner, &status, 0)
        reaped = true

        for _ in 0..<50 {
            if !isRunning(postmaster) && !acceptsConnections(port: port) && !FileManager.default.fileExists(atPath: directory) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(!isRunning(postmaster), "postmaster \(postmaster) still runs")
        #expect(!acceptsConnections(port: port), "port \(port) still accepts connections")
        #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is still there")
    }

    /// Whether `pid` is a live process; a zombie (an exited orphan not yet reaped) is not.
    private static func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state != "Z" && state != "X"
    }

    private static func acceptsConnections(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
