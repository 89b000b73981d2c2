import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Synchronization
import Testing

@testable import PaperboyConsole

/// A wall clock the test moves.
final class ConsoleTestClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date()) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// What a hostile network can try against the console (issue 35): guessing tokens to lock operators out, reusing a
/// session after sign-out, guessing a token offline from a leaked cookie, a proxy in front, reading device tokens
/// from URLs, loading the database through the plan page.
@Suite("The console against a hostile network")
struct ConsoleHostileNetworkTests {
    static let clientAddress = HTTPField.Name("X-Paperboy-Client-Address")!

    @Test("200 wrong tokens from one address lock out neither another address nor, after its backoff, that one")
    func noLockOut() async throws {
        let clock = ConsoleTestClock()
        let configure: @Sendable (inout ConsoleConfiguration) -> Void = { $0.limiterClock = { clock.now.timeIntervalSince1970 } }
        try await ConsoleFixture.with(configure: configure) { fixture in
            let attacker: HTTPFields = [Self.clientAddress: "127.0.0.2"]
            var statuses: [HTTPResponse.Status] = []
            for attempt in 0..<200 {
                statuses.append(try await fixture.post("/console/sign-in", form: "token=wrong-token-\(attempt)-0000000", headers: attacker).status)
            }
            #expect(statuses.allSatisfy { $0 == .unauthorized || $0 == .tooManyRequests })
            #expect(statuses.filter { $0 == .unauthorized }.count <= 10, "a few guesses are checked, then the address waits")
            #expect(statuses.last == .tooManyRequests)

            let operatorElsewhere = try await fixture.post(
                "/console/sign-in",
                form: "token=\(ConsoleFixture.operatorToken)",
                headers: [Self.clientAddress: "127.0.0.1"]
            )
            #expect(operatorElsewhere.status == .seeOther, "the operator signs in at once from another address")

            let sameAddress = try await fixture.post("/console/sign-in", form: "token=\(ConsoleFixture.operatorToken)", headers: attacker)
            #expect(sameAddress.status == .tooManyRequests, "the guessing address waits, whatever it sends")
            let retryAfter = try #require(sameAddress.headers[.retryAfter].flatMap { Int($0) })
            #expect(retryAfter >= 1)
            clock.advance(by: TimeInterval(retryAfter))
            let afterBackoff = try await fixture.post("/console/sign-in", form: "token=\(ConsoleFixture.operatorToken)", headers: attacker)
            #expect(afterBackoff.status == .seeOther, "after its backoff the right token signs in from that address too")
        }
    }

    @Test("guessing from many addresses at once tightens every guesser's allowance, never a right token's")
    func globalCeiling() async throws {
        let clock = ConsoleTestClock()
        let configure: @Sendable (inout ConsoleConfiguration) -> Void = { $0.limiterClock = { clock.now.timeIntervalSince1970 } }
        try await ConsoleFixture.with(configure: configure) { fixture in
            for index in 0..<150 {
                let status = try await fixture.post(
                    "/console/sign-in",
                    form: "token=wrong-token-from-many-000",
                    headers: [Self.clientAddress: "10.0.\(index / 250).\(index % 250)"]
                ).status
                #expect(status == .unauthorized)
            }
            let again = try await fixture.post("/console/sign-in", form: "token=wrong-token-again-00000", headers: [Self.clientAddress: "10.0.0.149"])
            #expect(again.status == .tooManyRequests, "over the ceiling a guesser's second try waits")
            let fresh = try await fixture.post(
                "/console/sign-in",
                form: "token=\(ConsoleFixture.operatorToken)",
                headers: [Self.clientAddress: "192.0.2.7"]
            )
            #expect(fresh.status == .seeOther, "the right token from an address that was not guessing signs in")
        }
    }

