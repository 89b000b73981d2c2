import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTLS
import HummingbirdTesting
import Logging
import NIOCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Synchronization
import Testing

@testable import PaperboyAPI

/// A clock the tests move by hand: no sleeping.
final class ManualClock: Sendable {
    private let seconds = Mutex<Double>(1000)
    func advance(_ by: Double) { seconds.withLock { $0 += by } }
    var now: @Sendable () -> Double { { [self] in seconds.withLock { $0 } } }
}

@Suite("Security: rate limits, body limits, TLS")
struct SecurityTests {
    static let clientAddress = HTTPField.Name("X-Paperboy-Client-Address")!

    /// An app with a key and the morning publication, served with `configure` applied.
    static func withApp(
        _ configure: @escaping @Sendable (inout APIConfiguration) -> Void,
        _ body: @escaping @Sendable (String, TestDatabase, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await TestDatabase.with { db in
            let (app, key) = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            )
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            var configuration = APIConfiguration(host: "127.0.0.1", port: 0, adminToken: APIFixture.adminToken)
            configuration.readinessTimeout = .seconds(30)
            configure(&configuration)
            let application = buildApplication(client: db.client, configuration: configuration, logger: db.logger)
            try await application.test(.router) { client in try await body(key.secret, db, client) }
        }
    }

    @Test("device routes answer 429 rate_limited with Retry-After over the burst, per address, until the bucket refills")
    func rateLimit() async throws {
        let clock = ManualClock()
        try await Self.withApp(
            { $0.deviceRateLimit = DeviceRateLimit(burst: 2, perSecond: 0.5, now: clock.now) },
            { key, _, client in
                let here: HTTPFields = [Self.clientAddress: "203.0.113.7"]
                for _ in 0..<2 {
                    let allowed = try await client.send(.get, "/v1/devices/\(token())", key: key, headers: here)
                    #expect(allowed.status == .notFound)
                }
                let limited = try await client.send(.put, "/v1/devices/\(token())", key: key, headers: here, body: validRegistration)
                #expect(limited.status == .tooManyRequests)
                #expect(limited.headers[.retryAfter] == "2")
                let error = try limited.apiError()
                #expect(error.code == .rateLimited)
                #expect(error.field == nil)
                #expect(try limited.json()["error"] as? [String: Any] != nil)
                #expect(try await client.send(.get, "/v1/editions/latest?publication=morning", key: key, headers: here).status == .tooManyRequests)

                // Another address has its own bucket.
                let elsewhereAddress: HTTPFields = [Self.clientAddress: "198.51.100.1"]
                let elsewhere = try await client.send(.get, "/v1/devices/\(token())", key: key, headers: elsewhereAddress)
                #expect(elsewhere.status == .notFound)

                // Half a token later it is still limited, and says how long is left; a token later it is not.
                clock.advance(1)
                let stillLimited = try await client.send(.get, "/v1/devices/\(token())", key: key, headers: here)
                #expect(stillLimited.status == .tooManyRequests)
                #expect(stillLimited.headers[.retryAfter] == "1")
                clock.advance(1)
                #expect(try await client.send(.get, "/v1/devices/\(token())", key: key, headers: here).status == .notFound)

                // Wrong keys count too (the limit comes before the key is looked up); operations routes do not.
                #expect(try await client.send(.get, "/v1/devices/\(token())", key: "wrong", headers: here).status == .tooManyRequests)
                #expect(try await client.send(.get, "/v1/devices/\(token())", key: "wrong", headers: elsewhereAddress).status == .unauthorized)
                #expect(try await client.send(.get, "/health/live", headers: here).status == .ok)
            }
        )
    }

    @Test("without a rate limit configured nothing is limited")
    func noRateLimit() async throws {
        try await Self.withApp(
            { $0.deviceRateLimit = nil },
            { key, _, client in
                for _ in 0..<80 {
                    let answer = try await client.send(.get, "/v1/devices/\(token())", key: key)
                    #expect(answer.status == .notFound)
                }
            }
        )
    }

