/// Where notifications go: Apple's production or development (sandbox) service, or any server that speaks
/// the APNs protocol, such as Paperboy's simulator.
public struct APNsEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// TLS 1.2+ with ALPN `h2`; false is cleartext HTTP/2 with prior knowledge (local simulators only).
    public var usesTLS: Bool

    public init(host: String, port: Int, usesTLS: Bool) {
        self.host = host
        self.port = port
        self.usesTLS = usesTLS
    }

    /// `api.push.apple.com:443`, for apps installed from the App Store or TestFlight.
    public static let production = APNsEndpoint(host: "api.push.apple.com", port: 443, usesTLS: true)
    /// `api.sandbox.push.apple.com:443`, for development builds.
    public static let sandbox = APNsEndpoint(host: "api.sandbox.push.apple.com", port: 443, usesTLS: true)

    /// Parses `production`, `sandbox`, `https://host[:port]` (port 443 by default) or `http://host:port`.
    ///
    /// - Throws: ``APNsEndpointError`` saying what is wrong with the text.
    public init(_ text: String) throws(APNsEndpointError) {
        switch text {
        case "production": self = .production
        case "sandbox", "development": self = .sandbox
        default:
            let usesTLS: Bool
            let rest: Substring
            if text.hasPrefix("https://") {
                usesTLS = true
                rest = text.dropFirst("https://".count)
            } else if text.hasPrefix("http://") {
                usesTLS = false
                rest = text.dropFirst("http://".count)
            } else {
                throw APNsEndpointError(text: text, problem: "must be production, sandbox, https://host:port or http://host:port")
            }
            let authority = rest.hasSuffix("/") ? rest.dropLast() : rest
            guard !authority.contains("/") else { throw APNsEndpointError(text: text, problem: "must not have a path") }
            let host: Substring
            let portText: Substring?
            if authority.hasPrefix("[") {
                // [::1]:2197
                guard let close = authority.firstIndex(of: "]") else { throw APNsEndpointError(text: text, problem: "has an unclosed [") }
                host = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                portText = after.isEmpty ? nil : (after.hasPrefix(":") ? after.dropFirst() : nil)
                if !after.isEmpty && portText == nil { throw APNsEndpointError(text: text, problem: "has text after the host") }
            } else if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
                portText = nil
            }
            guard !host.isEmpty else { throw APNsEndpointError(text: text, problem: "has no host") }
            let port: Int
            if let portText {
                guard let value = Int(portText), (1...65535).contains(value) else {
                    throw APNsEndpointError(text: text, problem: "has a bad port '\(portText)'")
                }
                port = value
            } else if usesTLS {
                port = 443
            } else {
                throw APNsEndpointError(text: text, problem: "needs a port (http:// is for local simulators)")
            }
            self.init(host: String(host), port: port, usesTLS: usesTLS)
        }
    }

    /// The `:authority` of requests.
    var authority: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return (usesTLS && port == 443) ? bracketed : "\(bracketed):\(port)"
    }

    public var description: String { "\(usesTLS ? "https" : "http")://\(authority)" }
}

/// An endpoint text that cannot be used.
public struct APNsEndpointError: Error, Equatable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String { "APNs endpoint '\(text)' \(problem)" }
}
