import Foundation
import PaperboyStore
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

    @Test("a cookie holds 43 random base64url characters; anything else is no session, refused without the database")
    func cookieSecrets() throws {
        let one = ConsoleSession.newSecret()
        let two = ConsoleSession.newSecret()
        #expect(one.utf8.count == 43 && one != two)
        let digest = try #require(ConsoleSession.digest(ofCookie: one))
        #expect(digest.count == 32 && digest == ConsoleSession.digest(ofCookie: one))
        #expect(ConsoleSession.digest(ofCookie: two) != digest)
        for bad in [
            "", "garbage", String(one.dropLast()), one + "A", String(one.dropLast()) + "=", String(one.dropLast()) + ".",
            String(repeating: "é", count: 43),
        ] {
            #expect(ConsoleSession.digest(ofCookie: bad) == nil, "\(bad)")
        }
    }

    @Test("a stored session opens as its role while its token is the one it signed in with; a changed token ends it")
    func storedSessions() throws {
        let mark = try #require(keys.tokenMark(for: .viewer))
        #expect(mark.count == 16)
        #expect(keys.tokenMark(for: .operator) != mark, "each role its own mark")
        let row = ConsoleSessionRow(
            id: 7,
            role: "viewer",
            tokenMark: mark,
            name: "ana",
            address: "192.0.2.1",
            signedInAt: now,
            seenAt: now,
            expiresAt: now.addingTimeInterval(3600)
        )
        let session = try #require(ConsoleSession(row, keys: keys))
        #expect(session.role == .viewer && session.id == 7 && session.who == "viewer (ana)")
        // The row claims the operator's role with the viewer's mark: no session.
        var claimed = row
        claimed.role = "operator"
        #expect(ConsoleSession(claimed, keys: keys) == nil)
        // Another viewer token (the token was changed): signed out. An unknown role: no session.
        let other = try ConsoleAccess(operatorToken: Self.operatorToken, viewerToken: "another-viewer-token-000")
        #expect(ConsoleSession(row, keys: other.keys(secret: Self.secret)) == nil)
        var unknown = row
        unknown.role = "admin"
        #expect(ConsoleSession(unknown, keys: keys) == nil)
        // The mark is derived with the secret: a database copy without it cannot test guesses of the token by the
        // mark alone. (With the secret, which `console_keys` holds unless PAPERBOY_CONSOLE_SESSION_KEY is set, it can.)
        #expect(access.keys(secret: Array("another-secret-of-32-bytes-00000".utf8)).tokenMark(for: .viewer) != mark)
    }

    @Test("a session's CSRF token is accepted by that session only")
    func csrf() throws {
        let one = ConsoleSession(id: 1, role: .operator, name: nil, signedIn: now, expires: now.addingTimeInterval(60))
        let two = ConsoleSession(id: 2, role: .operator, name: nil, signedIn: now, expires: now.addingTimeInterval(60))
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
        // Counted as the database counts: code points. Twenty letters with three combining marks each are 20
        // characters and 80 code points (the console fuzzer's sign-in with such a name failed the column's check: 500).
        let zalgo = String(repeating: "Z\u{351}\u{308}\u{334}", count: 20)
        #expect(ConsoleRoutes.cleanName(zalgo)?.unicodeScalars.count == 64)
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
