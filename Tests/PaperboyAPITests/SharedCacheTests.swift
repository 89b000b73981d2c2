import Crypto
import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `paperboy serve` behind a real shared cache: Debian's nginx, configured with docs/scaling.md's snippet.
@Suite("paperboy serve behind a shared cache")
struct SharedCacheTests {
    @Test(
        "nginx caches each app's edition for that app's key only: no key is 401, app B gets its own, app A's repeats are hits",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .enabled(
            if: NginxCache.isInstalled || ProcessInfo.processInfo.environment["CI"] != nil,
            "nginx is installed (apt-get install -y nginx-light); in CI it must be, and the test fails without it"
        )
    )
    func editionsPerAppKey() async throws {
        try #require(
            NginxCache.isInstalled,
            "nginx is not installed at \(NginxCache.executable): apt-get install -y nginx-light (.ci/run installs it)"
        )
        try await TestDatabase.with { db in
            let appA = try await Self.app("com.example.a", db: db)
            let appB = try await Self.app("com.example.b", db: db)
            let admin = "test-admin-token-shared-cache"
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
            let serve = try PaperboyBinary.start(
                ["serve", "--port", "0", "--rate-limit", "off", "--no-dispatch", "--no-scheduler"],
                environment: ["DATABASE_URL": db.configuration.testURL, "PAPERBOY_ADMIN_TOKEN": admin],
                log: log
            )
            defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
            let servePort = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            let origin = "http://127.0.0.1:\(servePort)"
            let editionA = try await Self.publish(app: appA.id, issueDate: "2026-11-23", origin: origin, admin: admin)
            let editionB = try await Self.publish(app: appB.id, issueDate: "2026-11-24", origin: origin, admin: admin)
            #expect(editionA != editionB)

            try await NginxCache.with(upstreamPort: servePort) { cache in
                let latest = "/v1/editions/latest?publication=morning"

                let first = try await cache.get(latest, key: appA.key)
                #expect(first.status == 200)
                #expect(first.editionID == editionA)
                #expect(first.header("Vary") == "X-API-Key")
                #expect(first.header("X-Cache-Status") == "MISS")

                // RFC 9111: a stored response that varies on X-API-Key never answers a request without it.
                let keyless = try await cache.get(latest, key: nil)
                #expect(keyless.status == 401, "no key: \(keyless.status) \(keyless.text)")
                #expect(keyless.editionID == nil, "no key never gets a cached edition: \(keyless.text)")
                #expect(keyless.header("X-Cache-Status") != "HIT")

                let wrong = try await cache.get(latest, key: "pb_" + String(repeating: "0", count: 43))
                #expect(wrong.status == 401, "a key of no app: \(wrong.status) \(wrong.text)")
                #expect(wrong.editionID == nil)

                let other = try await cache.get(latest, key: appB.key)
                #expect(other.status == 200)
                #expect(other.editionID == editionB, "app B gets its own edition, not app A's: \(other.text)")
                #expect(other.header("X-Cache-Status") == "MISS")

                let again = try await cache.get(latest, key: appA.key)
                #expect(again.status == 200)
                #expect(again.editionID == editionA)
                #expect(again.header("X-Cache-Status") == "HIT", "app A's repeat is served from the cache")
                let otherAgain = try await cache.get(latest, key: appB.key)
                #expect(otherAgain.editionID == editionB)
                #expect(otherAgain.header("X-Cache-Status") == "HIT", "each app has its own copy")

                // A device holding the edition asks with its ETag: 304 without a body, still from the cache.
                let etag = try #require(first.header("ETag"))
                let unchanged = try await cache.get(latest, key: appA.key, headers: ["If-None-Match": etag])
                #expect(unchanged.status == 304)
                #expect(unchanged.body.isEmpty)
                #expect(unchanged.header("X-Cache-Status") == "HIT")

                // By id: app A's edition is cached for A's key; B's key still asks serve, which says 404.
                let byID = "/v1/editions/\(editionA)"
                #expect(try await cache.get(byID, key: appA.key).editionID == editionA)
                let byIDAgain = try await cache.get(byID, key: appA.key)
                #expect(byIDAgain.header("X-Cache-Status") == "HIT")
                let foreign = try await cache.get(byID, key: appB.key)
                #expect(foreign.status == 404, "another app's key: \(foreign.status) \(foreign.text)")
                #expect(foreign.editionID == nil)
                let foreignAgain = try await cache.get(byID, key: appB.key)
                #expect(foreignAgain.status == 404)
                #expect(foreignAgain.header("X-Cache-Status") != "HIT", "errors are never stored")

                // Outside /v1/editions/ nothing is cached: a registration passes through.
                let registration = try await cache.get("/v1/devices/\(String(repeating: "ab", count: 32))", key: appA.key)
                #expect(registration.status == 404)
                #expect(registration.header("X-Cache-Status") == nil)
                #expect(registration.header("Cache-Control") == "no-store")
            }
            kill(serve.processIdentifier, SIGTERM)
            #expect(await serve.exited(within: .seconds(20)))
        }
    }

    @Test(
        "the console behind nginx as docs/scaling.md configures it: an operator signs in and cancels a broadcast through the proxy",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests"),
        .enabled(
            if: NginxCache.isInstalled || ProcessInfo.processInfo.environment["CI"] != nil,
            "nginx is installed (apt-get install -y nginx-light); in CI it must be, and the test fails without it"
        )
    )
    func consoleThroughTheProxy() async throws {
        try #require(NginxCache.isInstalled, "nginx is not installed at \(NginxCache.executable): apt-get install -y nginx-light")
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-proxy-\(UUID().uuidString).p8").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        try await TestDatabase.with { db in
            let created = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.proxy", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: keyFile),
                logger: db.logger
            )
            _ = try await PublicationRepository(client: db.client).add(appID: created.app.id, slug: "morning", title: nil, logger: db.logger)
            let admin = "test-admin-token-behind-the-proxy"
            let operatorToken = "operator-token-behind-the-proxy"
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
            let serve = try PaperboyBinary.start(
                ["serve", "--port", "0", "--rate-limit", "off", "--no-dispatch", "--no-scheduler", "--trusted-proxy", "127.0.0.1"],
                environment: [
                    "DATABASE_URL": db.configuration.testURL, "PAPERBOY_ADMIN_TOKEN": admin, "PAPERBOY_CONSOLE_OPERATOR_TOKEN": operatorToken,
                ],
                log: log
            )
            defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
            let servePort = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            let origin = "http://127.0.0.1:\(servePort)"
            let edition = try await Self.publish(app: created.app.id, issueDate: "2026-11-25", origin: origin, admin: admin)
            _ = try await DeviceRepository(client: db.client).register(
                appID: created.app.id,
                token: .apns(try DeviceToken(hex: String(repeating: "cd", count: 32))),
                DeviceRegistration(
                    environment: .production,
                    subscriptions: ["morning"],
                    timeZone: "Asia/Tokyo",
                    tier: .large,
                    autoDownload: true,
                    alertsAuthorized: false
                ),
                logger: db.logger
            )
            let broadcast = try await BroadcastRepository(client: db.client).start(
                editionID: try #require(UUID(uuidString: edition)),
                environment: .production,
                options: BroadcastOptions(pace: .window(600)),
                origin: "test",
                now: Date(),
                logger: db.logger
            ).broadcast.id

            try await NginxCache.with(upstreamPort: servePort) { cache in
                let site = "http://127.0.0.1:\(cache.port)"
                // As a browser sends a form from the console's own page.
                let browser = ["Origin": site, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/x-www-form-urlencoded"]
                let signIn = try await cache.send("POST", "/console/sign-in", headers: browser, body: "token=\(operatorToken)&name=ana")
                #expect(signIn.status == 303, "sign-in through the proxy: \(signIn.status) \(signIn.text)")
                let setCookie = try #require(signIn.header("Set-Cookie"), "a session cookie")
                let cookie = String(setCookie.split(separator: ";")[0])
                let page = try await cache.send("GET", "/console/broadcasts", headers: ["Cookie": cookie])
                #expect(page.status == 200)
                #expect(page.header("X-Cache-Status") == nil, "the console is never cached")
                let csrf = try #require(
                    page.text.range(of: #"name="csrf" value="[^"]+""#, options: .regularExpression).map {
                        String(page.text[$0].dropFirst(#"name="csrf" value=""#.count).dropLast())
                    }
                )
                var headers = browser
                headers["Cookie"] = cookie
                let id = broadcast.uuidString.lowercased()
                let cancel = try await cache.send("POST", "/console/broadcasts/\(id)/cancel", headers: headers, body: "csrf=\(csrf)")
                #expect(cancel.status == 303, "cancel through the proxy: \(cancel.status) \(cancel.text)")
            }
            #expect(try await BroadcastRepository(client: db.client).find(id: broadcast, logger: db.logger)?.state == .cancelled)
            kill(serve.processIdentifier, SIGTERM)
            #expect(await serve.exited(within: .seconds(20)))
        }
    }

    struct TestApp {
        var id: Int
        var key: String
    }

    private static func app(_ bundleID: String, db: TestDatabase) async throws -> TestApp {
        let created = try await AppRepository(client: db.client).create(
            try NewApp(bundleID: bundleID, teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "none (test)"),
            logger: db.logger
        )
        _ = try await PublicationRepository(client: db.client).add(appID: created.app.id, slug: "morning", title: nil, logger: db.logger)
        return TestApp(id: created.app.id, key: created.apiKey.secret)
    }

    /// Publishes a morning edition of `app` through serve's admin API; returns its id.
    private static func publish(app: Int, issueDate: String, origin: String, admin: String) async throws -> String {
        var request = URLRequest(url: URL(string: "\(origin)/v1/editions?app=\(app)")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(admin)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(EditionRoutesTests.file(issueDate: issueDate).utf8)
        let (body, response) = try await NginxCache.session.data(for: request)
        let text = String(decoding: body, as: UTF8.self)
        #expect((response as? HTTPURLResponse)?.statusCode == 201, "publishing: \(text)")
        let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        return try #require(object?["id"] as? String, "publishing: \(text)")
    }
}

