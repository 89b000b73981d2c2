import Crypto
import Foundation
import PaperboyTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `paperboy apns-sim` and `paperboy push` as an operator runs them: real processes on loopback.
@Suite("paperboy push and apns-sim")
struct APNsCommandTests {
    /// The `paperboy` binary that `swift test` built beside the test bundle.
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("paperboy")
    static var built: Bool { FileManager.default.isExecutableFile(atPath: binary.path) }

    struct Run {
        var status: Int32
        var output: String
        var error: String
    }

    static func run(_ arguments: [String]) async throws -> Run {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = await onDedicatedThread { output.fileHandleForReading.readDataToEndOfFile() }
        let err = await onDedicatedThread { error.fileHandleForReading.readDataToEndOfFile() }
        try await process.exited()
        return Run(status: process.terminationStatus, output: String(decoding: out, as: UTF8.self), error: String(decoding: err, as: UTF8.self))
    }

    static func keyFile() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("AuthKey_KEY1234567.p8")
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: file)
        return file
    }

    @Test("push prints each outcome as JSON and exits 1 when one was rejected; the simulator reports its counts on SIGTERM", .enabled(if: built))
    func pushAgainstSimulator() async throws {
        let key = try Self.keyFile()
        defer { try? FileManager.default.removeItem(at: key.deletingLastPathComponent()) }
        let simulator = Process()
        simulator.executableURL = Self.binary
        simulator.arguments = [
            "apns-sim", "--port", "0", "--key-file", key.path, "--key-id", "KEY1234567", "--token-outcome", "dead=410:Unregistered", "--json",
        ]
        let simulatorOutput = Pipe()
        simulator.standardOutput = simulatorOutput
        try simulator.run()
        defer { if simulator.isRunning { simulator.terminate() } }
        var line = Data()
        while true {
            let byte = await onDedicatedThread { simulatorOutput.fileHandleForReading.readData(ofLength: 1) }
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        let url = try #require(String(decoding: line, as: UTF8.self).split(separator: " ").last.map(String.init))
        #expect(url.hasPrefix("http://127.0.0.1:"))

        let good = String(repeating: "ab", count: 32)
        let dead = "dead" + String(repeating: "0", count: 60)
        let push = try await Self.run([
            "push", "--endpoint", url, "--key-file", key.path, "--key-id", "KEY1234567", "--team-id", "TEAM123456",
            "--topic", "com.example.news", "--data", #"{"edition": "2026-11-23-morning"}"#, "--json", good, dead,
        ])
        #expect(push.status == 1)
        let lines: [[String: Any]?] = push.output.split(separator: "\n").map { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        #expect(lines.count == 2)
        #expect(lines[0]?["token"] as? String == good)
        #expect(lines[0]?["outcome"] as? String == "accepted")
        #expect(lines[1]?["outcome"] as? String == "rejected")
        #expect(lines[1]?["status"] as? Int == 410)
        #expect(lines[1]?["reason"] as? String == "Unregistered")
        #expect(lines[1]?["timestamp"] != nil)

        kill(simulator.processIdentifier, SIGTERM)
        let report = await onDedicatedThread { simulatorOutput.fileHandleForReading.readDataToEndOfFile() }
        try await simulator.exited()
        #expect(simulator.terminationStatus == 0)
        let stats = try #require(try JSONSerialization.jsonObject(with: report) as? [String: Any])
        #expect(stats["accepted"] as? Int == 1)
        #expect((stats["rejected"] as? [String: Int])?["Unregistered"] == 1)
    }

    @Test("push names the flag at fault and prints no key material", .enabled(if: built))
    func badFlags() async throws {
        let missing = try await Self.run([
            "push", "--endpoint", "http://127.0.0.1:9", "--key-file", "/nonexistent/AuthKey.p8", "--key-id", "KEY1234567",
            "--team-id", "TEAM123456", "--topic", "com.example.news", String(repeating: "ab", count: 32),
        ])
        #expect(missing.status != 0)
        #expect(missing.error.contains("--key-file"))
        #expect(missing.error.contains("/nonexistent/AuthKey.p8"))

        let key = try Self.keyFile()
        defer { try? FileManager.default.removeItem(at: key.deletingLastPathComponent()) }
        let badToken = try await Self.run([
            "push", "--endpoint", "http://127.0.0.1:9", "--key-file", key.path, "--key-id", "KEY1234567", "--team-id", "TEAM123456",
            "--topic", "com.example.news", "not-a-token",
        ])
        #expect(badToken.status != 0)
        #expect(badToken.error.contains("not-a-token"))

        let badEndpoint = try await Self.run([
            "push", "--endpoint", "ftp://x", "--key-file", key.path, "--key-id", "KEY1234567", "--team-id", "TEAM123456",
            "--topic", "com.example.news", String(repeating: "ab", count: 32),
        ])
        #expect(badEndpoint.status != 0)
        #expect(badEndpoint.error.contains("--endpoint"))
        let pem = try String(contentsOf: key, encoding: .utf8)
        let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? "unlikely"
        #expect(!(missing.error + badToken.error + badEndpoint.error).contains(body))
    }
}
