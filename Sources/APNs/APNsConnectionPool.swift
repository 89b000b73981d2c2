import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// The HTTP/2 connections to one APNs endpoint, and the requests waiting for a stream.
///
/// A request goes to the open connection with the fewest streams in use, if one has a stream free
/// under the server's `SETTINGS_MAX_CONCURRENT_STREAMS`; otherwise it waits in FIFO order. Waiting is
/// the back-pressure: the pool never fails a request for being busy, and a caller's next request
/// starts only when the previous one is answered. Connections open on demand up to
/// ``APNsClient/Configuration/connections``, and again after failures with a doubling backoff.
///
/// Requests that a connection did not process (GOAWAY above the last stream id, REFUSED_STREAM, never
/// written) come back here and go out on another connection; requests whose fate is unknown go to their
/// caller as such.
final class APNsConnectionPool: APNsConnectionDelegate, Sendable {
    struct Configuration: Sendable {
        var endpoint: APNsEndpoint
        var connections: Int
        var initialStreamLimit: Int
        var streamCap: Int
        var connectTimeout: TimeAmount
        var maximumWait: TimeAmount
        var maximumResends: Int
        var reconnectInitialBackoff: TimeAmount
        var reconnectMaximumBackoff: TimeAmount
        var timing: APNsConnectionHandler.Timing
    }

    private struct Entry {
        let handler: NIOLoopBound<APNsConnectionHandler>
        let channel: any Channel
        /// Requests handed to the connection and not yet finished.
        var assigned = 0
        var limit: Int
        var ready = false
        var draining = false
        /// When the server's first SETTINGS arrived.
        var readyAt: NIODeadline?
        /// Whether the server answered any request on it.
        var answered = false
        /// Its end (GOAWAY or close) was judged for the reconnect backoff.
        var ended = false
        /// Closed by the pool because TLS and HTTP/2 were not up within the connect timeout.
        var handshakeTimedOut = false
    }

    /// A connection that ends this soon after becoming ready, before answering anything, counts as a
    /// failed connect for the reconnect backoff.
    static let shortLived = TimeAmount.seconds(2)

    private struct State {
        var entries: [Int: Entry] = [:]
        var nextConnectionID = 0
        /// Connections started and not yet ready (or failed).
        var connecting: Set<Int> = []
        var waiting = CircularBuffer<APNsWireRequest>()
        var consecutiveFailures = 0
        var noConnectBefore = NIODeadline.uptimeNanoseconds(0)
        var lastConnectError: String?
        var isShutdown = false
        var nextRequestID: UInt64 = 0
    }

    private enum Step {
        case enqueue(NIOLoopBound<APNsConnectionHandler>, any EventLoop, APNsWireRequest)
        case connect(id: Int)
        case complete(APNsWireRequest, APNsWireResult)
    }

    private let configuration: Configuration
    private let group: any EventLoopGroup
    private let sslContext: NIOSSLContext?
    private let logger: Logger
    private let metrics: APNsMetrics
    private let state = Mutex(State())
    private let maintenance = Mutex<RepeatedTask?>(nil)

    init(
        configuration: Configuration,
        tls: TLSConfiguration?,
        group: any EventLoopGroup,
        metrics: APNsMetrics,
        logger: Logger
    ) throws {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        self.metrics = metrics
        if configuration.endpoint.usesTLS {
            var tls = tls ?? .makeClientConfiguration()
            tls.applicationProtocols = ["h2"]
            if tls.minimumTLSVersion != .tlsv13 { tls.minimumTLSVersion = .tlsv12 }
            self.sslContext = try NIOSSLContext(configuration: tls)
        } else {
            self.sslContext = nil
        }
        let tick = TimeAmount.milliseconds(250)
        let task = group.next().scheduleRepeatedTask(initialDelay: tick, delay: tick) { [weak self] _ in
            self?.maintain()
        }
        maintenance.withLock { $0 = task }
    }

