import Foundation
import Testing

@testable import PaperboyConsole

@Suite("Console sign-in: tokens, sessions and CSRF")
struct ConsoleAccessTests {
    static let operatorToken = "operator-token-0123456789"
    static let viewerToken = "viewer-token-0123456789ab"

    let access = try! ConsoleAccess(operatorToken: operatorToken, viewerToken: viewerToken)
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

    @Test("a sealed session opens until it expires; an edited or foreign cookie does not")
    func sealedSessions() throws {
        let key = try #require(access.sessionKey(for: .viewer))
        let session = ConsoleSession(role: .viewer, name: "ana", expires: now.addingTimeInterval(60))
        let cookie = session.seal(with: key)
        #expect(ConsoleSession.open(cookie, access: access, now: now) == session)
        #expect(ConsoleSession.open(cookie, access: access, now: now.addingTimeInterval(61)) == nil)

        // The payload rewritten to claim the operator's role: its signature no longer matches either key.
        let parts = cookie.split(separator: ".")
        let forged = String(decoding: ConsoleSession.data(base64url: parts[0])!, as: UTF8.self).replacingOccurrences(of: "viewer", with: "operator")
        let edited = ConsoleSession.base64url(Data(forged.utf8)) + "." + parts[1]
        #expect(ConsoleSession.open(edited, access: access, now: now) == nil)

        // Under other tokens (a token was changed): signed out.
        let other = try ConsoleAccess(operatorToken: Self.operatorToken, viewerToken: "another-viewer-token-000")
        #expect(ConsoleSession.open(cookie, access: other, now: now) == nil)
        #expect(ConsoleSession.open("garbage", access: access, now: now) == nil)
    }

    @Test("a session's CSRF token is accepted by that session only")
    func csrf() throws {
        let key = try #require(access.sessionKey(for: .operator))
        let one = ConsoleSession(role: .operator, name: nil, expires: now.addingTimeInterval(60))
        let two = ConsoleSession(role: .operator, name: nil, expires: now.addingTimeInterval(60))
        let token = one.csrfToken(with: key)
        #expect(one.acceptsCSRF(token, with: key))
        #expect(!two.acceptsCSRF(token, with: key))
        #expect(!one.acceptsCSRF(nil, with: key))
        #expect(!one.acceptsCSRF("", with: key))
    }

    @Test("the name typed at sign-in is kept printable and short")
    func names() {
        #expect(ConsoleRoutes.cleanName("  ana\n") == "ana")
        #expect(ConsoleRoutes.cleanName("a\u{7}b") == "ab")
        #expect(ConsoleRoutes.cleanName("   ") == nil)
        #expect(ConsoleRoutes.cleanName(String(repeating: "x", count: 100))?.count == 64)
    }

    @Test("the cookie is Secure unless the server listens on loopback alone")
    func loopback() {
        #expect(ConsoleConfiguration.servesLoopbackOnly(host: "127.0.0.1"))
        #expect(ConsoleConfiguration.servesLoopbackOnly(host: "localhost"))
        #expect(ConsoleConfiguration.servesLoopbackOnly(host: "::1"))
        #expect(!ConsoleConfiguration.servesLoopbackOnly(host: "0.0.0.0"))
        #expect(!ConsoleConfiguration.servesLoopbackOnly(host: "10.0.0.5"))
    }
}
