import Foundation
import HTTPTypes
import Hummingbird

/// The console's address as browsers see it: `https://news.example.com`. It decides whether the session cookie is
/// `Secure` (and `__Host-` prefixed), which `Origin` a form must come from, and the links in redirects.
///
/// From `--public-url` when given (``ConsolePublicURL``). Otherwise from the request: `https` when the listener
/// serves TLS or a trusted proxy says so (`X-Forwarded-Proto: https`; the server drops it from anyone else:
/// `TrustedProxies.stamped`), and the `Host` the browser asked for (a proxy must
/// forward it). Trusting these two headers is safe for what they decide: a browser cannot set them, and another
/// site's page can only make the browser send its own.
struct ConsoleOrigin: Sendable, Equatable {
    var scheme: String
    /// `host` or `host:port`, lowercased.
    var authority: String
    /// From `--public-url`: the operator said what it is.
    var configured: Bool

    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let hostField = HTTPField.Name("Host")!

    /// The origin `request` was made to.
    static func of(_ request: Request, publicURL: ConsolePublicURL?, servesTLS: Bool) -> ConsoleOrigin {
        if let publicURL {
            return ConsoleOrigin(scheme: publicURL.scheme, authority: publicURL.authority, configured: true)
        }
        let forwarded = request.headers[forwardedProto]?.split(separator: ",").first?.trimmingCharacters(in: .whitespaces).lowercased()
        let scheme = servesTLS || forwarded == "https" ? "https" : "http"
        let authority = (request.headers[hostField] ?? request.head.authority ?? "").lowercased()
        return ConsoleOrigin(scheme: scheme, authority: authority, configured: false)
    }

    /// `https://news.example.com`.
    var origin: String { "\(scheme)://\(authority)" }

    /// Whether the session cookie is `Secure`: always but for plain HTTP that the operator asked for
    /// (`--public-url http://…`) or that stays on this machine (a browser at `http://127.0.0.1`, as the demo runs).
    var secureCookie: Bool {
        scheme == "https" || (!configured && !Self.isLoopback(authority: authority))
    }

    /// Plain HTTP with a `Secure` cookie: the browser will not keep it, and the sign-in page says why.
    var dropsItsCookie: Bool { scheme == "http" && secureCookie }

    /// `__Host-paperboy_console` when `Secure` (a cookie no other host or path can set or shadow: `Path=/`, no
    /// `Domain`), else `paperboy_console` on `/console`.
    var cookieName: String { secureCookie ? "__Host-paperboy_console" : "paperboy_console" }
    var cookiePath: String { secureCookie ? "/" : "/console" }

    /// Whether an `Origin` header names this origin (scheme, host and port; the default port may be left out).
    func accepts(origin given: String) -> Bool {
        guard let url = URL(string: given), let givenScheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return false }
        let defaultPort = givenScheme == "https" ? 443 : 80
        let givenAuthority = url.port.map { $0 == defaultPort ? host : "\(host):\($0)" } ?? host
        let ownDefault = scheme == "https" ? ":443" : ":80"
        let own = authority.hasSuffix(ownDefault) ? String(authority.dropLast(ownDefault.count)) : authority
        return givenScheme == scheme && givenAuthority == own
    }

    /// An absolute link to `path` when the public URL is known, else `path` itself.
    func link(_ path: String) -> String {
        configured ? origin + path : path
    }

    /// Whether `authority` is this machine: `localhost`, `127.x.x.x` or `[::1]`, with any port.
    static func isLoopback(authority: String) -> Bool {
        var host = authority.lowercased()
        if host.hasPrefix("[") {
            host = String(host.dropFirst().prefix { $0 != "]" })
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

/// `paperboy serve --public-url`: where browsers reach the console, an origin (`https://news.example.com`, with a
/// port if not the default) and no path.
public struct ConsolePublicURL: Sendable, Equatable, CustomStringConvertible {
    public var scheme: String
    /// `host` or `host:port`, lowercased.
    public var authority: String

    /// - Throws: ``ConsolePublicURLError`` saying what is wrong (not quoting more than the text given).
    public init(parsing text: String) throws(ConsolePublicURLError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw ConsolePublicURLError(message: "\(text) is not a URL like https://news.example.com")
        }
        guard scheme == "https" || scheme == "http" else {
            throw ConsolePublicURLError(message: "\(text): the scheme is https (or http on a network you trust), not \(scheme)")
        }
        guard url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil, url.user == nil else {
            throw ConsolePublicURLError(
                message: "\(text): give the origin only (scheme, host and port): the console is served at /console of it"
            )
        }
        let defaultPort = scheme == "https" ? 443 : 80
        let lowercased = host.lowercased()
        let bracketed = lowercased.contains(":") && !lowercased.hasPrefix("[") ? "[\(lowercased)]" : lowercased
        self.scheme = scheme
        self.authority = url.port.map { $0 == defaultPort ? bracketed : "\(bracketed):\($0)" } ?? bracketed
    }

    public var description: String { "\(scheme)://\(authority)" }

    /// Whether it names this machine (`localhost`, `127.x.x.x`, `[::1]`), where plain HTTP travels no network.
    public var isLoopback: Bool { ConsoleOrigin.isLoopback(authority: authority) }
}

public struct ConsolePublicURLError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
