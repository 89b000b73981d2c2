import APNs
import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import PaperboyCore
import PushSimulator
import Synchronization

// Accepts and foreign answers are the shared simulator's types: importers of APNsSimulator use them as its own.
@_exported import struct PushSimulator.SimulatorAccept
@_exported import struct PushSimulator.SimulatorForeignAnswer

/// An APNs-compatible HTTP/2 server for tests, demos and benchmarks: it checks every request as APNs does
/// (``APNsRequestValidator``), answers with APNs statuses and reasons, advertises APNs's stream limits, and
/// injects faults on demand (per-token outcomes, random failures, GOAWAY, dropped connections, latency).
///
/// Cleartext HTTP/2 with prior knowledge (h2c) by default, or TLS with ALPN `h2`.
public final class APNsSimulator: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        /// 0 picks a free port.
        public var port: Int
        /// nil serves cleartext HTTP/2 (h2c); when set the simulator adds ALPN `h2`.
        public var tls: TLSConfiguration?
        public var validation: APNsRequestValidator.Configuration
        public var faults: Faults
        public var eventLoopThreads: Int = System.coreCount
        /// Keep every accept with its connection and stream, and per-token counts (for tests); turn off for big
        /// benchmarks.
        public var recordsAccepted: Bool = true
        /// Called on the connection's event loop for every accepted notification, as APNs would deliver
        /// it: the demo's simulated devices act on these. Keep it short; hand work off to a task.
        public var onAccept: (@Sendable (Delivery) -> Void)?

        public init(
            validation: APNsRequestValidator.Configuration,
            faults: Faults = .init(),
            tls: TLSConfiguration? = nil,
            host: String = "127.0.0.1",
            port: Int = 0
        ) {
            self.validation = validation
            self.faults = faults
            self.tls = tls
            self.host = host
            self.port = port
        }
    }

    /// A notification the simulator accepted: what a device would receive.
    public struct Delivery: Sendable {
        /// The device token, lowercase hex.
        public var token: String
        /// `apns-push-type` (`background`, `alert`, …).
        public var pushType: String
        public var topic: String?
        public var payload: [UInt8]
        public var acceptedAt: Date
    }

    /// What the simulator does besides answering as a healthy APNs would.
    public struct Faults: Sendable {
        /// SETTINGS_MAX_CONCURRENT_STREAMS advertised at connection start, until the connection's first request
        /// with a valid provider token (APNs: 1).
        public var initialMaxConcurrentStreams: Int = 1
        /// Advertised (a new SETTINGS frame) after the first valid provider token on that connection.
        public var maxConcurrentStreams: Int = 1000
        /// Outcomes chosen per device token by hex prefix (first match wins), checked after validation passed.
        public var outcomesByTokenPrefix: [(prefix: String, outcome: Outcome)] = []
        /// Answers that are not APNs's, per device token by hex prefix (first match wins, after
        /// ``outcomesByTokenPrefix``), checked after validation passed: what a proxy or a wrong endpoint in APNs's
        /// place sends (an HTML 404, an empty 410, a 200 without `apns-id`). Counted as rejected under
        /// `foreign STATUS`.
        public var foreignAnswersByTokenPrefix: [(prefix: String, answer: SimulatorForeignAnswer)] = []
        /// Random server failures: each element a probability (0...1) of answering that outcome instead of
        /// accepting, e.g. `(.init(status: 503, reason: .serviceUnavailable), 0.05)`. Deterministic given ``seed``
        /// (for one connection; several connections interleave their draws).
        public var failureRates: [(outcome: Outcome, probability: Double)] = []
        /// After this many streams on one connection, send GOAWAY(lastStreamID = that N-th stream, NO_ERROR),
        /// answer streams up to it, never process streams above it, and close the connection once the
        /// answered ones are done.
        public var goAwayAfterStreams: Int? = nil
        /// After this many complete requests on one connection, the N-th request is processed (recorded as
        /// accepted if valid) but the connection is then closed abruptly without answering it nor any other
        /// open stream, so the client sees an unknown fate.
        public var dropConnectionAfterStreams: Int? = nil
        /// Added before each response (scheduled on the event loop, never blocking it).
        public var latency: Duration = .zero
        /// Latency chosen per device token by hex prefix (first match wins) instead of ``latency``, for
        /// requests that passed validation.
        public var latencyByTokenPrefix: [(prefix: String, latency: Duration)] = []
        /// Answers streams the client reset (RST_STREAM, e.g. after its request timeout) anyway, as a server
        /// that had started answering does, with the error JSON padded to this many bytes (at most 16,384,
        /// one frame). The client's HTTP/2 layer drops these frames, but they still use its connection
        /// window. The simulator then never sees the client's RST_STREAM frames.
        public var lateAnswerBodyBytes: Int? = nil
        /// The first this many connections since the simulator started get the server's SETTINGS and at once a
        /// GOAWAY (last stream 0, NO_ERROR), and close: a server that takes connections and goes away before
        /// answering anything.
        public var goAwayAtStartForConnections: Int = 0
        /// The first this many TCP connections since the simulator started are accepted and then ignored: no TLS
        /// handshake, no HTTP/2 SETTINGS, nothing read. A black hole behind a load balancer.
        public var silentConnections: Int = 0
        public var seed: UInt64 = 1

        public init() {}
    }

    /// A status and reason the simulator answers instead of accepting.
    public struct Outcome: Sendable, Hashable {
        public var status: Int
        public var reason: APNsReason
        /// For 410: the `timestamp` to put in the body; nil means "now".
        public var timestamp: Date?

        public init(status: Int, reason: APNsReason, timestamp: Date? = nil) {
            self.status = status
            self.reason = reason
            self.timestamp = timestamp
        }
    }

    /// What the simulator saw since it started (or since ``reset()``).
    public struct Stats: Sendable, Codable {
        public var accepted: Int
        /// By reason, as APNs spells it (`Unregistered`, …).
        public var rejected: [String: Int]
        public var connectionsOpened: Int
        public var goAwaysSent: Int
        public var connectionsDropped: Int
        /// Streams a client opened beyond the SETTINGS_MAX_CONCURRENT_STREAMS it had acknowledged.
        public var streamLimitViolations: Int
        /// The most streams ever open at once on one connection.
        public var peakConcurrentStreams: Int
        /// Accepts per whole second since start (index 0 = first second): the send rate as seen by APNs.
        public var acceptsPerSecond: [Int]
        public var startedAt: Date
    }

    /// The open connections and whether they read, for ``freeze()``.
    private struct Connections {
        var open: [ObjectIdentifier: any Channel] = [:]
        var frozen = false
    }

    public let configuration: Configuration
    let ledger: APNsSimulatorLedger
    private let listener = SimulatorListener()
    private let connections = Mutex(Connections())

    public init(configuration: Configuration) {
        self.configuration = configuration
        self.ledger = APNsSimulatorLedger(
            recordsAccepted: configuration.recordsAccepted,
            failureRates: configuration.faults.failureRates,
            seed: configuration.faults.seed
        )
    }

    /// Binds and starts serving.
    ///
    /// - Returns: the bound port.
    @discardableResult
    public func start() async throws -> Int {
        let tlsContext = try configuration.tls.map { tls in
            var tls = tls
            tls.applicationProtocols = ["h2"]
            return try NIOSSLContext(configuration: tls)
        }
        let rules = APNsSimulatorStreams.Rules(
            validator: APNsRequestValidator(configuration: configuration.validation),
            faults: configuration.faults,
            ledger: ledger,
            onAccept: configuration.onAccept
        )
        ledger.reset()
        return try await listener.start(host: configuration.host, port: configuration.port, threads: configuration.eventLoopThreads) {
            [weak self] channel in
            let id = ObjectIdentifier(channel)
            let frozen = self?.connections.withLock { connections in
                connections.open[id] = channel
                return connections.frozen
            }
            channel.closeFuture.whenComplete { [weak self] _ in _ = self?.connections.withLock { $0.open.removeValue(forKey: id) } }
            if frozen == true { try channel.syncOptions?.setOption(.autoRead, value: false) }
            try APNsSimulatorStreams.configure(channel, rules: rules, tls: tlsContext)
        }
    }

    /// The bound port, after ``start()``.
    public var port: Int { listener.port }

    /// `http://HOST:PORT`, or `https://` with TLS.
    public var url: String { "\(configuration.tls == nil ? "http" : "https")://\(configuration.host):\(port)" }

    /// Closes the listener and every connection, and shuts down the simulator's event loops.
    public func shutdown() async throws {
        try await listener.shutdown()
    }

    /// Hangs as a paused process does: reads nothing more from any connection and accepts no new one (the
    /// kernel still completes TCP handshakes into the backlog), so what clients write waits in socket
    /// buffers; answers to requests already read still go out. ``thaw()`` reads it all at once.
    public func freeze() async {
        await setReading(false)
    }

    /// Ends ``freeze()``: reads and processes what waited, and accepts connections again.
    public func thaw() async {
        await setReading(true)
    }

    private func setReading(_ reading: Bool) async {
        let channels =
            connections.withLock { connections in
                connections.frozen = !reading
                return Array(connections.open.values)
            } + (listener.channel.map { [$0] } ?? [])
        for channel in channels {
            try? await channel.setOption(.autoRead, value: reading).get()
        }
    }

    public func stats() -> Stats { ledger.stats() }

    /// How many times a token (lowercase hex) was accepted; 0 if never, and always 0 without
    /// ``Configuration/recordsAccepted``.
    public func acceptedCount(forToken hex: String) -> Int { ledger.acceptedCount(forToken: hex.lowercased()) }

    /// Accept counts by token (lowercase hex); empty without ``Configuration/recordsAccepted``.
    public func acceptedCounts() -> [String: Int] { ledger.acceptedCounts() }

    /// A notification the simulator accepted, with the connection and HTTP/2 stream it came on.
    public typealias Accept = SimulatorAccept

    /// Every accept, oldest first, each with its token, time, connection and stream; empty without
    /// ``Configuration/recordsAccepted``.
    public func accepts() -> [Accept] { ledger.accepts() }

    /// The accepts of one token (lowercase hex), oldest first: a token accepted twice shows both, with their
    /// connections and streams.
    public func accepts(forToken hex: String) -> [Accept] { ledger.accepts(forToken: hex.lowercased()) }

    /// Zeroes the stats and the per-token records; the simulator keeps serving, and connection numbers go on.
    public func reset() { ledger.reset() }
}

extension APNsSimulator.Configuration {
    /// Serves TLS (ALPN `h2`) with a PEM certificate chain and private key read from files.
    ///
    /// - Throws: NIOSSL's error when a file is missing or not PEM.
    public mutating func useTLS(certificateChainFile: String, privateKeyFile: String) throws {
        let chain = try NIOSSLCertificate.fromPEMFile(certificateChainFile).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: privateKeyFile, format: .pem)
        tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
    }
}