/// Debian's nginx as a shared cache in front of one upstream, run by the test as the current user in a
/// directory of its own, with docs/scaling.md's configuration.
///
/// It runs as one process (`master_process off`), started by a shell that kills it with `SIGKILL` once its
/// standard input closes: when the test stops it, and when the test process dies, however it dies, because
/// only the test holds the pipe's other end. (`SIGTERM` would not do: a child started from async code has
/// it blocked, and SIGCHLD too, so the shell does not `wait` for nginx: it would wait for ever. nginx, once
/// killed, is its parent's or init's to reap.)
struct NginxCache {
    static let executable = "/usr/sbin/nginx"
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// No local cache of its own, so that every answer is the proxy's.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration)
    }()

    let port: Int
    let directory: URL

    /// Runs `body` with nginx in front of `127.0.0.1:upstreamPort`, and stops nginx on every path out.
    static func with<Result>(upstreamPort: Int, _ body: (NginxCache) async throws -> Result) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var lastFailure = ""
        // A port found free can be taken before nginx binds it: a few tries.
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            try configuration(upstreamPort: upstreamPort, port: port, directory: directory.path)
                .write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            let lifeline = Pipe()
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.arguments = [
                "-c",
                #"""
                "$0" -p "$1/" -c "$1/nginx.conf" </dev/null >"$1/stderr.log" 2>&1 &
                nginx=$!
                while read -r _; do :; done
                kill -9 "$nginx"
                """#,
                executable, directory.path,
            ]
            shell.standardInput = lifeline
            // Not the test runner's output: `swift test` waits for every holder of that pipe to exit.
            shell.standardOutput = FileHandle.nullDevice
            shell.standardError = FileHandle.nullDevice
            try shell.run()
            let cache = NginxCache(port: port, directory: directory)
            let stop = {
                try? lifeline.fileHandleForWriting.close()
            }
            do {
                guard try await cache.waitUntilListening(seconds: 10) else {
                    stop()
                    await shell.exited(within: .seconds(10))
                    lastFailure = cache.errorLog
                    continue
                }
                let result = try await body(cache)
                stop()
                #expect(await shell.exited(within: .seconds(10)), "nginx stopped")
                return result
            } catch {
                stop()
                await shell.exited(within: .seconds(10))
                throw error
            }
        }
        throw NginxCacheError(description: "nginx did not start: \(lastFailure)")
    }

    /// docs/scaling.md's nginx block for `upstreamPort`, on `port`, with its cache and everything else nginx
    /// writes in `directory`. Fails when the block is not there as the test expects it.
    static func configuration(upstreamPort: Int, port: Int, directory: String) throws -> String {
        let scaling = try String(contentsOf: PaperboyBinary.repositoryRoot.appendingPathComponent("docs/scaling.md"), encoding: .utf8)
        guard let start = scaling.range(of: "```nginx\n"), let end = scaling.range(of: "\n```", range: start.upperBound..<scaling.endIndex) else {
            throw NginxCacheError(description: "docs/scaling.md has no ```nginx block")
        }
        var block = String(scaling[start.upperBound..<end.lowerBound])
        for (documented, local) in [
            ("server 127.0.0.1:8080;", "server 127.0.0.1:\(upstreamPort);"),
            ("/var/cache/nginx/paperboy", "\(directory)/cache"),
            ("listen 80;", "listen 127.0.0.1:\(port);"),
        ] {
            guard block.contains(documented) else {
                throw NginxCacheError(description: "docs/scaling.md's nginx block no longer has `\(documented)`: update the test with it")
            }
            block = block.replacingOccurrences(of: documented, with: local)
        }
        return """
            daemon off;
            master_process off;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log info;
            events { worker_connections 64; }
            http {
                access_log \(directory)/access.log;
                client_body_temp_path \(directory)/body;
                proxy_temp_path \(directory)/proxy;
                fastcgi_temp_path \(directory)/fastcgi;
                uwsgi_temp_path \(directory)/uwsgi;
                scgi_temp_path \(directory)/scgi;
            \(block)
            }

            """
    }

    var errorLog: String {
        ["stderr.log", "error.log"].map { (try? String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8)) ?? "" }
            .joined(separator: "\n")
    }

    /// Polls the port every 50 ms; false when nothing answers within `seconds`.
    func waitUntilListening(seconds: Double) async throws -> Bool {
        for _ in 0..<Int(seconds * 20) {
            if (try? await get("/health/live", key: nil)) != nil { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }

        /// A header by name, in any case.
        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }

        /// The `id` of the edition in the body; nil when the body is no edition.
        var editionID: String? {
            guard status == 200, let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
            return object["id"] as? String
        }
    }

    /// `GET path` through the cache, with the app key `key` (none when nil).
    func get(_ path: String, key: String?, headers: [String: String] = [:]) async throws -> Answer {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        if let key { request.setValue(key, forHTTPHeaderField: "X-API-Key") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (body, response) = try await Self.session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return Answer(status: http.statusCode, headers: fields, body: body)
    }

    /// `method path` through the proxy with `headers` and `body`, redirects not followed (a sign-in answers 303 with
    /// its cookie).
    func send(_ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil) async throws -> Answer {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body.map { Data($0.utf8) }
        let (data, response) = try await Self.unredirected.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// A session that neither follows redirects nor keeps cookies: the test reads both itself.
    static let unredirected: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        return URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
    }()

    static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw NginxCacheError(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw NginxCacheError(description: "bind: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Hands every redirect back to the caller.
final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

struct NginxCacheError: Error, CustomStringConvertible {
    var description: String
}
