import AsyncHTTPClient
import FCMSimulator
import Foundation
import NIOCore
import NIOHTTP1
import PaperboyTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `paperboy fcm-sim` as the benchmark and the demo run it: a real process on loopback.
@Suite("paperboy fcm-sim")
struct FCMSimCommandTests {
    /// The `paperboy` binary that `swift test` built beside the test bundle.
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("paperboy")
    static var built: Bool { FileManager.default.isExecutableFile(atPath: binary.path) }

    @Test(
        "writes a working service account, prints its URLs, answers a client, and prints its stats on SIGINT without the key",
        .enabled(if: built),
        .timeLimit(.minutes(1))
    )
    func processRun() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-sim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("throwaway-service-account.json").path
        let simulator = Process()
        simulator.executableURL = Self.binary
        simulator.arguments = [
            "fcm-sim", "--port", "0", "--write-service-account", file, "--project-id", "demo", "--token-outcome", "dead-=UNREGISTERED", "--json",
        ]
        let output = Pipe()
        simulator.standardOutput = output
        try simulator.run()
        defer { if simulator.isRunning { simulator.terminate() } }
        var lines: [String] = []
        var line = Data()
        while lines.count < 3 {
            let byte = await onDedicatedThread { output.fileHandleForReading.readData(ofLength: 1) }
            if byte.isEmpty { break }
            if byte == Data("\n".utf8) {
                lines.append(String(decoding: line, as: UTF8.self))
                line = Data()
            } else {
                line.append(byte)
            }
        }
        #expect(
            lines.count == 3 && lines[0].hasPrefix("fcm-sim wrote service account") && lines[1].hasPrefix("fcm-sim listening on http://127.0.0.1:")
        )
        let url = try #require(lines.dropFirst().first?.split(separator: " ").last.map(String.init))
        let account = try FCMSimulator.ServiceAccount.load(file: file)
        #expect(lines[2] == "fcm-sim token endpoint \(account.tokenURI)")
        #expect(account.tokenURI == url + "/token")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        var tokenRequest = HTTPClientRequest(url: account.tokenURI)
        tokenRequest.method = .POST
        tokenRequest.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let assertion = try Assertion(account: account, now: Date()).signed()
        tokenRequest.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let tokenAnswer = try await HTTPClient.shared.execute(tokenRequest, timeout: .seconds(10))
        let tokenBody = try await tokenAnswer.body.collect(upTo: 1 << 16)
        let accessToken = try #require(
            (try JSONSerialization.jsonObject(with: Data(tokenBody.readableBytesView)) as? [String: Any])?["access_token"] as? String
        )
        var statuses: [Int] = []
        for target in [Body.androidToken, "dead-1"] {
            var send = HTTPClientRequest(url: url + "/v1/projects/demo/messages:send")
            send.method = .POST
            send.headers.add(name: "content-type", value: "application/json")
            send.headers.add(name: "authorization", value: "Bearer \(accessToken)")
            send.body = .bytes(ByteBuffer(string: Body.dataMessage(token: target)))
            let answer = try await HTTPClient.shared.execute(send, timeout: .seconds(10))
            _ = try await answer.body.collect(upTo: 1 << 16)
            statuses.append(Int(answer.status.code))
        }
        #expect(statuses == [200, 404])

        kill(simulator.processIdentifier, SIGINT)
        let report = await onDedicatedThread { output.fileHandleForReading.readDataToEndOfFile() }
        try await simulator.exited()
        #expect(simulator.terminationStatus == 0)
        let stats = try #require(try JSONSerialization.jsonObject(with: report) as? [String: Any])
        #expect(stats["accepted"] as? Int == 1)
        #expect(stats["rejected"] as? [String: Int] == ["UNREGISTERED": 1])
        #expect(stats["tokenFetches"] as? [String: Int] == [account.clientEmail: 1])
        let printed = lines.joined() + String(decoding: report, as: UTF8.self)
        #expect(!printed.contains("PRIVATE KEY") && !printed.contains(accessToken))
    }
}
