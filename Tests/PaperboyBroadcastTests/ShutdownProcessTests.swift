import EmbeddedPostgres
import Foundation
import Logging
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `paperboy serve` and `paperboy worker` whose PostgreSQL goes away under them still stop on SIGTERM,
/// within seconds and with status 0, as Kubernetes expects of a pod it deletes: PostgreSQL stopped at once
/// (`pg_ctl stop -m immediate`, as a crash does: connections refused), or hung (every PostgreSQL process
/// stopped with SIGSTOP, as a frozen host or a network partition is: nothing refused, nothing answered).
@Suite("paperboy serve and worker stop on SIGTERM with their PostgreSQL gone")
struct ShutdownProcessTests {
    /// The most a stop may take: the processes give their services 10 s to stop gracefully, then cancel
    /// what is left (5 s at most), well inside Kubernetes' 30 s.
    static let limit: Duration = .seconds(20)

    enum Outage: String, CustomTestStringConvertible, CaseIterable {
        case stopped
        case hung
        var testDescription: String { rawValue }
    }

    @Test(
        "serve: PostgreSQL stopped or hung, then SIGTERM: exits 0 within 20 s",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .timeLimit(.minutes(3)),
        arguments: Outage.allCases
    )
    func serve(_ outage: Outage) async throws {
        // The scheduler leads (it holds a session) and the dispatcher polls: every waiter on the database
        // is running when it goes.
        try await Self.stop(["serve", "--port", "0"], ready: "scheduler: this process leads", after: outage)
    }

    @Test(
        "worker: PostgreSQL stopped or hung, then SIGTERM: exits 0 within 20 s",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .timeLimit(.minutes(3)),
        arguments: Outage.allCases
    )
    func worker(_ outage: Outage) async throws {
        try await Self.stop(["worker", "--port", "0"], ready: "dispatcher started", after: outage)
    }

    /// Starts `paperboy arguments` on a migrated database of a cluster of its own, waits for `ready` in its
    /// log, takes PostgreSQL away, waits for the process to notice, sends SIGTERM and times the exit.
    static func stop(_ arguments: [String], ready: String, after outage: Outage) async throws {
        let cluster = try await EmbeddedPostgres.start(logger: Logger(label: "paperboy.shutdown-test"))
        let frozen = FrozenProcesses()
        do {
            try await run(arguments, ready: ready, outage: outage, cluster: cluster, frozen: frozen)
        } catch {
            frozen.thaw()
            // Stopped already, after `stopped`: the directory and the watchdog go either way.
            try? await cluster.stop()
            throw error
        }
        frozen.thaw()
        try? await cluster.stop()
    }

    private static func run(
        _ arguments: [String],
        ready: String,
        outage: Outage,
        cluster: EmbeddedPostgres,
        frozen: FrozenProcesses
    ) async throws {
        try await cluster.createDatabase("paperboy")
        let url = cluster.url(database: "paperboy")
        let logger = Logger(label: "paperboy.shutdown-test")
        let client = try DatabaseConfiguration(url: url).makeClient(logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            await client.start(in: &group)
            defer { group.cancelAll() }
            try await Migrator().migrate(client: client, logger: logger)
        }

        let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-shutdown-\(UUID().uuidString).log")
        let process = try PaperboyBinary.start(arguments, environment: ["DATABASE_URL": url, "PAPERBOY_ADMIN_TOKEN": nil], log: log)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        func output() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        let started = ContinuousClock.now
        while !output().contains(ready) {
            guard process.isRunning, ContinuousClock.now - started < .seconds(60) else {
                Issue.record("\(arguments[0]) did not log \"\(ready)\" within 60 s:\n\(output())")
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }

        switch outage {
        case .stopped:
            try EmbeddedPostgres.runTool(
                cluster.binDirectory + "/pg_ctl",
                ["-D", cluster.directory + "/data", "-m", "immediate", "-w", "-t", "60", "stop"],
                as: geteuid() == 0 ? "postgres" : nil,
                step: "pg_ctl stop -m immediate"
            )
        case .hung:
            try frozen.freeze(postmasterOf: cluster.directory + "/data")
        }
        // Long enough for the dispatcher's and the scheduler's next calls to find the database gone.
        try await Task.sleep(for: .seconds(3))
        #expect(process.isRunning, "\(arguments[0]) survives its database going away")

        let signalled = ContinuousClock.now
        kill(process.processIdentifier, SIGTERM)
        let exited = await process.exited(within: limit)
        let took = ContinuousClock.now - signalled
        let lines = output().split(separator: "\n").suffix(30).joined(separator: "\n")
        print("[shutdown] \(arguments[0]) with PostgreSQL \(outage.rawValue): exited \(exited) \(took) after SIGTERM")
        #expect(exited, "\(arguments[0]) exits within \(limit) of SIGTERM; its last lines:\n\(lines)")
        guard exited else { return }
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0, "its last lines:\n\(lines)")
    }
}

/// PostgreSQL's processes stopped with SIGSTOP, and continued again on ``thaw()``.
final class FrozenProcesses: Sendable {
    private let pids = Mutex<[pid_t]>([])

    /// Stops the postmaster whose data directory is `data` and every process it started.
    func freeze(postmasterOf data: String) throws {
        let pidFile = try String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8)
        guard let line = pidFile.split(separator: "\n").first, let postmaster = pid_t(line) else {
            throw FaultTestError("no postmaster pid in \(data)/postmaster.pid")
        }
        let all = [postmaster] + Self.children(of: postmaster)
        pids.withLock { $0 = all }
        for pid in all { kill(pid, SIGSTOP) }
    }

    func thaw() {
        for pid in pids.withLock({ $0 }) { kill(pid, SIGCONT) }
    }

    /// The processes whose parent is `parent`, from /proc.
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8) else { return nil }
            // `pid (command) state ppid …`: the command may hold spaces and parentheses, so read after the last `)`.
            guard let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }
}
