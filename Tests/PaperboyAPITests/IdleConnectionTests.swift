import Foundation
import PaperboyTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `serve --idle-timeout` against idle and trickling sockets (slowloris), with a real `serve` and real TCP
/// connections on loopback. The sockets are a child process's (Python's): 2,000 descriptors open in the test process
/// made Foundation's `Process.run` crash in the tests spawning children beside it. One test at a time: each holds
/// a real serve and thousands of sockets, and the served-meanwhile check measures time.
@Suite("Idle connections", .serialized)
struct IdleConnectionTests {
    /// Opens 2,000 idle connections and 100 that send a request's head a line a second, prints `open N`, then watches
    /// them for up to 30 s and prints `still open N`.
    static let sockets = """
        import socket, sys, time
        port = int(sys.argv[1])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2000)]
        trickle = []
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /health/live HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n")
            trickle.append(s)
        print("open", len(idle) + len(trickle), flush=True)
        left = idle + trickle
        deadline = time.time() + 30
        while left and time.time() < deadline:
            time.sleep(1)
            still = []
            for s in left:
                if s in trickle:
                    try:
                        s.sendall(b"X-Slow: 1\\r\\n")
                    except OSError:
                        continue
                s.setblocking(False)
                try:
                    if s.recv(1) != b"":
                        still.append(s)
                except BlockingIOError:
                    still.append(s)
                except OSError:
                    pass
            left = still
        print("still open", len(left), flush=True)
        """

    /// Starts `python3 -c script arguments…` with its output in a file of its own: the sockets are the child's, not
    /// the test process's. The caller kills it when done.
    static func python(_ script: String, arguments: [String]) throws -> (process: Process, output: URL) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-sockets-\(UUID().uuidString).txt")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        try? handle.close()
        return (process, output)
    }

    /// The number after `prefix` on a line of `file`, if printed yet.
    static func number(after prefix: String, in file: URL) -> Int? {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) }
    }

    @Test(
        "2,000 idle sockets and 100 that trickle a request's head (slowloris) are closed after --idle-timeout, and a real client is served meanwhile",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .timeLimit(.minutes(3))
    )
    func idleAndTricklingSocketsClosed() async throws {
        try await TestDatabase.with { db in
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
            let serve = try PaperboyBinary.start(
                ["serve", "--port", "0", "--idle-timeout", "2s", "--no-dispatch", "--no-scheduler"],
                environment: ["DATABASE_URL": db.configuration.testURL],
                log: log
            )
            defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
            let port = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            let (sockets, output) = try Self.python(Self.sockets, arguments: ["\(port)"])
            defer { if sockets.isRunning { kill(sockets.processIdentifier, SIGKILL) } }
            for _ in 0..<300 where Self.number(after: "open ", in: output) == nil && sockets.isRunning {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(Self.number(after: "open ", in: output) == 2_100, "\((try? String(contentsOf: output, encoding: .utf8)) ?? "")")
            // A real client, meanwhile: served at once.
            let asked = ContinuousClock.now
            let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health/live")!)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(ContinuousClock.now - asked < .seconds(2), "served while 2,100 sockets are open")
            for _ in 0..<450 where Self.number(after: "still open ", in: output) == nil && sockets.isRunning {
                try await Task.sleep(for: .milliseconds(100))
            }
            let still = Self.number(after: "still open ", in: output)
            #expect(still == 0, "sockets still open 30 s after a 2 s idle timeout: \((try? String(contentsOf: output, encoding: .utf8)) ?? "")")
            #expect(serve.isRunning)
            kill(serve.processIdentifier, SIGTERM)
            #expect(await serve.exited(within: .seconds(20)))
        }
    }

    @Test(
        "--idle-timeout is bounded where it is parsed: 0s, 2h and a word are refused naming the flag",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func idleTimeoutBounded() async throws {
        for value in ["0s", "2h", "soon"] {
            let run = try await PaperboyBinary.run(["serve", "--idle-timeout", value])
            #expect(run.status != 0)
            #expect(run.output.contains("--idle-timeout"), "\(run.output)")
        }
    }

    /// Opens 20 connections that each send a request's head announcing a 100 KB body and then trickle it a byte every
    /// 0.3 s (never idle), prints `open N`, watches them for up to `argv[2]` seconds and prints `still open N`.
    static let tricklingBodies = """
        import socket, sys, time
        port, watch = int(sys.argv[1]), float(sys.argv[2])
        conns = []
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /v1/receipts HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\nContent-Length: 100000\\r\\n\\r\\n")
            s.setblocking(False)
            conns.append(s)
        print("open", len(conns), flush=True)
        deadline = time.time() + watch
        while conns and time.time() < deadline:
            time.sleep(0.3)
            still = []
            for s in conns:
                try:
                    s.send(b" ")
                    while True:
                        data = s.recv(65536)
                        if data == b"":
                            raise ConnectionResetError
                except BlockingIOError:
                    still.append(s)
                except OSError:
                    pass
            conns = still
        print("still open", len(conns), flush=True)
        """

    @Test(
        "a body trickled a byte at a time is dropped after --body-timeout, though never idle; with an hour's timeout it stays",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .timeLimit(.minutes(3))
    )
    func tricklingBodiesDropped() async throws {
        try await TestDatabase.with { db in
            for (timeout, expected) in [("2s", 0), ("1h", 20)] {
                let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
                let serve = try PaperboyBinary.start(
                    ["serve", "--port", "0", "--body-timeout", timeout, "--idle-timeout", "60s", "--no-dispatch", "--no-scheduler"],
                    environment: ["DATABASE_URL": db.configuration.testURL],
                    log: log
                )
                defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
                let port = try #require(
                    try await PaperboyBinary.waitForPort(in: log, process: serve),
                    "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
                )
                let (sockets, output) = try Self.python(Self.tricklingBodies, arguments: ["\(port)", "8"])
                defer { if sockets.isRunning { kill(sockets.processIdentifier, SIGKILL) } }
                for _ in 0..<200 where Self.number(after: "still open ", in: output) == nil && sockets.isRunning {
                    try await Task.sleep(for: .milliseconds(100))
                }
                let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                #expect(Self.number(after: "open ", in: output) == 20, "\(text)")
                #expect(Self.number(after: "still open ", in: output) == expected, "--body-timeout \(timeout), 8 s of trickling: \(text)")
                // A real client meanwhile.
                let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health/live")!)
                #expect((response as? HTTPURLResponse)?.statusCode == 200)
                kill(serve.processIdentifier, SIGTERM)
                #expect(await serve.exited(within: .seconds(20)))
            }
        }
    }

    @Test(
        "--body-timeout is bounded where it is parsed: 0s, 2h and a word are refused naming the flag",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func bodyTimeoutBounded() async throws {
        for value in ["0s", "2h", "soon"] {
            let run = try await PaperboyBinary.run(["serve", "--body-timeout", value])
            #expect(run.status != 0)
            #expect(run.output.contains("--body-timeout"), "\(run.output)")
        }
    }
}
