import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PaperboyAPI
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@testable import PaperboyConsole

/// An app with a real APNs key, five devices, an edition and a running broadcast of it, and the API's router with
/// the console, in a fresh database.
struct ConsoleFixture {
    static let operatorToken = "op-7d1e9c4a2b8f6035e1"
    static let viewerToken = "vw-5e2a8c1f9b7d3046a2"

    let db: TestDatabase
    let app: App
    let edition: Edition
    let broadcastID: UUID
    let console: Console
    let client: any TestClientProtocol

    static func with(
        access: ConsoleAccess? = nil,
        publicURL: String? = nil,
        configure: @escaping @Sendable (inout ConsoleConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (ConsoleFixture) async throws -> Void
    ) async throws {
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-console-\(UUID().uuidString).p8").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        let access = try access ?? ConsoleAccess(operatorToken: operatorToken, viewerToken: viewerToken)
        try await TestDatabase.with { db in
            let logger = db.logger
            let (app, _) = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: keyFile),
                logger: logger
            )
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: logger)
            for index in 0..<5 {
                _ = try await DeviceRepository(client: db.client).register(
                    appID: app.id,
                    token: .apns(try DeviceToken(hex: String(repeating: String(format: "%02x", index + 1), count: 32))),
                    DeviceRegistration(
                        environment: .production,
                        subscriptions: ["morning"],
                        timeZone: "Asia/Tokyo",
                        tier: .large,
                        autoDownload: true,
                        alertsAuthorized: false
                    ),
                    logger: logger
                )
            }
            let manifest = EditionManifest(
                publication: "morning",
                issueDate: "2027-01-15",
                deadline: Date().addingTimeInterval(7200).formatted(.iso8601),
                tiers: [
                    "large": .init(bundles: [
                        .init(url: "https://cdn.example.com/large-1.zip", bytes: 1000, sha256: String(repeating: "0f", count: 32))
                    ])
                ],
                pages: [.init(number: 1, title: "Front page")]
            )
            let edition = try await EditionRepository(client: db.client).publish(manifest, appID: app.id, logger: logger)
            let start = try await BroadcastRepository(client: db.client).start(
                editionID: edition.id,
                environment: .production,
                options: BroadcastOptions(pace: .window(600)),
                origin: "test",
                now: Date(),
                logger: logger
            )
            var configuration = ConsoleConfiguration(access: access, publicURL: try publicURL.map { try ConsolePublicURL(parsing: $0) })
            configure(&configuration)
            let console = Console(client: db.client, configuration: configuration)
            var api = APIConfiguration(host: "127.0.0.1", port: 0)
            api.moreRoutes = [{ router in console.addRoutes(to: router) }]
            let application = buildApplication(client: db.client, configuration: api, logger: logger)
            try await application.test(.router) { client in
                try await body(
                    ConsoleFixture(db: db, app: app, edition: edition, broadcastID: start.broadcast.id, console: console, client: client)
                )
            }
        }
    }

    var id: String { broadcastID.uuidString.lowercased() }

    /// Signs in with `token` and returns the session cookie (`name=value`).
    func signIn(_ token: String, name: String = "ana") async throws -> String {
        let response = try await post("/console/sign-in", form: "token=\(token)&name=\(name)")
        #expect(response.status == .seeOther)
        let setCookie = try #require(response.headers[.setCookie])
        return String(setCookie.split(separator: ";")[0])
    }

    func post(_ path: String, form: String, cookie: String? = nil, headers more: HTTPFields = [:]) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if let cookie { headers[.cookie] = cookie }
        headers.append(contentsOf: more)
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: form))
    }

    func get(_ path: String, cookie: String? = nil, headers more: HTTPFields = [:]) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let cookie { headers[.cookie] = cookie }
        headers.append(contentsOf: more)
        return try await client.execute(uri: path, method: .get, headers: headers)
    }

    /// The CSRF token the console's forms carry for this session.
    func csrf(cookie: String) async throws -> String {
        let page = String(buffer: try await get("/console/broadcasts", cookie: cookie).body)
        let range = try #require(page.range(of: #"name="csrf" value="[^"]+""#, options: .regularExpression))
        return String(page[range].dropFirst(#"name="csrf" value=""#.count).dropLast())
    }

    func state() async throws -> BroadcastProgress.State? {
        try await BroadcastRepository(client: db.client).find(id: broadcastID, logger: db.logger)?.state
    }
}

@Suite("The console's pages against a real database")
struct ConsoleRoutesTests {
    @Test("without tokens /console says how to enable it, and no page lets anyone in")
    func disabled() async throws {
        try await ConsoleFixture.with(access: .disabled) { fixture in
            let home = try await fixture.get("/console")
            #expect(home.status == .ok)
            let text = String(buffer: home.body)
            #expect(text.contains("PAPERBOY_CONSOLE_OPERATOR_TOKEN"))
            #expect(text.contains("no default password"))
            #expect(try await fixture.get("/console/broadcasts").status == .notFound)
            #expect(try await fixture.post("/console/sign-in", form: "token=anything-at-all-0000").status == .notFound)
        }
    }

    @Test("every page says who may frame it, run scripts and load styles: itself only, no inline code")
    func securityHeaders() async throws {
        try await ConsoleFixture.with { fixture in
            let response = try await fixture.get("/console/sign-in")
            #expect(response.status == .ok)
            #expect(response.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            let policy = try #require(response.headers[.contentSecurityPolicy])
            #expect(policy.contains("script-src 'self'"))
            #expect(policy.contains("style-src 'self'"))
            #expect(policy.contains("frame-ancestors 'none'"))
            #expect(!policy.contains("unsafe-inline"))
            #expect(response.headers[.cacheControl] == "no-store")
            // Without a session every page leads to the sign-in.
            let page = try await fixture.get("/console/broadcasts")
            #expect(page.status == .seeOther)
            #expect(page.headers[.location] == "/console/sign-in")
        }
    }

    @Test("a wrong token is refused; a right one gets an HttpOnly, SameSite=Strict session cookie that ends with the browser")
    func signIn() async throws {
        try await ConsoleFixture.with(publicURL: "https://news.example.com") { fixture in
            let wrong = try await fixture.post("/console/sign-in", form: "token=not-the-token-000000")
            #expect(wrong.status == .unauthorized)
            #expect(wrong.headers[.setCookie] == nil)
            let right = try await fixture.post("/console/sign-in", form: "token=\(ConsoleFixture.operatorToken)&name=ana")
            #expect(right.status == .seeOther)
            #expect(right.headers[.location] == "https://news.example.com/console/broadcasts", "links from the public URL")
            #expect(right.headers[HTTPField.Name("Strict-Transport-Security")!] == "max-age=31536000")
            let cookie = try #require(right.headers[.setCookie])
            #expect(cookie.hasPrefix("__Host-paperboy_console="))
            for attribute in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/"] {
                #expect(cookie.contains(attribute), "\(attribute) in \(cookie)")
            }
            #expect(!cookie.contains("Max-Age") && !cookie.contains("Expires"), "a session cookie: \(cookie)")
            #expect(!cookie.contains(ConsoleFixture.operatorToken))
            let page = try await fixture.get("/console/broadcasts", cookie: String(cookie.split(separator: ";")[0]))
            #expect(page.status == .ok)
            #expect(String(buffer: page.body).contains("operator (ana)"))
        }
    }

    @Test("a viewer's cancel is refused and changes nothing; an operator's needs the form's CSRF token, then cancels and is recorded")
    func cancel() async throws {
        try await ConsoleFixture.with { fixture in
            let viewer = try await fixture.signIn(ConsoleFixture.viewerToken)
            let viewerCSRF = try await fixture.csrf(cookie: viewer)
            #expect(try await fixture.get("/console/broadcasts/\(fixture.id)/cancel", cookie: viewer).status == .forbidden)
            let refused = try await fixture.post("/console/broadcasts/\(fixture.id)/cancel", form: "csrf=\(viewerCSRF)", cookie: viewer)
            #expect(refused.status == .forbidden)
            #expect(String(buffer: refused.body).contains("Only an operator can cancel"))
            #expect(try await fixture.state() == .running)

            let operatorCookie = try await fixture.signIn(ConsoleFixture.operatorToken, name: "bo")
            let noToken = try await fixture.post("/console/broadcasts/\(fixture.id)/cancel", form: "", cookie: operatorCookie)
            #expect(noToken.status == .forbidden)
            // Another session's token does not do either.
            let stolen = try await fixture.post("/console/broadcasts/\(fixture.id)/cancel", form: "csrf=\(viewerCSRF)", cookie: operatorCookie)
            #expect(stolen.status == .forbidden)
            #expect(try await fixture.state() == .running)

            let confirm = try await fixture.get("/console/broadcasts/\(fixture.id)/cancel", cookie: operatorCookie)
            #expect(confirm.status == .ok)
            #expect(String(buffer: confirm.body).contains("Yes, cancel the broadcast"))
            let csrf = try await fixture.csrf(cookie: operatorCookie)
            let done = try await fixture.post("/console/broadcasts/\(fixture.id)/cancel", form: "csrf=\(csrf)", cookie: operatorCookie)
            #expect(done.status == .seeOther)
            #expect(try await fixture.state() == .cancelled)
            let page = String(buffer: try await fixture.get("/console/broadcasts/\(fixture.id)?done=cancelled", cookie: operatorCookie).body)
            #expect(page.contains("operator (bo)"))
            #expect(page.contains("cancel broadcast"))
            #expect(page.contains("cancelled after 0 of 5 planned pushes"))
            #expect(page.contains("data-state=\"cancelled\""))
            let again = try await fixture.post("/console/broadcasts/\(fixture.id)/cancel", form: "csrf=\(csrf)", cookie: operatorCookie)
            #expect(again.status == .conflict)
        }
    }

    @Test("a request from another site is refused even with a session and a token")
    func crossSite() async throws {
        try await ConsoleFixture.with { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.operatorToken)
            let csrf = try await fixture.csrf(cookie: cookie)
            let response = try await fixture.client.execute(
                uri: "/console/broadcasts/\(fixture.id)/cancel",
                method: .post,
                headers: [
                    .contentType: "application/x-www-form-urlencoded", .cookie: cookie, .origin: "https://evil.example",
                    HTTPField.Name("Sec-Fetch-Site")!: "cross-site",
                ],
                body: ByteBuffer(string: "csrf=\(csrf)")
            )
            #expect(response.status == .forbidden)
            #expect(try await fixture.state() == .running)
        }
    }

    @Test(
        "Origin: null (a sandboxed frame, a data: page) is refused even with a session and a token, in a browser too old to send Sec-Fetch-Site; the console's pages ask for Referrer-Policy: same-origin, under which its own forms send their origin (issue 48)"
    )
    func nullOrigin() async throws {
        try await ConsoleFixture.with { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.operatorToken)
            let csrf = try await fixture.csrf(cookie: cookie)
            let page = try await fixture.get("/console/broadcasts/\(fixture.id)", cookie: cookie)
            #expect(page.headers[HTTPField.Name("Referrer-Policy")!] == "same-origin")
            let response = try await fixture.client.execute(
                uri: "/console/broadcasts/\(fixture.id)/cancel",
                method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded", .cookie: cookie, .origin: "null"],
                body: ByteBuffer(string: "csrf=\(csrf)")
            )
            #expect(response.status == .forbidden)
            #expect(try await fixture.state() == .running)
        }
    }

    @Test("the sampler records a running broadcast once per interval, one process at a time, and the page draws it")
    func sampler() async throws {
        try await ConsoleFixture.with { fixture in
            let sampler = fixture.console.sampler(logger: fixture.db.logger)
            #expect(try await sampler.tick() == 1)
            // Sampled a moment ago: not again within the interval.
            #expect(try await sampler.tick() == 0)
            let repository = ConsoleRepository(client: fixture.db.client)
            let samples = try await repository.samples(broadcastID: fixture.broadcastID, logger: fixture.db.logger)
            #expect(samples.count == 1)
            #expect(samples.first?.planned == 5)
            // Another process sampling (holding the lock): this one skips the tick.
            let skipped = try await repository.whileSampling(logger: fixture.db.logger) { try await sampler.tick() }
            #expect(skipped == .some(nil))

            let cookie = try await fixture.signIn(ConsoleFixture.viewerToken)
            let page = String(buffer: try await fixture.get("/console/broadcasts/\(fixture.id)", cookie: cookie).body)
            #expect(page.contains("data-live-url=\"/console/broadcasts/\(fixture.id)/live\""))
            #expect(page.contains("<svg class=\"chart\""))
            #expect(page.contains("of 5 planned"))
            #expect(page.contains("only an operator can cancel"))
            #expect(!page.contains("Cancel broadcast…"))
        }
    }

    @Test("a device is found by its token with its registration, and a bad token is named")
    func device() async throws {
        try await ConsoleFixture.with { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.viewerToken)
            let csrf = try await fixture.csrf(cookie: cookie)
            let found = try await fixture.post("/console/devices", form: "token=\(String(repeating: "02", count: 32))&csrf=\(csrf)", cookie: cookie)
            #expect(found.status == .ok)
            let text = String(buffer: found.body)
            #expect(text.contains("com.example.news"))
            #expect(text.contains("Asia/Tokyo"))
            #expect(text.contains("morning"))
            let unknown = try await fixture.post("/console/devices", form: "token=\(String(repeating: "99", count: 32))&csrf=\(csrf)", cookie: cookie)
            #expect(unknown.status == .notFound)
            let bad = try await fixture.post("/console/devices", form: "token=zz&csrf=\(csrf)", cookie: cookie)
            #expect(bad.status == .badRequest)
            #expect(String(buffer: bad.body).contains("token:"))
        }
    }
}
