import Foundation
import PaperboyTesting
import Testing

/// `serve --tls-cert`: HTTPS as a client meets it, with OpenSSL's own client.
@Suite("serve over TLS")
struct TLSTests {
    static let openssl = URL(fileURLWithPath: "/usr/bin/openssl")

    @Test(
        "serve --tls-cert speaks TLS 1.2 and 1.3 and refuses TLS 1.0 and 1.1 (RFC 8996), which a client that offers only those cannot negotiate",
        .enabled(if: PaperboyBinary.isBuilt && FileManager.default.isExecutableFile(atPath: openssl.path), "paperboy and openssl"),
        .timeLimit(.minutes(3))
    )
    func minimumVersion() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let made = try await CommandRun.run(
            Self.openssl,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                "-subj", "/CN=localhost",
            ],
            environment: ProcessInfo.processInfo.environment
        )
        try #require(made.status == 0, "\(made.output)")

        try await TestDatabase.with { db in
            let log = directory.appendingPathComponent("serve.log")
            let serve = try PaperboyBinary.start(
                ["serve", "--port", "0", "--no-dispatch", "--no-scheduler", "--tls-cert", cert, "--tls-key", key],
                environment: ["DATABASE_URL": db.configuration.testURL, "PAPERBOY_ADMIN_TOKEN": "admin-token-for-the-test-000"],
                log: log
            )
            defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
            let port = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            /// `openssl s_client` offering only `version`, with the security level that lets it offer the old ones.
            func handshake(_ version: String) async throws -> String {
                try await CommandRun.run(
                    Self.openssl,
                    ["s_client", "-connect", "127.0.0.1:\(port)", version, "-cipher", "DEFAULT@SECLEVEL=0"],
                    environment: ProcessInfo.processInfo.environment
                ).output
            }
            for version in ["-tls1_2", "-tls1_3"] {
                let output = try await handshake(version)
                let expected = version == "-tls1_2" ? "Protocol  : TLSv1.2" : "TLSv1.3"
                #expect(output.contains(expected), "\(version): \(output)")
            }
            for version in ["-tls1", "-tls1_1"] {
                let output = try await handshake(version)
                #expect(!output.contains("Cipher is ECDHE"), "\(version) negotiated: \(output)")
                // Refused by the server (an alert naming the version), not given up by the client before it asked.
                #expect(output.contains("alert protocol version"), "\(version): \(output)")
            }
            kill(serve.processIdentifier, SIGTERM)
            #expect(await serve.exited(within: .seconds(20)))
        }
    }
}
