import PushTransport

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
            do {
                let endpoint = try PushEndpoint(url: text)
                self.init(host: endpoint.host, port: endpoint.port, usesTLS: endpoint.usesTLS)
            } catch {
                throw APNsEndpointError(
                    text: text,
                    problem: text.hasPrefix("https://") || text.hasPrefix("http://")
                        ? error.problem : "must be production, sandbox, https://host:port or http://host:port"
                )
            }
        }
    }

    /// Where the connections go.
    var transport: PushEndpoint { PushEndpoint(host: host, port: port, usesTLS: usesTLS) }

    /// The `:authority` of requests.
    var authority: String { transport.authority }

    public var description: String { transport.description }
}

/// An endpoint text that cannot be used.
public struct APNsEndpointError: Error, Equatable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String { "APNs endpoint '\(text)' \(problem)" }
}
