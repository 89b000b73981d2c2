/// Where a push client connects: a host and port, over TLS 1.2+ with ALPN `h2`, or over cleartext HTTP/2 with
/// prior knowledge (local simulators only).
public struct PushEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var usesTLS: Bool

    public init(host: String, port: Int, usesTLS: Bool) {
        self.host = host
        self.port = port
        self.usesTLS = usesTLS
    }

    /// Parses `https://host[:port]` (port 443 by default) or `http://host:port`, with an optional trailing `/`.
    ///
    /// - Throws: a ``PushEndpointError`` saying what is wrong with the text.
    public init(url text: String) throws(PushEndpointError) {
        let usesTLS: Bool
        let rest: Substring
        if text.hasPrefix("https://") {
            usesTLS = true
            rest = text.dropFirst("https://".count)
        } else if text.hasPrefix("http://") {
            usesTLS = false
            rest = text.dropFirst("http://".count)
        } else {
            throw PushEndpointError(text: text, problem: "must be https://host[:port] or http://host:port")
        }
        let authority = rest.hasSuffix("/") ? rest.dropLast() : rest
        guard !authority.contains("/") else { throw PushEndpointError(text: text, problem: "must not have a path") }
        let host: Substring
        let portText: Substring?
        if authority.hasPrefix("[") {
            // [::1]:2197
            guard let close = authority.firstIndex(of: "]") else { throw PushEndpointError(text: text, problem: "has an unclosed [") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            portText = after.isEmpty ? nil : (after.hasPrefix(":") ? after.dropFirst() : nil)
            if !after.isEmpty && portText == nil { throw PushEndpointError(text: text, problem: "has text after the host") }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
            portText = nil
        }
        guard !host.isEmpty else { throw PushEndpointError(text: text, problem: "has no host") }
        let port: Int
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw PushEndpointError(text: text, problem: "has a bad port '\(portText)'")
            }
            port = value
        } else if usesTLS {
            port = 443
        } else {
            throw PushEndpointError(text: text, problem: "needs a port (http:// is for local simulators)")
        }
        self.init(host: String(host), port: port, usesTLS: usesTLS)
    }

    /// The `:authority` of requests.
    public var authority: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return (usesTLS && port == 443) ? bracketed : "\(bracketed):\(port)"
    }

    public var description: String { "\(usesTLS ? "https" : "http")://\(authority)" }
}

/// An endpoint text that cannot be used.
public struct PushEndpointError: Error, Equatable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public init(text: String, problem: String) {
        self.text = text
        self.problem = problem
    }

    public var description: String { "endpoint '\(text)' \(problem)" }
}
