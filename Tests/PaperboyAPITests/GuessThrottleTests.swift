import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import PaperboyAPI

/// The rules of wrong secrets by address, without I/O: a clock in seconds passed in.
@Suite("Wrong tokens by address: backoff, a global ceiling, nobody else locked out")
struct GuessThrottleTests {
    @Test("five wrong tokens are checked, then the address waits a backoff that doubles up to five minutes")
    func backoff() {
        var throttle = GuessThrottle()
        for attempt in 0..<5 {
            #expect(throttle.verdict(address: "a", now: 0) == .check, "attempt \(attempt)")
            throttle.failed(address: "a", now: 0)
        }
        #expect(throttle.verdict(address: "a", now: 0) == .wait(seconds: 1))
        #expect(throttle.verdict(address: "a", now: 1) == .check)
        throttle.failed(address: "a", now: 1)
        #expect(throttle.verdict(address: "a", now: 1) == .wait(seconds: 2))
        var now = 3.0
        for _ in 0..<20 {
            guard case .check = throttle.verdict(address: "a", now: now) else {
                Issue.record("the address waits past its backoff")
                return
            }
            throttle.failed(address: "a", now: now)
            guard case .wait(let seconds) = throttle.verdict(address: "a", now: now) else {
                Issue.record("a failure past the allowance must make the address wait")
                return
            }
            #expect(seconds <= 300)
            now += Double(seconds)
        }
        #expect(throttle.verdict(address: "a", now: now) == .check)
        #expect(throttle.verdict(address: "b", now: now) == .check, "another address never waits for a's guesses")
    }

    @Test("an address is forgotten an hour after its last failure; a success does not clear it")
    func forgetting() {
        var throttle = GuessThrottle()
        for _ in 0..<8 { throttle.failed(address: "a", now: 0) }
        #expect(throttle.verdict(address: "a", now: 1) != .check)
        #expect(throttle.verdict(address: "a", now: 3600) == .check)
        throttle.failed(address: "a", now: 3600)
        #expect(throttle.verdict(address: "a", now: 3600) == .check, "forgotten: the count started again")
    }

    @Test("over the global ceiling a guessing address waits after one failure; a clean address is still checked")
    func ceiling() {
        var throttle = GuessThrottle()
        for index in 0..<101 { throttle.failed(address: "10.0.0.\(index)", now: 0) }
        throttle.failed(address: "10.0.1.1", now: 1)
        #expect(throttle.verdict(address: "10.0.1.1", now: 1) == .wait(seconds: 1))
        #expect(throttle.verdict(address: "192.0.2.1", now: 1) == .check)
        // A minute later the ceiling is no longer crossed: five free failures again.
        throttle.failed(address: "10.0.2.2", now: 120)
        #expect(throttle.verdict(address: "10.0.2.2", now: 120) == .check)
    }

    @Test("memory is bounded: the quietest addresses are forgotten first")
    func bounded() {
        var policy = GuessThrottle.Policy()
        policy.maxAddresses = 10
        var throttle = GuessThrottle(policy: policy)
        for index in 0..<50 { throttle.failed(address: "a\(index)", now: Double(index)) }
        #expect(throttle.count <= 10)
    }

    @Test("an address guessing all along is kept while the quiet ones are forgotten: its backoff survives a flood of new addresses")
    func guesserKept() {
        var policy = GuessThrottle.Policy()
        policy.maxAddresses = 10
        var throttle = GuessThrottle(policy: policy)
        for index in 0..<60 {
            let now = Double(index) * 30
            throttle.failed(address: "new\(index)", now: now)
            if index % 4 == 0 { throttle.failed(address: "guesser", now: now) }
        }
        #expect(throttle.count <= 10)
        #expect(throttle.verdict(address: "guesser", now: 59 * 30) != .check, "15 failures: still waiting its backoff")
    }

    @Test(
        "a try is decided, checked and counted in one step: tries at the same instant the moment a backoff ends get one check between them (issue 48, item 2)"
    )
    func oneCheckAtATime() {
        var throttle = GuessThrottle()
        for _ in 0..<5 { _ = throttle.attempt(address: "a", now: 0) { false } }
        #expect(throttle.attempt(address: "a", now: 0.5) { true }.0 == .wait(seconds: 1), "not even checked")
        var checked = 0
        let outcomes = (0..<3).map { _ in
            throttle.attempt(address: "a", now: 1) {
                checked += 1
                return false
            }.0
        }
        #expect(outcomes == [.wrong, .wait(seconds: 2), .wait(seconds: 2)])
        #expect(checked == 1, "one guess checked, not three")
        #expect(throttle.attempt(address: "fresh", now: 1) { true }.0 == .right, "an address that never failed is checked")
        #expect(throttle.attempt(address: "a", now: 3) { true }.0 == .right, "a right token once the wait is over")
        #expect(throttle.attempt(address: "a", now: 3) { true }.0 == .right, "and a right one leaves no wait behind it")
    }

