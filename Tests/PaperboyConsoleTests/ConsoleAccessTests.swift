import Foundation
import Testing

@testable import PaperboyConsole

@Suite("Console sign-in: tokens, sessions and CSRF")
struct ConsoleAccessTests {
    static let operatorToken = "op-7d1e9c4a2b8f6035e1"
    static let viewerToken = "vw-5e2a8c1f9b7d3046a2"
    static let secret = Array("a-secret-of-thirty-two-bytes-000".utf8)

    let access = try! ConsoleAccess(operatorToken: operatorToken, viewerToken: viewerToken)
    var keys: ConsoleKeys { access.keys(secret: Self.secret) }
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("each token signs in as its role; any other text as nobody")
    func roles() {
        #expect(access.role(forToken: Self.operatorToken) == .operator)
        #expect(access.role(forToken: " \(Self.viewerToken)\n") == .viewer)
        #expect(access.role(forToken: Self.operatorToken + "x") == nil)
        #expect(access.role(forToken: "") == nil)
        #expect(access.roles == [.operator, .viewer])
    }

    @Test("a short token, or one token for both roles, is refused naming the variable; no token disables the console")
    func refusedTokens() throws {
        #expect(
            throws: ConsoleAccessError(
                variable: "PAPERBOY_CONSOLE_OPERATOR_TOKEN",
                message: "the token must be at least 16 characters (e.g. `openssl rand -hex 24`)"
            )
        ) {
            try ConsoleAccess(operatorToken: "short", viewerToken: nil)
        }
        #expect(throws: ConsoleAccessError.self) { try ConsoleAccess(operatorToken: Self.operatorToken, viewerToken: Self.operatorToken) }
        #expect(!ConsoleAccess.disabled.isEnabled)
        let viewerOnly = try ConsoleAccess(operatorToken: nil, viewerToken: Self.viewerToken)
        #expect(viewerOnly.roles == [.viewer])
    }

    @Test("a sealed session opens until it expires or idles; an edited or foreign cookie does not")
    func sealedSessions() throws {
        let session = ConsoleSession(role: .viewer, name: "ana", issued: now, expires: now.addingTimeInterval(3600))
        let cookie = try #require(session.seal(with: keys))
        #expect(try ConsoleSession.open(cookie, keys: keys, now: now, idleTimeout: 600).get() == session)
        #expect(ConsoleSession.open(cookie, keys: keys, now: now.addingTimeInterval(3601), idleTimeout: 7200) == .failure(.expired))
        #expect(ConsoleSession.open(cookie, keys: keys, now: now.addingTimeInterval(601), idleTimeout: 600) == .failure(.idle))

        // The payload rewritten to claim the operator's role: its signature no longer matches either key.
        let parts = cookie.split(separator: ".")
        let forged = String(decoding: ConsoleSession.data(base64url: parts[0])!, as: UTF8.self).replacingOccurrences(of: "viewer", with: "operator")
        let edited = ConsoleSession.base64url(Data(forged.utf8)) + "." + parts[1]
        #expect(ConsoleSession.open(edited, keys: keys, now: now, idleTimeout: 600) == .failure(.forged))

        // Under another token (a token was changed) or another secret (the key rotated): signed out.
        let other = try ConsoleAccess(operatorToken: Self.operatorToken, viewerToken: "another-viewer-token-000")
        #expect(ConsoleSession.open(cookie, keys: other.keys(secret: Self.secret), now: now, idleTimeout: 600) == .failure(.forged))
        #expect(
            ConsoleSession.open(cookie, keys: access.keys(secret: Array("another-secret-of-32-bytes-00000".utf8)), now: now, idleTimeout: 600)
                == .failure(.forged)
        )
        #expect(ConsoleSession.open("garbage", keys: keys, now: now, idleTimeout: 600) == .failure(.forged))
    }

    @Test("a session's CSRF token is accepted by that session only, and is not its session key's")
    func csrf() throws {
        let one = ConsoleSession(role: .operator, name: nil, issued: now, expires: now.addingTimeInterval(60))
        let two = ConsoleSession(role: .operator, name: nil, issued: now, expires: now.addingTimeInterval(60))
        let token = try #require(one.csrfToken(with: keys))
        #expect(one.acceptsCSRF(token, with: keys))
        #expect(!two.acceptsCSRF(token, with: keys))
        #expect(!one.acceptsCSRF(nil, with: keys))
        #expect(!one.acceptsCSRF("", with: keys))
        #expect(!one.acceptsCSRF(token, with: access.keys(secret: Array("another-secret-of-32-bytes-00000".utf8))))
    }

    @Test("the name typed at sign-in is kept printable and short")
    func names() {
        #expect(ConsoleRoutes.cleanName("  ana\n") == "ana")
        #expect(ConsoleRoutes.cleanName("a\u{7}b") == "ab")
        #expect(ConsoleRoutes.cleanName("   ") == nil)
        #expect(ConsoleRoutes.cleanName(String(repeating: "x", count: 100))?.count == 64)
    }

    @Test("a given session key is at least 32 characters, named when not")
    func sessionKey() throws {
        #expect(throws: ConsoleAccessError.self) { try ConsoleSessionSecret.given(text: "too-short") }
        guard case .given(let bytes) = try ConsoleSessionSecret.given(text: String(repeating: "0123456789abcdef", count: 4)) else {
            Issue.record("a long key is taken")
            return
        }
        #expect(bytes.count == 64)
    }

    @Test("loopback is this machine's: localhost, 127.x, [::1], with any port")
    func loopback() {
        #expect(ConsoleOrigin.isLoopback(authority: "127.0.0.1:8080"))
        #expect(ConsoleOrigin.isLoopback(authority: "localhost"))
        #expect(ConsoleOrigin.isLoopback(authority: "[::1]:8080"))
        #expect(!ConsoleOrigin.isLoopback(authority: "0.0.0.0"))
        #expect(!ConsoleOrigin.isLoopback(authority: "10.0.0.5:8080"))
    }
}