    @Test(
        "a client over its limit all along stays limited while 100 new clients pass, and the limiter never remembers more than maxClients (issue 48, item 2: O(1) a request)"
    )
    func busyClientKept() {
        let clock = ManualClock()
        let limiter = RateLimiter(limit: DeviceRateLimit(burst: 1, perSecond: 1, maxClients: 10, now: clock.now))
        #expect(limiter.acquire("busy") == nil)
        for index in 0..<100 {
            #expect(limiter.acquire("new \(index)") == nil)
            if index % 4 == 0 { #expect(limiter.acquire("busy") == 1, "still limited after \(index + 1) new clients") }
            #expect(limiter.count <= 10)
        }
    }

    @Test("the limiter forgets the clients unseen longest first and never remembers more than maxClients")
    func boundedMemory() {
        let clock = ManualClock()
        let limiter = RateLimiter(limit: DeviceRateLimit(burst: 1, perSecond: 1, maxClients: 3, now: clock.now))
        for index in 0..<10 {
            #expect(limiter.acquire("client \(index)") == nil)
            #expect(limiter.count <= 3)
        }
        #expect(limiter.acquire("client 9") == 1, "the last client is remembered and limited")
        clock.advance(5)
        for index in 10..<13 { #expect(limiter.acquire("client \(index)") == nil) }
        #expect(limiter.count <= 3)
    }

    @Test("IPv6 clients count by their /64; IPv4-mapped ones as IPv4")
    func addressKeys() throws {
        let a = try SocketAddress(ipAddress: "2001:db8:1:2::1", port: 1)
        let b = try SocketAddress(ipAddress: "2001:db8:1:2:ffff::9", port: 2)
        let c = try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 1)
        #expect(ClientAddress.key(for: a) == ClientAddress.key(for: b))
        #expect(ClientAddress.key(for: a) != ClientAddress.key(for: c))
        #expect(ClientAddress.key(for: try SocketAddress(ipAddress: "::ffff:192.0.2.1", port: 1)) == "192.0.2.1")
        #expect(ClientAddress.key(for: try SocketAddress(ipAddress: "192.0.2.1", port: 1)) == "192.0.2.1")
    }

    @Test("bodies nested deeper than 32 levels answer 400 naming body, before decoding")
    func jsonDepth() async throws {
        try await Self.withApp(
            { _ in },
            { key, _, client in
                func nested(_ depth: Int) -> String {
                    validRegistration.replacingOccurrences(
                        of: "\"locale\": \"ja_JP\"",
                        with: "\"extra\": " + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1)
                            + ", \"locale\": \"ja_JP\""
                    )
                }
                let deep = try await client.send(.put, "/v1/devices/\(token())", key: key, body: nested(33))
                #expect(deep.status == .badRequest)
                let error = try deep.apiError()
                #expect(error.field == "body")
                #expect(error.message.contains("32"))

                let allowed = try await client.send(.put, "/v1/devices/\(token())", key: key, body: nested(32))
                #expect(allowed.status == .created, "32 levels (the object plus 31 arrays) are allowed; unknown fields are ignored")

                let inStrings = validRegistration.replacingOccurrences(
                    of: "\"ja_JP\"",
                    with: "\"" + String(repeating: "[{\\\"", count: 40) + "\""
                )
                let strings = try await client.send(.put, "/v1/devices/\(token("cd"))", key: key, body: inStrings)
                if strings.status == .badRequest {
                    #expect(try strings.apiError().field != "body", "brackets in strings do not nest")
                }
            }
        )
        #expect(Array("[[[\"]]]]]]]]\"]".utf8).jsonNestingExceeds(3) == false)
        #expect(Array("[[[[\"\\\"\"]]]]".utf8).jsonNestingExceeds(3) == true)
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("APNsTests/Fixtures")

    @Test(
        "with TLS configured the API answers HTTPS, and the rate limiter keys on the connection's address, not a header",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl is installed")
    )
    func tls() async throws {
        let cert = Self.fixtures.appendingPathComponent("simulator-cert.pem").path
        let keyFile = Self.fixtures.appendingPathComponent("simulator-key.pem").path
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(cert).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
        )
        try await TestDatabase.with { db in
            let (_, key) = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            )
            var configuration = APIConfiguration(host: "127.0.0.1", port: 0)
            configuration.tls = tls
            configuration.deviceRateLimit = DeviceRateLimit(burst: 1, perSecond: 0.001)
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            let application = buildApplication(client: db.client, configuration: configuration, logger: db.logger) { port in
                continuation.yield(port)
                continuation.finish()
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await application.run() }
                var port = 0
                for await value in ports { port = value }
                defer { group.cancelAll() }

                let live = try await Self.curl(["--cacert", cert, "https://127.0.0.1:\(port)/health/live"])
                #expect(live.status == 0, "\(live.output)")
                #expect(live.output.hasSuffix("200"), "\(live.output)")

                let plain = try await Self.curl(["http://127.0.0.1:\(port)/health/live"])
                #expect(!plain.output.hasSuffix("200"), "plain HTTP is not served")

                var codes: [String] = []
                for spoofed in ["192.0.2.1", "192.0.2.2"] {
                    let answer = try await Self.curl([
                        "--cacert", cert, "-H", "X-API-Key: \(key.secret)", "-H", "X-Paperboy-Client-Address: \(spoofed)",
                        "https://127.0.0.1:\(port)/v1/devices/\(token())",
                    ])
                    codes.append(String(answer.output.suffix(3)))
                }
                #expect(codes == ["404", "429"], "a client cannot pick its own bucket with a header")
            }
        }
    }

    /// Runs curl, answering its exit status and output followed by the HTTP status.
    static func curl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = await onDedicatedThread { pipe.fileHandleForReading.readDataToEndOfFile() }
        try await process.exited()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