    @Test("signing out ends the session on the server: the old cookie no longer opens a page")
    func signOutEndsTheSession() async throws {
        try await ConsoleFixture.with { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.operatorToken)
            let csrf = try await fixture.csrf(cookie: cookie)
            let out = try await fixture.post("/console/sign-out", form: "csrf=\(csrf)", cookie: cookie)
            #expect(out.status == .seeOther)
            let reused = try await fixture.get("/console/broadcasts", cookie: cookie)
            #expect(reused.status == .seeOther, "a cookie kept from before the sign-out: \(reused.status)")
            #expect(reused.headers[.location]?.hasSuffix("/console/sign-in") == true)
            // Nor can it act.
            let cancel = try await fixture.post("/console/broadcasts/\(fixture.id)/cancel", form: "csrf=\(csrf)", cookie: cookie)
            #expect(cancel.status != .seeOther || cancel.headers[.location]?.hasSuffix("/console/sign-in") == true)
            #expect(try await fixture.state() == .running)
        }
    }

    @Test("a session unused for longer than the idle timeout ends and one in use lasts, by the database's clock, not the app's")
    func idleTimeout() async throws {
        // The app's clock a day ahead of the database's: it decides nothing about sessions.
        let clock = ConsoleTestClock(Date().addingTimeInterval(86_400))
        let configure: @Sendable (inout ConsoleConfiguration) -> Void = { $0.now = { clock.now } }
        try await ConsoleFixture.with(configure: configure) { fixture in
            let idle = try await fixture.signIn(ConsoleFixture.viewerToken)
            let busy = try await fixture.signIn(ConsoleFixture.operatorToken)
            #expect(try await fixture.get("/console/broadcasts", cookie: busy).status == .ok, "the app's clock a day ahead ends nothing")
            for _ in 0..<4 {
                // 20 minutes pass on the database's clock.
                try await fixture.db.client.query(
                    "UPDATE console_sessions SET seen_at = seen_at - interval '20 minutes', signed_in_at = signed_in_at - interval '20 minutes'",
                    logger: fixture.db.logger
                )
                let page = try await fixture.get("/console/broadcasts", cookie: busy)
                #expect(page.status == .ok, "a session used every 20 minutes lasts")
                #expect(page.headers[.setCookie] == nil, "renewed on the server, not by a new cookie")
            }
            let stale = try await fixture.get("/console/broadcasts", cookie: idle)
            #expect(stale.status == .seeOther, "unused for 80 minutes: signed out")
            // Past its absolute end, a session in use ends too.
            try await fixture.db.client.query("UPDATE console_sessions SET expires_at = now() - interval '1 second'", logger: fixture.db.logger)
            #expect(try await fixture.get("/console/broadcasts", cookie: busy).status == .seeOther)
        }
    }

    @Test("an operator sees every session and ends one: its cookie opens nothing; a viewer sees only its own and ends none")
    func sessionsListedAndEnded() async throws {
        try await ConsoleFixture.with { fixture in
            let from: HTTPFields = [Self.clientAddress: "192.0.2.80"]
            let signedIn = try await fixture.post("/console/sign-in", form: "token=\(ConsoleFixture.viewerToken)&name=vi", headers: from)
            let viewer = String(try #require(signedIn.headers[.setCookie]).split(separator: ";")[0])
            let operatorCookie = try await fixture.signIn(ConsoleFixture.operatorToken, name: "op")
            let sessions = try await ConsoleRepository(client: fixture.db.client).sessions(logger: fixture.db.logger)
            #expect(sessions.count == 2)
            let viewerID = try #require(sessions.first { $0.role == "viewer" }?.id)
            let operatorID = try #require(sessions.first { $0.role == "operator" }?.id)
            #expect(sessions.first { $0.role == "viewer" }?.address == "192.0.2.80")

            let operatorPage = String(buffer: try await fixture.get("/console/audit", cookie: operatorCookie).body)
            #expect(operatorPage.contains("viewer (vi)") && operatorPage.contains("192.0.2.80"))
            #expect(operatorPage.contains("/console/sessions/\(viewerID)/end"))
            let viewerPage = String(buffer: try await fixture.get("/console/audit", cookie: viewer).body)
            #expect(!viewerPage.contains("/console/sessions/"), "a viewer ends no session from the list")
            #expect(viewerPage.contains("\(viewerID) (yours)") && !viewerPage.contains(">\(operatorID)<"), "a viewer sees only its own session")

            let viewerCSRF = try await fixture.csrf(cookie: viewer)
            let refused = try await fixture.post("/console/sessions/\(operatorID)/end", form: "csrf=\(viewerCSRF)", cookie: viewer)
            #expect(refused.status == .forbidden)
            #expect(try await fixture.get("/console/broadcasts", cookie: operatorCookie).status == .ok)

            let csrf = try await fixture.csrf(cookie: operatorCookie)
            let ended = try await fixture.post("/console/sessions/\(viewerID)/end", form: "csrf=\(csrf)", cookie: operatorCookie)
            #expect(ended.status == .seeOther)
            #expect(try await fixture.get("/console/broadcasts", cookie: viewer).status == .seeOther, "the ended session's cookie")
            #expect(try await fixture.get("/console/broadcasts", cookie: operatorCookie).status == .ok)
            let again = try await fixture.post("/console/sessions/\(viewerID)/end", form: "csrf=\(csrf)", cookie: operatorCookie)
            #expect(again.status == .notFound)
            for bad in ["0", "-1", "abc", "99999999999999999999", "1e3"] {
                let status = try await fixture.post("/console/sessions/\(bad)/end", form: "csrf=\(csrf)", cookie: operatorCookie).status
                #expect(status == .badRequest, "\(bad): \(status)")
            }
            let entries = try await AuditRepository(client: fixture.db.client).recent(logger: fixture.db.logger)
            let end = try #require(entries.first { $0.action == "end session" })
            #expect(end.sessionID == operatorID && end.detail == "session \(viewerID)")
        }
    }

    @Test("an operator signs everyone out: every session issued before ends, the operator's own included")
    func signOutEveryone() async throws {
        try await ConsoleFixture.with { fixture in
            let viewer = try await fixture.signIn(ConsoleFixture.viewerToken)
            let operatorCookie = try await fixture.signIn(ConsoleFixture.operatorToken)
            let viewerCSRF = try await fixture.csrf(cookie: viewer)
            let refused = try await fixture.post("/console/sign-out-everyone", form: "csrf=\(viewerCSRF)", cookie: viewer)
            #expect(refused.status == .forbidden, "a viewer cannot")
            #expect(try await fixture.get("/console/broadcasts", cookie: viewer).status == .ok)

            let csrf = try await fixture.csrf(cookie: operatorCookie)
            let done = try await fixture.post("/console/sign-out-everyone", form: "csrf=\(csrf)", cookie: operatorCookie)
            #expect(done.status == .seeOther)
            #expect(try await fixture.get("/console/broadcasts", cookie: viewer).status == .seeOther)
            #expect(try await fixture.get("/console/broadcasts", cookie: operatorCookie).status == .seeOther)
            let again = try await fixture.signIn(ConsoleFixture.viewerToken)
            #expect(try await fixture.get("/console/broadcasts", cookie: again).status == .ok, "signing in again works")
        }
    }

    @Test("sign-in, a cancel and sign-out are in the audit log with the role, the name typed and the client's address")
    func audited() async throws {
        try await ConsoleFixture.with { fixture in
            let from: HTTPFields = [Self.clientAddress: "192.0.2.44"]
            let signedIn = try await fixture.post("/console/sign-in", form: "token=\(ConsoleFixture.operatorToken)&name=bo", headers: from)
            let cookie = String(try #require(signedIn.headers[.setCookie]).split(separator: ";")[0])
            let csrf = try await fixture.csrf(cookie: cookie)
            let cancel = try await fixture.post("/console/broadcasts/\(fixture.id)/cancel", form: "csrf=\(csrf)", cookie: cookie, headers: from)
            #expect(cancel.status == .seeOther)
            #expect(try await fixture.post("/console/sign-out", form: "csrf=\(csrf)", cookie: cookie, headers: from).status == .seeOther)
            let entries = try await AuditRepository(client: fixture.db.client).recent(logger: fixture.db.logger).reversed()
            #expect(entries.map(\.action) == ["sign in", "cancel broadcast", "sign out"])
            #expect(entries.allSatisfy { $0.surface == .console && $0.role == "operator" && $0.name == "bo" && $0.address == "192.0.2.44" })
            #expect(entries.first { $0.action == "cancel broadcast" }?.broadcastID == fixture.broadcastID)
            let viewer = try await fixture.signIn(ConsoleFixture.viewerToken)
            let page = String(buffer: try await fixture.get("/console/audit", cookie: viewer).body)
            #expect(page.contains("operator (bo) from 192.0.2.44"))
            #expect(!page.contains("Sign out everyone</button>"), "a viewer reads the log but cannot sign everyone out")
        }
    }

    @Test(
        "live streams are capped per session (429), per address (429, however many sessions it signs in for) and in all (503); a closed one frees its place"
    )
    func liveStreamCap() async throws {
        let streams = LiveStreamCount(perSession: 2, perAddress: 10, inAll: 5)
        #expect(streams.open("a", address: "x") == nil && streams.open("a", address: "x") == nil)
        #expect(streams.open("a", address: "x") == .session, "a third at once is refused")
        #expect(streams.open("b", address: "y") == nil, "another session has its own")
        streams.close("a", address: "x")
        #expect(streams.open("a", address: "x") == nil)
        #expect(streams.count("a") == 2)
        // Signing in again and again: new sessions, but no more streams than the process allows.
        #expect(streams.open("c", address: "y") == nil && streams.open("d", address: "z") == nil)
        #expect(streams.open("e", address: "w") == .process)
        #expect(streams.total == 5)
        streams.close("nobody", address: "x")
        #expect(streams.total == 5, "closing a stream never opened frees nothing")
        streams.close("d", address: "z")
        #expect(streams.open("e", address: "w") == nil)

        // One address signing in for new sessions again and again: its own cap, and other addresses keep theirs.
        let perAddress = LiveStreamCount(perSession: 4, perAddress: 6, inAll: 200)
        for session in 0..<6 { #expect(perAddress.open("s\(session)", address: "viewer") == nil) }
        #expect(perAddress.open("s6", address: "viewer") == .address, "a seventh from the address, in a new session")
        #expect(perAddress.open("t", address: "operator") == nil)
        perAddress.close("s0", address: "viewer")
        #expect(perAddress.open("s7", address: "viewer") == nil, "a closed stream frees the address's place")

        let all: @Sendable (inout ConsoleConfiguration) -> Void = { $0.liveStreamsInAll = 0 }
        try await ConsoleFixture.with(configure: all) { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.viewerToken)
            let refused = try await fixture.get("/console/broadcasts/\(fixture.id)/live", cookie: cookie)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.headers[.retryAfter] != nil)
        }

        let none: @Sendable (inout ConsoleConfiguration) -> Void = { $0.liveStreamsPerSession = 0 }
        try await ConsoleFixture.with(configure: none) { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.viewerToken)
            let refused = try await fixture.get("/console/broadcasts/\(fixture.id)/live", cookie: cookie)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] != nil)
        }
    }

    @Test("a cookie holds only a random secret and the database only its digest: neither tells the token, nor opens a session from a copy")
    func sessionKeyIsNotTheToken() async throws {
        try await ConsoleFixture.with { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.operatorToken)
            let value = String(cookie.split(separator: "=", maxSplits: 1)[1])
            #expect(value.utf8.count == 43 && !value.contains("."), "43 random base64url characters, nothing signed: \(value)")
            let rows = try await fixture.db.client.query(
                "SELECT encode(secret_digest, 'hex'), encode(token_mark, 'hex') FROM console_sessions",
                logger: fixture.db.logger
            )
            var stored: [(String, String)] = []
            for try await row in rows.decode((String, String).self) { stored.append(row) }
            #expect(stored.count == 1)
            let digest = SHA256.hash(data: Array(value.utf8)).map { String(format: "%02x", $0) }.joined()
            #expect(stored.first?.0 == digest, "the row is found by the cookie's SHA-256")
            let tokenDigest = SHA256.hash(data: Array(ConsoleFixture.operatorToken.utf8)).map { String(format: "%02x", $0) }.joined()
            #expect(stored.first.map { !tokenDigest.hasPrefix($0.1) && $0.0 != tokenDigest } == true, "no hash of the token alone is stored")
            // The stored digest as a cookie (what a database copy holds) opens nothing.
            let asCookie =
                String(cookie.split(separator: "=", maxSplits: 1)[0]) + "=" + ConsoleSession.base64url(Data(SHA256.hash(data: Array(value.utf8))))
            #expect(try await fixture.get("/console/broadcasts", cookie: asCookie).status == .seeOther)
        }
    }

    @Test("sign-ins are counted, one audit line an hour per role, name and address; a flood of sign-ins adds one line")
    func signInsCounted() async throws {
        try await ConsoleFixture.with { fixture in
            for _ in 0..<25 {
                let status = try await fixture.post(
                    "/console/sign-in",
                    form: "token=\(ConsoleFixture.viewerToken)&name=flood",
                    headers: [Self.clientAddress: "192.0.2.90"]
                ).status
                #expect(status == .seeOther)
            }
            _ = try await fixture.post(
                "/console/sign-in",
                form: "token=\(ConsoleFixture.viewerToken)&name=flood",
                headers: [Self.clientAddress: "192.0.2.91"]
            )
            let entries = try await AuditRepository(client: fixture.db.client).recent(logger: fixture.db.logger)
            let signIns = entries.filter { $0.action == "sign in" }
            #expect(signIns.count == 2, "one line per address: \(signIns.map(\.who))")
            let flood = try #require(signIns.first { $0.address == "192.0.2.90" })
            #expect(flood.times == 25 && flood.lastAt != nil && flood.actionCounted == "sign in ×25")
            #expect(
                flood.sessionID
                    == (try await ConsoleRepository(client: fixture.db.client).sessions(logger: fixture.db.logger)).filter {
                        $0.address == "192.0.2.90"
                    }.map(\.id).max()
            )
            let operatorCookie = try await fixture.signIn(ConsoleFixture.operatorToken)
            let page = String(buffer: try await fixture.get("/console/audit", cookie: operatorCookie).body)
            #expect(page.contains("sign in ×25"))
            // An hour later (the database's clock) the next sign-in starts a new line.
            try await fixture.db.client.query("UPDATE audit_log SET at = at - interval '61 minutes'", logger: fixture.db.logger)
            _ = try await fixture.post(
                "/console/sign-in",
                form: "token=\(ConsoleFixture.viewerToken)&name=flood",
                headers: [Self.clientAddress: "192.0.2.90"]
            )
            let later = try await AuditRepository(client: fixture.db.client).recent(logger: fixture.db.logger).filter { $0.address == "192.0.2.90" }
            #expect(later.map(\.times) == [1, 25])
        }
    }

    @Test("the sign-in limiter runs on a monotonic clock: the wall clock stepped a day ahead frees no guesser")
    func limiterIgnoresTheWallClock() async throws {
        let wall = ConsoleTestClock()
        let configure: @Sendable (inout ConsoleConfiguration) -> Void = {
            $0.now = { wall.now }
            // A backoff of ten minutes from the first wrong token after the free ones: real time in the test cannot end it.
            $0.signInPolicy.freeFailures = 1
            $0.signInPolicy.firstBackoff = 600
        }
        try await ConsoleFixture.with(configure: configure) { fixture in
            let attacker: HTTPFields = [Self.clientAddress: "127.0.0.9"]
            var statuses: [HTTPResponse.Status] = []
            for attempt in 0..<3 {
                statuses.append(try await fixture.post("/console/sign-in", form: "token=wrong-token-\(attempt)-0000000", headers: attacker).status)
            }
            #expect(statuses.last == .tooManyRequests, "\(statuses)")
            wall.advance(by: 86_400)
            let after = try await fixture.post("/console/sign-in", form: "token=\(ConsoleFixture.operatorToken)", headers: attacker)
            #expect(after.status == .tooManyRequests, "the wall clock's step is not time waited")
        }
    }

    @Test("a common or short token is refused at start, naming the variable")
    func commonTokensRefused() {
        for token in ["passwordpassword", "1234567890123456", "aaaaaaaaaaaaaaaaaaaa", "changeme-changeme", "abcdefghijklmnopqrstuvwxyz"] {
            #expect(throws: ConsoleAccessError.self, "\(token)") { try ConsoleAccess(operatorToken: token, viewerToken: nil) }
            #expect(throws: ConsoleAccessError.self, "\(token)") { try ConsoleAccess(operatorToken: nil, viewerToken: token) }
        }
        #expect(throws: ConsoleAccessError.self) { try ConsoleAccess(operatorToken: "short", viewerToken: nil) }
    }

    @Test("behind a TLS proxy (X-Forwarded-Proto: https, Host forwarded) the cookie is Secure, __Host- and signs in")
    func behindATLSProxy() async throws {
        try await ConsoleFixture.with { fixture in
            let proxied: HTTPFields = [
                HTTPField.Name("Host")!: "news.example.com", HTTPField.Name("X-Forwarded-Proto")!: "https", .origin: "https://news.example.com",
                HTTPField.Name("Sec-Fetch-Site")!: "same-origin",
            ]
            let response = try await fixture.post("/console/sign-in", form: "token=\(ConsoleFixture.operatorToken)", headers: proxied)
            #expect(response.status == .seeOther)
            let cookie = try #require(response.headers[.setCookie])
            #expect(cookie.hasPrefix("__Host-paperboy_console="), "\(cookie)")
            #expect(cookie.contains("Secure"))
            #expect(cookie.contains("Path=/;") || cookie.hasSuffix("Path=/"), "\(cookie)")
        }
    }

    @Test("a device is looked up by POST with the CSRF token; a token in the URL is not looked up")
    func deviceLookupByPost() async throws {
        try await ConsoleFixture.with { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.viewerToken)
            let device = String(repeating: "02", count: 32)
            let byURL = try await fixture.get("/console/devices?token=\(device)", cookie: cookie)
            #expect(!String(buffer: byURL.body).contains("com.example.news"), "a token in the URL reaches proxy logs and history")
            let csrf = try await fixture.csrf(cookie: cookie)
            let noCSRF = try await fixture.post("/console/devices", form: "token=\(device)", cookie: cookie)
            #expect(noCSRF.status == .forbidden)
            let found = try await fixture.post("/console/devices", form: "token=\(device)&days=3&csrf=\(csrf)", cookie: cookie)
            #expect(found.status == .ok)
            #expect(String(buffer: found.body).contains("com.example.news"))
            #expect(String(buffer: found.body).contains(#"method="post" action="/console/devices""#))
        }
    }

    @Test(
        "a viewer's plan page with a window or capacity out of range gets 400 naming it, and serve answers the next request (issue 48: window=1e300 trapped, window=1e12 drew 11.5 million ticks)"
    )
    func planBoundsWhereParsed() async throws {
        try await ConsoleFixture.with { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.viewerToken)
            let publication = try #require(
                try await PublicationRepository(client: fixture.db.client).list(logger: fixture.db.logger).first { $0.slug == "morning" }
            )
            let base = "/console/plan?publication=\(publication.id)&environment=production&cohorts=4"
            for (query, field) in [
                ("window=1e300", "window"), ("window=1e12", "window"), ("window=0.001", "window"), ("capacity=1e-300", "capacity"),
                ("capacity=1e300", "capacity"), ("window=nan", "window"), ("capacity=inf", "capacity"),
            ] {
                let response = try await fixture.get(base + "&" + query, cookie: cookie)
                #expect(response.status == .badRequest, "\(query)")
                #expect(String(buffer: response.body).contains(field + ":"), "\(query): the error names \(field)")
            }
            let fine = try await fixture.get(base + "&window=24h", cookie: cookie)
            #expect(fine.status == .ok)
            #expect(String(buffer: fine.body).contains("5 devices in 4 cohorts"))
        }
    }

    @Test("the chart's time ticks stay a handful for any span, however long")
    func chartTicksBounded() {
        for span: TimeInterval in [60, 3600, 86400, 7 * 86400, 1e9, 1e12, 1e300] {
            let step = TimeChart.timeStep(span: span)
            #expect(span / step <= 7, "span \(span): \(span / step) ticks")
        }
    }

    @Test("the plan page's counts are kept for a minute per publication, environment and cohorts, with their age shown")
    func planCountsCached() async throws {
        let clock = ConsoleTestClock()
        let configure: @Sendable (inout ConsoleConfiguration) -> Void = { $0.now = { clock.now } }
        try await ConsoleFixture.with(configure: configure) { fixture in
            let cookie = try await fixture.signIn(ConsoleFixture.viewerToken)
            let publication = try #require(
                try await PublicationRepository(client: fixture.db.client).list(logger: fixture.db.logger).first { $0.slug == "morning" }
            )
            let path = "/console/plan?publication=\(publication.id)&environment=production&window=30m&cohorts=4"
            let first = String(buffer: try await fixture.get(path, cookie: cookie).body)
            #expect(first.contains("5 devices in 4 cohorts"))
            for index in 10..<13 {
                _ = try await DeviceRepository(client: fixture.db.client).register(
                    appID: fixture.app.id,
                    token: .apns(try DeviceToken(hex: String(repeating: String(format: "%02x", index), count: 32))),
                    DeviceRegistration(
                        environment: .production,
                        subscriptions: ["morning"],
                        timeZone: "Asia/Tokyo",
                        tier: .large,
                        autoDownload: true,
                        alertsAuthorized: false
                    ),
                    logger: fixture.db.logger
                )
            }
            clock.advance(by: 20)
            let cached = String(buffer: try await fixture.get(path, cookie: cookie).body)
            #expect(cached.contains("5 devices in 4 cohorts"), "counted 20 s ago: not again")
            #expect(cached.contains("counted 20 s ago"))
            clock.advance(by: 41)
            let recounted = String(buffer: try await fixture.get(path, cookie: cookie).body)
            #expect(recounted.contains("8 devices in 4 cohorts"), "a minute later: counted again")
        }
    }
}