    /// `count` fresh request ids, the first of a consecutive range.
    /// True while the endpoint cannot be reached: the last connection attempts failed and no connection is
    /// ready. Requests submitted meanwhile wait (up to `maximumWait`) and all go out when it is back.
    var isUnreachable: Bool {
        state.withLock { state in state.consecutiveFailures > 0 && !state.entries.values.contains { $0.ready && !$0.draining } }
    }

    func makeRequestIDs(count: Int) -> UInt64 {
        state.withLock {
            let first = $0.nextRequestID + 1
            $0.nextRequestID += UInt64(count)
            return first
        }
    }

    /// Sends many requests with one lock and one event-loop hop per connection: the path of broadcasts,
    /// where per-request thread hops would cost more than the HTTP/2 work itself.
    func submit(contentsOf requests: [APNsWireRequest]) {
        var shutdown: [APNsWireRequest] = []
        var groups: [Int: (handler: NIOLoopBound<APNsConnectionHandler>, eventLoop: any EventLoop, requests: [APNsWireRequest])] = [:]
        let connect = state.withLock { state -> Step? in
            if state.isShutdown {
                shutdown = requests
                return nil
            }
            var index = requests.startIndex
            while index < requests.endIndex, let (id, entry) = Self.freeConnection(in: state) {
                let take = min(entry.limit - entry.assigned, requests.endIndex - index)
                state.entries[id]!.assigned += take
                groups[id, default: (entry.handler, entry.channel.eventLoop, [])].requests.append(contentsOf: requests[index..<(index + take)])
                index += take
            }
            guard index < requests.endIndex else { return nil }
            state.waiting.append(contentsOf: requests[index...])
            return startConnectionIfNeeded(&state)
        }
        for request in shutdown {
            request.completion(.notSent(.clientShutDown))
        }
        for (_, group) in groups {
            let (handler, requests) = (group.handler, group.requests)
            if group.eventLoop.inEventLoop {
                handler.value.enqueue(contentsOf: requests)
            } else {
                group.eventLoop.execute { handler.value.enqueue(contentsOf: requests) }
            }
        }
        if let connect { run(connect) }
    }

    /// Stops new requests (they get `notSent(.shutdown)`), lets the open streams finish, and closes
    /// every connection.
    func shutdown() async {
        let (waiting, channels) = state.withLock { state -> ([APNsWireRequest], [(NIOLoopBound<APNsConnectionHandler>, any Channel)]) in
            state.isShutdown = true
            var waiting: [APNsWireRequest] = []
            while let request = state.waiting.popFirst() { waiting.append(request) }
            return (waiting, state.entries.values.map { ($0.handler, $0.channel) })
        }
        maintenance.withLock { $0?.cancel() }
        for request in waiting {
            request.completion(.notSent(.clientShutDown))
        }
        for (handler, channel) in channels {
            channel.eventLoop.execute { handler.value.drain() }
        }
        for (_, channel) in channels {
            try? await channel.closeFuture.get()
        }
    }

    /// Open connections and streams in use, for tests and metrics.
    var snapshot: (connections: Int, inFlight: Int, waiting: Int) {
        state.withLock { state in
            (state.entries.count, state.entries.values.reduce(0) { $0 + $1.assigned }, state.waiting.count)
        }
    }

    // MARK: Choosing and opening connections

    private static func freeConnection(in state: State) -> (Int, Entry)? {
        var best: (Int, Entry)?
        for (id, entry) in state.entries where entry.ready && !entry.draining && entry.assigned < entry.limit {
            if best == nil || entry.assigned < best!.1.assigned { best = (id, entry) }
        }
        return best
    }

    private func startConnectionIfNeeded(_ state: inout State) -> Step? {
        guard !state.isShutdown, !state.waiting.isEmpty, state.connecting.isEmpty else { return nil }
        let usable = state.entries.values.filter { !$0.draining }.count
        guard usable < configuration.connections, NIODeadline.now() >= state.noConnectBefore else { return nil }
        state.nextConnectionID += 1
        state.connecting.insert(state.nextConnectionID)
        return .connect(id: state.nextConnectionID)
    }

