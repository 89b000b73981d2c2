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
/// connections on loopback.
@Suite("Idle connections")
struct IdleConnectionTests {
    /// A TCP connection to 127.0.0.1:`port`, blocking until it is established; nil when it could not be made.
    static func connect(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Whether the server closed `fd`: a read finds the end of the stream (or a reset) without waiting.
    static func closedByServer(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let read = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
        return read == 0 || (read < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
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
            var idle: [Int32] = []
            var trickling: [Int32] = []
            defer { for fd in idle + trickling { close(fd) } }
            for _ in 0..<2_000 {
                guard let fd = Self.connect(port: port) else { break }
                idle.append(fd)
            }
            #expect(idle.count == 2_000, "every connection made")
            let head = Array("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
            for _ in 0..<100 {
                guard let fd = Self.connect(port: port) else { break }
                _ = head.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                trickling.append(fd)
            }
            #expect(trickling.count == 100)
            // A real client, meanwhile: served at once.
            let asked = ContinuousClock.now
            let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health/live")!)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(ContinuousClock.now - asked < .seconds(2), "served while 2,100 sockets are open")
            // One more header line every second keeps a trickling socket active by the bytes, not by a request part:
            // it is closed too.
            var open = idle + trickling
            for _ in 0..<30 where !open.isEmpty {
                try await Task.sleep(for: .seconds(1))
                for fd in trickling where open.contains(fd) {
                    _ = Array("X-Slow: 1\r\n".utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                open.removeAll(where: Self.closedByServer)
            }
            #expect(open.isEmpty, "\(open.count) of 2,100 sockets still open 30 s after a 2 s idle timeout")
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
}
