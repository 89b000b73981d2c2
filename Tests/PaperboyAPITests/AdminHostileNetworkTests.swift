import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The admin API and the health routes against a hostile network (issue 35): guessing the admin token, reading
/// why a process is not ready, the audit of every change.
@Suite("The admin API against a hostile network")
struct AdminHostileNetworkTests {
    static let clientAddress = HTTPField.Name("X-Paperboy-Client-Address")!
    static let admin = EditionRoutesTests.admin

    @Test("wrong admin tokens are limited per address: the guesser waits (429), the right token from elsewhere does not")
    func adminGuessesLimited() async throws {
        // The throttle's clock stands still: 200 requests take minutes on a loaded machine, long enough for the first
        // backoffs to end on the wall clock and let a few more guesses be checked (11 of 10 once, here).
        let configure: @Sendable (inout APIConfiguration) -> Void = { $0.adminGuesses = GuessGuard(now: { 1_000 }) }
        try await APIFixture.with(configure: configure) { _, client in
            var statuses: [HTTPResponse.Status] = []
            for attempt in 0..<200 {
                statuses.append(
                    try await client.send(
                        .get,
                        "/v1/apps",
                        headers: [.authorization: "Bearer wrong-admin-token-\(attempt)", Self.clientAddress: "127.0.0.2"]
                    ).status
                )
            }
            #expect(statuses.filter { $0 == .unauthorized }.count <= 10)
            #expect(statuses.last == .tooManyRequests)
            let limited = try await client.send(
                .get,
                "/v1/apps",
                headers: [.authorization: "Bearer wrong-admin-token-x", Self.clientAddress: "127.0.0.2"]
            )
            #expect(limited.headers[.retryAfter] != nil)
            #expect(try limited.apiError().code == .rateLimited)
            var fromElsewhere = Self.admin
            fromElsewhere[Self.clientAddress] = "127.0.0.1"
            #expect(try await client.send(.get, "/v1/apps", headers: fromElsewhere).status == .ok)
        }
    }

    @Test("/health/ready tells a stranger up or down, never why")
    func readyWithoutReasons() async throws {
        let configure: @Sendable (inout APIConfiguration) -> Void = {
            $0.senderProblems = { ["app 1 (APNs): APNs key file /run/secrets/apns_key.p8 does not exist"] }
        }
        try await APIFixture.with(configure: configure) { _, client in
            let ready = try await client.send(.get, "/health/ready")
            #expect(ready.status == .serviceUnavailable)
            #expect(!ready.text.contains("/run/secrets"), "\(ready.text)")
            #expect(!ready.text.contains("APNs"), "\(ready.text)")
        }
        try await APIFixture.with(migrated: false) { _, client in
            let ready = try await client.send(.get, "/health/ready")
            #expect(ready.status == .serviceUnavailable)
            #expect(!ready.text.contains("0001"), "no migration names for strangers: \(ready.text)")
        }
    }

