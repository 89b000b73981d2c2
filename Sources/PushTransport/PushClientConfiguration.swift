import Metrics
import NIOCore
import NIOSSL

/// What ``PushClient`` reads of a provider's configuration: where to connect, and the connections' settings.
/// Each provider keeps its own configuration type, with its own defaults (APNs starts at one stream per
/// connection, FCM at about 100) and whatever else it needs (a retry policy, a quota); the connections' settings
/// read as its own fields (`configuration.connections`, `configuration.requestTimeout`).
@dynamicMemberLookup
public protocol PushClientConfiguration: Sendable {
    /// Where the connections go.
    var connectionEndpoint: PushEndpoint { get }
    var connection: PushConnectionSettings { get set }
}

extension PushClientConfiguration {
    /// The connections' settings as the configuration's own fields.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<PushConnectionSettings, Value>) -> Value {
        get { connection[keyPath: keyPath] }
        set { connection[keyPath: keyPath] = newValue }
    }
}

/// How a push client's connections behave, the same for every provider but for the three counts each provider
/// sets: how many connections, and how many streams on each.
public struct PushConnectionSettings: Sendable {
    /// HTTP/2 connections to open (on demand) to the endpoint.
    public var connections: Int
    /// Streams per connection before the server's first SETTINGS says how many it allows.
    public var initialStreamLimit: Int
    /// The most streams used on one connection, even if the server allows more.
    public var maximumStreamsPerConnection: Int
    /// From a request's write to its answer; then its fate is unknown and its stream is cancelled.
    public var requestTimeout: Duration = .seconds(10)
    /// A connection with requests outstanding that answers nothing for this long, or for four times the recent
    /// answer time if that is longer (at most ``requestTimeout``), is stalled: it takes no new requests until it
    /// answers again, and while every connection is stalled the client is ``PushClient/isUnreachable``. A server
    /// that hangs keeps its connections open and takes in what is written, then processes it all at once when it
    /// is back: this bounds that burst.
    public var stalledAfter: Duration = .milliseconds(500)
    /// For TCP, TLS and HTTP/2 to be up.
    public var connectTimeout: Duration = .seconds(10)
    /// How long a request may wait for a connection, a free stream or a credential before it fails as not sent.
    public var maximumWait: Duration = .seconds(60)
    /// For a sender that paces its own sends (a broadcast worker): while the endpoint cannot be reached (a connect
    /// failed, or a connection closed as one), requests waiting for a connection fail at once as not sent, instead
    /// of waiting up to ``maximumWait`` and all going out together the moment the endpoint is back. Slow or stalled
    /// connections are not this: what waits for them goes out when they answer. The sender learns of the outage from
    /// `isUnreachable` a moment later; what it handed over meanwhile (and what a closed connection gave back
    /// unprocessed) is its to send again at its own pace. Off by default: a one-off sender (`paperboy push`) waits.
    public var failWaitingWhileUnreachable = false
    /// An idle connection is checked with a PING this often; no PING ACK within ``pingTimeout`` closes it.
    public var pingInterval: Duration = .seconds(60)
    public var pingTimeout: Duration = .seconds(10)
    public var reconnectInitialBackoff: Duration = .milliseconds(100)
    public var reconnectMaximumBackoff: Duration = .seconds(30)
    /// How often one request may come back unprocessed (GOAWAY, refused stream) before it fails.
    public var maximumResends: Int = 10
    /// TLS settings, e.g. the trust roots of a test server. ALPN `h2` and TLS 1.2 or newer are always set.
    public var tls: TLSConfiguration?
    /// Where the client's metrics go; the process's bootstrapped `MetricsSystem` when nil.
    public var metricsFactory: (any MetricsFactory)?

    public init(connections: Int, initialStreamLimit: Int, maximumStreamsPerConnection: Int) {
        self.connections = connections
        self.initialStreamLimit = initialStreamLimit
        self.maximumStreamsPerConnection = maximumStreamsPerConnection
    }
}

extension PushConnectionPool.Configuration {
    /// The pool's configuration from a client's: every count at least 1.
    init(service: String, endpoint: PushEndpoint, _ settings: PushConnectionSettings) {
        self.init(
            service: service,
            endpoint: endpoint,
            connections: max(1, settings.connections),
            initialStreamLimit: max(1, settings.initialStreamLimit),
            streamCap: max(1, settings.maximumStreamsPerConnection),
            connectTimeout: TimeAmount(settings.connectTimeout),
            maximumWait: TimeAmount(settings.maximumWait),
            maximumResends: settings.maximumResends,
            reconnectInitialBackoff: TimeAmount(settings.reconnectInitialBackoff),
            reconnectMaximumBackoff: TimeAmount(settings.reconnectMaximumBackoff),
            stalledAfter: TimeAmount(settings.stalledAfter),
            failWaitingWhileUnreachable: settings.failWaitingWhileUnreachable,
            timing: .init(
                requestTimeout: TimeAmount(settings.requestTimeout),
                pingInterval: TimeAmount(settings.pingInterval),
                pingTimeout: TimeAmount(settings.pingTimeout)
            )
        )
    }
}