    private func connect(id: Int) {
        let endpoint = configuration.endpoint
        let sslContext = self.sslContext
        let configuration = self.configuration
        ClientBootstrap(group: group)
            .connectTimeout(configuration.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let sslContext {
                        // SNI takes names, not addresses.
                        let isAddress = (try? SocketAddress(ipAddress: endpoint.host, port: 0)) != nil
                        try pipeline.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: isAddress ? nil : endpoint.host))
                    }
                    try pipeline.addHandler(APNsFlushCoalescer())
                    var http2 = NIOHTTP2Handler.ConnectionConfiguration()
                    http2.initialSettings = [
                        HTTP2Setting(parameter: .enablePush, value: 0),
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                        HTTP2Setting(parameter: .initialWindowSize, value: 65535),
                    ]
                    // The requests are built here from validated parts; checking every header of every
                    // request again cost 6% of the client's CPU. Answers are read by status and two headers.
                    http2.headerBlockValidation = .disabled
                    http2.contentLengthValidation = .disabled
                    // Answers that arrive after a request timeout reset their stream are dropped only while NIO
                    // remembers the stream; a frame for a forgotten one is a connection error that loses every
                    // stream in flight. NIO remembers 32 by default; a stalled server can time out hundreds.
                    http2.maximumRecentlyResetStreams = max(configuration.streamCap, 32)
                    try pipeline.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: http2))
                    let handler = APNsConnectionHandler(
                        id: id,
                        delegate: self,
                        initialStreamLimit: configuration.initialStreamLimit,
                        streamCap: configuration.streamCap,
                        timing: configuration.timing
                    )
                    try pipeline.addHandler(handler)
                    let entry = Entry(
                        handler: NIOLoopBound(handler, eventLoop: channel.eventLoop),
                        channel: channel,
                        limit: min(configuration.initialStreamLimit, configuration.streamCap)
                    )
                    self.state.withLock { $0.entries[id] = entry }
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    connected(id: id, channel: channel)
                case .failure(let error):
                    connectFailed(id: id, error: error)
                }
            }
    }

    /// TCP is up; the connection takes requests once the server's SETTINGS arrive, and is closed if they
    /// do not arrive within the connect timeout: a server that accepts TCP and never finishes the TLS
    /// handshake would otherwise hold the pool's one connection attempt until TCP gives up, minutes later.
    private func connected(id: Int, channel: any Channel) {
        metrics.connectionOpened()
        logger.debug("APNs connection open", metadata: ["apns.endpoint": "\(configuration.endpoint)", "apns.connection": "\(id)"])
        channel.eventLoop.scheduleTask(in: configuration.connectTimeout) { [self] in
            let stalled = state.withLock { state -> Bool in
                guard let entry = state.entries[id], !entry.ready else { return false }
                state.entries[id]!.handshakeTimedOut = true
                return true
            }
            if stalled { channel.close(promise: nil) }
        }
    }

    /// Whether a connection that ended (GOAWAY or closed) counts as a failed connect for the backoff: it
    /// never became ready, or it went away soon after without answering anything, as a server that sends
    /// SETTINGS and GOAWAY at once does. Reconnecting at once to such a server is a tight loop.
    static func endedAsFailure(readyAt: NIODeadline?, answered: Bool, endedAt: NIODeadline) -> Bool {
        guard let readyAt else { return true }
        return !answered && endedAt - readyAt < shortLived
    }

    /// Judges a connection's end once: a failure backs the next connect off; a connection that worked
    /// resets the failure count.
    private func recordEnd(of id: Int, _ state: inout State) {
        guard let entry = state.entries[id], !entry.ended else { return }
        state.entries[id]!.ended = true
        let now = NIODeadline.now()
        guard Self.endedAsFailure(readyAt: entry.readyAt, answered: entry.answered, endedAt: now) else {
            state.consecutiveFailures = 0
            return
        }
        state.connecting.remove(id)
        state.consecutiveFailures += 1
        if entry.handshakeTimedOut {
            state.lastConnectError = "no TLS and HTTP/2 handshake within \(configuration.connectTimeout.nanoseconds / 1_000_000) ms"
        } else if entry.ready {
            state.lastConnectError = "APNs went away right after the connection was up, before answering anything"
        } else {
            state.lastConnectError = "the connection closed before HTTP/2 was up (TLS or protocol failure)"
        }
        state.noConnectBefore = now + backoff(failures: state.consecutiveFailures)
    }

    private func connectFailed(id: Int, error: any Error) {
        let steps = state.withLock { state -> [Step] in
            state.connecting.remove(id)
            state.entries[id] = nil
            state.consecutiveFailures += 1
            state.lastConnectError = "\(error)"
            state.noConnectBefore = .now() + backoff(failures: state.consecutiveFailures)
            return []
        }
        metrics.connectFailed()
        logger.warning(
            "APNs connection failed",
            metadata: ["apns.endpoint": "\(configuration.endpoint)", "error": "\(error)"]
        )
        steps.forEach(run)
    }

    /// The wait before the next connection attempt after `failures` failures in a row: doubling from the
    /// initial backoff to the maximum.
    private func backoff(failures: Int) -> TimeAmount {
        let exponent = min(max(failures - 1, 0), 20)
        return min(configuration.reconnectInitialBackoff * Int64(1 << exponent), configuration.reconnectMaximumBackoff)
    }

    /// Hands waiting requests to connections with free streams, and opens a connection if they still wait.
    private func dispatchWaiting(_ state: inout State) -> [Step] {
        var steps: [Step] = []
        while !state.waiting.isEmpty, let (id, entry) = Self.freeConnection(in: state) {
            let request = state.waiting.removeFirst()
            state.entries[id]!.assigned += 1
            steps.append(.enqueue(entry.handler, entry.channel.eventLoop, request))
        }
        if let connect = startConnectionIfNeeded(&state) { steps.append(connect) }
        return steps
    }

    private func run(_ step: Step) {
        switch step {
        case .enqueue(let handler, let eventLoop, let request):
            if eventLoop.inEventLoop {
                handler.value.enqueue(request)
            } else {
                eventLoop.execute { handler.value.enqueue(request) }
            }
        case .connect(let id):
            connect(id: id)
        case .complete(let request, let result):
            request.completion(result)
        }
    }

    /// Requeues requests that a connection did not process, ahead of newer ones; gives up on one that
    /// keeps coming back.
    private func requeue(_ requests: [APNsWireRequest], _ state: inout State) -> [Step] {
        var steps: [Step] = []
        for var request in requests.reversed() {
            request.resends += 1
            if state.isShutdown {
                steps.append(.complete(request, .notSent(.clientShutDown)))
            } else if request.resends > configuration.maximumResends {
                let error = APNsTransportError(.connectionLost, "APNs did not process the request on \(request.resends) connections")
                steps.append(.complete(request, .notSent(error)))
            } else {
                state.waiting.prepend(request)
            }
        }
        return steps
    }

    /// Every 250 ms: fails requests that waited too long for a connection, and retries connecting.
    private func maintain() {
        let now = NIODeadline.now()
        let (steps, inFlight, _) = state.withLock { state -> ([Step], Int, Int) in
            var steps: [Step] = []
            while let first = state.waiting.first, now - first.enqueuedAt > configuration.maximumWait {
                state.waiting.removeFirst()
                let waited = "\(configuration.maximumWait.nanoseconds / 1_000_000) ms"
                let why: String
                if let error = state.lastConnectError {
                    why = "no connection to \(configuration.endpoint): \(error)"
                } else if !state.entries.values.contains(where: \.ready) {
                    why = "no connection to \(configuration.endpoint) within \(waited) (still connecting)"
                } else {
                    why = "no free stream to \(configuration.endpoint) within \(waited)"
                }
                steps.append(.complete(first, .notSent(APNsTransportError(.connectFailed, why))))
            }
            if let connect = startConnectionIfNeeded(&state) { steps.append(connect) }
            return (steps, state.entries.values.reduce(0) { $0 + $1.assigned }, state.entries.count)
        }
        metrics.sample(inFlight: inFlight)
        steps.forEach(run)
    }

    // MARK: APNsConnectionDelegate (on the connection's event loop)

    func connection(_ id: Int, finished request: APNsWireRequest, result: APNsWireResult) {
        if case .resend = result {
            let steps = state.withLock { state -> [Step] in
                state.entries[id]?.assigned -= 1
                return requeue([request], &state) + dispatchWaiting(&state)
            }
            steps.forEach(run)
            return
        }
        // The freed stream goes straight to the next waiting request on this connection.
        let next = state.withLock { state -> Step? in
            guard let entry = state.entries[id] else { return nil }
            if !entry.answered, case .response = result {
                // The connection works: connects after it start from the initial backoff again.
                state.entries[id]!.answered = true
                state.consecutiveFailures = 0
            }
            if !entry.draining, entry.assigned <= entry.limit, let waiting = state.waiting.popFirst() {
                return .enqueue(entry.handler, entry.channel.eventLoop, waiting)
            }
            state.entries[id]!.assigned -= 1
            return nil
        }
        request.completion(result)
        if let next { run(next) }
    }

    func connection(_ id: Int, readyWithStreamLimit limit: Int) {
        let steps = state.withLock { state -> [Step] in
            state.connecting.remove(id)
            // The failure count stays until the connection answers or lasts (``recordEnd``): a server that
            // sends SETTINGS and then GOAWAY at once must not reset the backoff.
            state.lastConnectError = nil
            state.entries[id]?.readyAt = .now()
            state.entries[id]?.ready = true
            state.entries[id]?.limit = limit
            return dispatchWaiting(&state)
        }
        steps.forEach(run)
    }

    func connection(_ id: Int, streamLimitChanged limit: Int) {
        let steps = state.withLock { state -> [Step] in
            state.entries[id]?.limit = limit
            return dispatchWaiting(&state)
        }
        steps.forEach(run)
    }

    func connection(_ id: Int, goingAway resend: [APNsWireRequest]) {
        let steps = state.withLock { state -> [Step] in
            recordEnd(of: id, &state)
            state.entries[id]?.draining = true
            state.entries[id]?.assigned -= resend.count
            return requeue(resend, &state) + dispatchWaiting(&state)
        }
        metrics.goAway()
        logger.debug("APNs connection going away", metadata: ["apns.connection": "\(id)", "apns.resend": "\(resend.count)"])
        steps.forEach(run)
    }

    func connection(_ id: Int, closed resend: [APNsWireRequest], fateUnknown: [APNsWireRequest]) {
        let steps = state.withLock { state -> [Step] in
            // Closed before the server's SETTINGS, or right after without answering: as good as a failed connect.
            recordEnd(of: id, &state)
            state.entries[id] = nil
            return requeue(resend, &state) + dispatchWaiting(&state)
        }
        metrics.connectionClosed()
        if !fateUnknown.isEmpty {
            logger.warning(
                "APNs connection lost with requests unanswered",
                metadata: ["apns.connection": "\(id)", "apns.fate_unknown": "\(fateUnknown.count)", "apns.resend": "\(resend.count)"]
            )
        }
        for request in fateUnknown {
            request.completion(.fateUnknown(APNsTransportError(.connectionLost, "the APNs connection closed before the answer")))
        }
        steps.forEach(run)
    }
}