    @Test("GuessGuard: concurrent wrong tries from one address, 100 at once, get at most the free ones checked")
    func guardConcurrent() async {
        let guesses = GuessGuard(now: { 0 })
        let checked = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    var wasChecked = false
                    _ = guesses.attempt(address: "a") {
                        wasChecked = true
                        return false
                    }
                    return wasChecked
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(checked == 5, "five free, then a backoff: \(checked) checked")
    }
}

@Suite("Tokens people choose")
struct TokenStrengthTests {
    @Test("short, repetitive, sequential and common tokens are refused, saying why and never quoting them")
    func weak() throws {
        for token in [
            "short", "passwordpassword", "Password12345678", "changeme-changeme", "1234567890123456", "abcdefghijklmnopqrstuvwxyz",
            "aaaaaaaaaaaaaaaaaaaa", "abababababababababab", "admin-admin-admin-2024", "paperboy-console-token", "operator-token-0123456789",
            "Newspaper2024!!!", "MorningEdition2026", "DailyHerald-Winter-2025",
        ] {
            let reason = try #require(TokenStrength.weakness(of: token), "\(token) is refused")
            #expect(!reason.contains(token))
        }
    }

    @Test("random tokens, and the fixtures' own, are accepted")
    func strong() {
        for token in ["3f9a1c7e2b8d4f60a5e9c1d7b3f2a8e4c6d0b9a7", "op-7d1e9c4a2b8f6035e1", "vw-5e2a8c1f9b7d3046a2", "test-admin-token-shared-cache"] {
            #expect(TokenStrength.weakness(of: token) == nil, "\(token)")
        }
    }
}

@Suite("Trusted proxies")
struct TrustedProxiesTests {
    func address(_ text: String) throws -> SocketAddress { try SocketAddress(ipAddress: text, port: 443) }

    @Test(
        "X-Forwarded-Proto is kept only from a trusted proxy (issue 48, item 3): from anyone else, or with no proxy named, it is dropped before the routes see it"
    )
    func forwardedProtoFromProxiesOnly() throws {
        let proxies = try TrustedProxies(parsing: ["10.0.0.0/8"])
        var head = HTTPRequest(method: .post, scheme: "http", authority: "news.example.com", path: "/console/sign-in")
        head.headerFields[TrustedProxies.forwardedProto] = "https"
        head.headerFields[TrustedProxies.forwardedFor] = "203.0.113.9"
        let viaProxy = proxies.stamped(head, connection: try address("10.1.2.3"))
        #expect(viaProxy.headerFields[TrustedProxies.forwardedProto] == "https", "the proxy says how the browser reached it")
        #expect(viaProxy.headerFields[ClientAddress.header] == "203.0.113.9")
        let direct = proxies.stamped(head, connection: try address("198.51.100.7"))
        #expect(direct.headerFields[TrustedProxies.forwardedProto] == nil, "a client reaching serve directly cannot claim HTTPS")
        #expect(direct.headerFields[ClientAddress.header] == "198.51.100.7")
        #expect(TrustedProxies.none.stamped(head, connection: try address("10.1.2.3")).headerFields[TrustedProxies.forwardedProto] == nil)
    }

    @Test("from a trusted proxy the client is the rightmost untrusted X-Forwarded-For address; from anyone else, the connection's")
    func client() throws {
        let proxies = try TrustedProxies(parsing: ["127.0.0.1", "10.0.0.0/8"])
        let proxy = try address("127.0.0.1")
        #expect(proxies.client(connection: proxy, forwardedFor: "203.0.113.9")?.ipAddress == "203.0.113.9")
        #expect(proxies.client(connection: proxy, forwardedFor: "198.51.100.1, 203.0.113.9, 10.1.2.3")?.ipAddress == "203.0.113.9")
        #expect(proxies.client(connection: proxy, forwardedFor: nil)?.ipAddress == "127.0.0.1")
        #expect(proxies.client(connection: proxy, forwardedFor: "not an address")?.ipAddress == "127.0.0.1")
        let stranger = try address("198.51.100.7")
        #expect(proxies.client(connection: stranger, forwardedFor: "127.0.0.1")?.ipAddress == "198.51.100.7", "a client cannot claim another address")
        #expect(TrustedProxies.none.client(connection: proxy, forwardedFor: "203.0.113.9")?.ipAddress == "127.0.0.1")
        let v6 = try TrustedProxies(parsing: ["fd00::/8"])
        #expect(v6.client(connection: try address("fd00::1"), forwardedFor: "[2001:db8::1]")?.ipAddress == "2001:db8::1")
    }

    @Test("a text that is neither an address nor a block is refused, named")
    func refused() {
        #expect(throws: TrustedProxiesError(text: "proxy.internal")) { try TrustedProxies(parsing: ["proxy.internal"]) }
        #expect(throws: TrustedProxiesError.self) { try TrustedProxies(parsing: ["10.0.0.0/33"]) }
    }
}