    @Test("every admin change is in the audit log, written with the change: role, name given, address, what")
    func adminChangesAudited() async throws {
        try await APIFixture.with { fixture, client in
            let edition = try await BroadcastRoutesTests.prepare(fixture, client)
            var headers = Self.admin
            headers[Self.clientAddress] = "192.0.2.10"
            headers[HTTPField.Name("X-Paperboy-Operator")!] = "ana"
            let started = try await client.send(.post, "/v1/broadcasts", headers: headers, body: #"{"edition": "\#(edition)", "window": 600}"#)
            #expect(started.status == .created)
            let id = try #require((try started.json()["broadcast"] as? [String: Any])?["id"] as? String)
            #expect(try await client.send(.post, "/v1/broadcasts/\(id)/cancel", headers: headers).status == .ok)
            #expect(try await client.send(.post, "/v1/apps/\(fixture.app.id)/keys", headers: headers).status == .created)

            let rows = try await fixture.db.client.query(
                "SELECT role, name, address, action, broadcast_id::text FROM audit_log ORDER BY id",
                logger: fixture.db.logger
            )
            var found: [(String, String?, String?, String, String?)] = []
            for try await row in rows.decode((String, String?, String?, String, String?).self) { found.append(row) }
            let actions = found.map(\.3)
            #expect(actions.contains("publish edition"), "\(actions)")
            #expect(actions.contains("start broadcast"), "\(actions)")
            #expect(actions.contains("cancel broadcast"), "\(actions)")
            #expect(actions.contains("add key"), "\(actions)")
            let cancel = try #require(found.first { $0.3 == "cancel broadcast" })
            #expect(cancel.0 == "admin")
            #expect(cancel.1 == "ana")
            #expect(cancel.2 == "192.0.2.10")
            #expect(cancel.4 == id)

            // `paperboy audit` reads the same log.
            if PaperboyBinary.isBuilt {
                let printed = try await PaperboyBinary.run(["audit", "--json", "--broadcast", id], database: fixture.db.configuration)
                #expect(printed.status == 0, "\(printed.output)")
                #expect(printed.output.contains(#""action":"cancel broadcast""#), "\(printed.output)")
                #expect(printed.output.contains(#""address":"192.0.2.10""#), "\(printed.output)")
            }
        }
    }

    @Test("a name longer than the documented 256 characters is refused before the change is made, naming the header")
    func overlongOperatorRefused() async throws {
        try await APIFixture.with { fixture, client in
            let added = try await client.send(.post, "/v1/origins", headers: Self.admin, body: #"{"name": "content-api", "capacity": 1000}"#)
            #expect(added.status == .created)
            var headers = Self.admin
            headers[HTTPField.Name("X-Paperboy-Operator")!] = String(repeating: "7", count: 257)
            let refused = try await client.send(.put, "/v1/origins/content-api", headers: headers, body: #"{"capacity": 2000}"#)
            #expect(refused.status == .badRequest)
            #expect(try refused.apiError().field == "X-Paperboy-Operator")
            let capacities = try await fixture.db.client.query("SELECT capacity::int8 FROM origins", logger: fixture.db.logger)
            for try await capacity in capacities.decode(Int.self) { #expect(capacity == 1000, "nothing changed") }
            headers[HTTPField.Name("X-Paperboy-Operator")!] = String(repeating: "7", count: 256)
            let accepted = try await client.send(.put, "/v1/origins/content-api", headers: headers, body: #"{"capacity": 2000}"#)
            #expect(accepted.status == .ok, "\(accepted.text)")
        }
    }

    @Test(
        "serve refuses an admin token under 16 characters naming the variable, and reads PAPERBOY_ADMIN_TOKEN_FILE itself",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .timeLimit(.minutes(3))
    )
    func adminTokenAtStart() async throws {
        try await TestDatabase.with { db in
            let short = try await PaperboyBinary.run(
                ["serve", "--port", "0", "--no-dispatch", "--no-scheduler"],
                environment: ["PAPERBOY_ADMIN_TOKEN": "abc"],
                database: db.configuration
            )
            #expect(short.status != 0)
            #expect(short.output.contains("PAPERBOY_ADMIN_TOKEN"), "\(short.output)")
            #expect(short.output.contains("16"), "\(short.output)")

            let secret = "admin-token-from-a-file-0123456789"
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-admin-\(UUID().uuidString)")
            try (secret + "\n").write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
            let serve = try PaperboyBinary.start(
                ["serve", "--port", "0", "--no-dispatch", "--no-scheduler"],
                environment: ["DATABASE_URL": db.configuration.testURL, "PAPERBOY_ADMIN_TOKEN": nil, "PAPERBOY_ADMIN_TOKEN_FILE": file.path],
                log: log
            )
            defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
            let port = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/apps")!)
            request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            kill(serve.processIdentifier, SIGTERM)
            #expect(await serve.exited(within: .seconds(20)))
        }
    }

    @Test(
        "with --admin-port, /metrics is on the admin port only, and the admin port's /health/ready says why",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .timeLimit(.minutes(3))
    )
    func metricsOnTheAdminPort() async throws {
        try await TestDatabase.with { db in
            let adminPort = try NginxCache.freeLoopbackPort()
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
            let serve = try PaperboyBinary.start(
                ["serve", "--port", "0", "--admin-port", "\(adminPort)", "--no-dispatch", "--no-scheduler"],
                environment: ["DATABASE_URL": db.configuration.testURL, "PAPERBOY_ADMIN_TOKEN": "admin-token-for-the-test-000"],
                log: log
            )
            defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
            let port = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            // The first port logged may be the admin port; the public one follows it in the log, perhaps not yet written.
            var logged: Int? = port == adminPort ? nil : port
            for _ in 0..<100 where logged == nil {
                logged = Self.secondPort(in: log, other: adminPort)
                if logged == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let publicPort = try #require(logged, "serve logged no second port: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
            func status(_ port: Int, _ path: String) async throws -> (Int, String) {
                let (body, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)\(path)")!)
                return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: body, as: UTF8.self))
            }
            #expect(try await status(publicPort, "/metrics").0 == 404, "metrics name apps and broadcasts: not for the public port")
            #expect(try await status(adminPort, "/metrics").0 == 200)
            // Readiness asks the database with a 2 s timeout: on a loaded machine a first probe may time out, as a
            // load balancer's would; it asks again, as they do, for up to 20 s.
            func eventually(_ port: Int) async throws -> (Int, String) {
                var answer = try await status(port, "/health/ready")
                for _ in 0..<20 where answer.0 != 200 {
                    try await Task.sleep(for: .seconds(1))
                    answer = try await status(port, "/health/ready")
                }
                return answer
            }
            let plain = try await eventually(publicPort)
            #expect(plain.0 == 200, "\(plain.1)")
            #expect(!plain.1.contains("migrations"), "a stranger learns up or down only: \(plain.1)")
            let detailed = try await eventually(adminPort)
            #expect(detailed.0 == 200)
            #expect(detailed.1.contains("migrations"), "the admin port's readiness lists its checks: \(detailed.1)")
            kill(serve.processIdentifier, SIGTERM)
            #expect(await serve.exited(within: .seconds(20)))
        }
    }

    @Test(
        "--admin-host binds the admin listener to its own address: the admin routes answer there, not on --host; without --admin-port it is refused naming the flag",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .timeLimit(.minutes(3))
    )
    func adminHost() async throws {
        try await TestDatabase.with { db in
            let alone = try await PaperboyBinary.run(["serve", "--admin-host", "127.0.0.2"], database: db.configuration)
            #expect(alone.status != 0)
            #expect(alone.output.contains("--admin-host needs --admin-port"), "\(alone.output)")

            let adminPort = try NginxCache.freeLoopbackPort()
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
            let token = "admin-token-for-the-test-000"
            // 127.0.0.2 is loopback too (127.0.0.0/8): another address of this host, as an internal interface would be.
            let serve = try PaperboyBinary.start(
                ["serve", "--port", "0", "--admin-port", "\(adminPort)", "--admin-host", "127.0.0.2", "--no-dispatch", "--no-scheduler"],
                environment: ["DATABASE_URL": db.configuration.testURL, "PAPERBOY_ADMIN_TOKEN": token],
                log: log
            )
            defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
            // The only 127.0.0.1 address logged is the public listener's.
            let publicPort = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            for _ in 0..<100 where !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("address=http://127.0.0.2:\(adminPort)") {
                try await Task.sleep(for: .milliseconds(100))
            }
            func apps(_ host: String, _ port: Int) async -> Int? {
                var request = URLRequest(url: URL(string: "http://\(host):\(port)/v1/apps")!)
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                guard let (_, response) = try? await URLSession.shared.data(for: request) else { return nil }
                return (response as? HTTPURLResponse)?.statusCode
            }
            #expect(await apps("127.0.0.2", adminPort) == 200, "the admin routes on --admin-host")
            #expect(await apps("127.0.0.1", adminPort) == nil, "nothing listens on --host's address at --admin-port")
            #expect(await apps("127.0.0.1", publicPort) == 404, "the public listener serves no admin route")
            kill(serve.processIdentifier, SIGTERM)
            #expect(await serve.exited(within: .seconds(20)))
        }
    }

    /// The other `address=http://127.0.0.1:PORT` of a serve log than `other`.
    static func secondPort(in log: URL, other: Int) -> Int? {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        let regex = try? NSRegularExpression(pattern: #"address=http://127\.0\.0\.1:(\d+)"#)
        let matches = regex?.matches(in: text, range: NSRange(text.startIndex..., in: text)) ?? []
        return matches.compactMap { Range($0.range(at: 1), in: text).flatMap { Int(text[$0]) } }.first { $0 != other }
    }
}
