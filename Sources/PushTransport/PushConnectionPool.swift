import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// The HTTP/2 connections to one push service endpoint (APNs, FCM), and the requests waiting for a stream.
///
/// A request goes to the open connection with the fewest streams in use, if one has a stream free
/// under the server's `SETTINGS_MAX_CONCURRENT_STREAMS`; otherwise it waits in FIFO order. Waiting is
/// the back-pressure: the pool never fails a request for being busy, and a caller's next request
/// starts only when the previous one is answered. Connections open on demand up to
/// ``Configuration/connections``, and again after failures with a doubling backoff.
///
/// Requests that a connection did not process (GOAWAY above the last stream id, REFUSED_STREAM, never
/// written) come back here and go out on another connection; requests whose fate is unknown go to their
/// caller as such.
///
/// The decisions are ``StateMachine``'s; this class does the I/O: it feeds the state machine what
/// happens (requests, connections up, ready, going away, closed, the timer) under its lock, and does what
/// it answers (hand requests to connections, open or close one, fail requests, set the timer).
package final class PushConnectionPool: PushConnectionDelegate, Sendable {
    package struct Configuration: Sendable {
        /// The service's name in messages ("APNs", "FCM"); lower-cased, the prefix of log metadata keys.
        package var service: String
        package var endpoint: PushEndpoint
        package var connections: Int
        /// Streams per connection before the server's first SETTINGS says how many it allows.
        package var initialStreamLimit: Int
        /// The most streams per connection, whatever the server allows.
        package var streamCap: Int
        package var connectTimeout: TimeAmount
        /// How long a request may wait for a connection and a free stream before it fails as not sent.
        package var maximumWait: TimeAmount
        /// How often a request the server did not process is sent again on another connection.
        package var maximumResends: Int
        package var reconnectInitialBackoff: TimeAmount
        package var reconnectMaximumBackoff: TimeAmount
        /// The least silence after which a connection with requests outstanding counts as stalled
        /// (``StateMachine/silenceLimit``).
        package var stalledAfter: TimeAmount
        /// For a sender that paces its own sends: while the endpoint cannot be reached, what waits for a connection
        /// is answered not sent at once (``PushConnectionSettings/failWaitingWhileUnreachable``).
        package var failWaitingWhileUnreachable: Bool
        package var timing: PushConnectionTiming

        package init(
            service: String,
            endpoint: PushEndpoint,
            connections: Int,
            initialStreamLimit: Int,
            streamCap: Int,
            connectTimeout: TimeAmount,
            maximumWait: TimeAmount,
            maximumResends: Int,
            reconnectInitialBackoff: TimeAmount,
            reconnectMaximumBackoff: TimeAmount,
            stalledAfter: TimeAmount,
            failWaitingWhileUnreachable: Bool = false,
            timing: PushConnectionTiming
        ) {
            self.service = service
            self.endpoint = endpoint
            self.connections = connections
            self.initialStreamLimit = initialStreamLimit
            self.streamCap = streamCap
            self.connectTimeout = connectTimeout
            self.maximumWait = maximumWait
            self.maximumResends = maximumResends
            self.reconnectInitialBackoff = reconnectInitialBackoff
            self.reconnectMaximumBackoff = reconnectMaximumBackoff
            self.stalledAfter = stalledAfter
            self.failWaitingWhileUnreachable = failWaitingWhileUnreachable
            self.timing = timing
        }
    }

    /// A connection as the pool acts on it: its handler (used on its event loop) and its channel.
    struct Connection: Sendable {
        let handler: NIOLoopBound<PushConnectionHandler>
        let channel: any Channel
    }

    private typealias Machine = StateMachine<PushWireRequest, Connection>

    private struct Locked {
        var machine: Machine
        /// The timer the state machine asked for; set and replaced under the lock, so that two events'
        /// timers cannot be set in the wrong order.
        var timer: Scheduled<Void>?
        /// Samples the streams in flight for the metrics gauge.
        var sampler: RepeatedTask?
    }

    private let configuration: Configuration
    private let group: any EventLoopGroup
    private let sslContext: NIOSSLContext?
    private let logger: Logger
    private let metrics: PushConnectionMetrics
    /// `apns.connection`, `apns.endpoint`, …: log metadata keys under the service's name.
    private let keys: MetadataKeys
    private let state: Mutex<Locked>
    private let lastRequestID = Atomic<UInt64>(0)
    /// Where the pool's timer runs.
    private let timerLoop: any EventLoop

    private struct MetadataKeys: Sendable {
        let endpoint: String
        let connection: String
        let resend: String
        let fateUnknown: String

        init(_ service: String) {
            let prefix = service.lowercased()
            endpoint = "\(prefix).endpoint"
            connection = "\(prefix).connection"
            resend = "\(prefix).resend"
            fateUnknown = "\(prefix).fate_unknown"
        }
    }

    package init(
        configuration: Configuration,
        tls: TLSConfiguration?,
        group: any EventLoopGroup,
        metrics: PushConnectionMetrics,
        logger: Logger
    ) throws {
        self.configuration = configuration
        self.keys = MetadataKeys(configuration.service)
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
        self.state = Mutex(Locked(machine: Machine(configuration: configuration)))
        self.timerLoop = group.next()
        let tick = TimeAmount.milliseconds(250)
        let sampler = timerLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { [weak self] task in
            guard let self else { return task.cancel() }
            metrics.sample(inFlight: state.withLock { $0.machine.inFlight })
        }
        state.withLock { $0.sampler = sampler }
    }

    /// True while the endpoint cannot be reached or does not answer: no ready connection takes requests, and
    /// either the last connection attempts failed or the open connections are stalled. Requests submitted
    /// meanwhile wait (up to `maximumWait`) and all go out when it is back.
    package var isUnreachable: Bool {
        state.withLock { $0.machine.isUnreachable(now: .now()) }
    }

    /// How long a connection with requests outstanding may answer nothing before it is stalled.
    package var silenceLimit: TimeAmount {
        state.withLock { $0.machine.silenceLimit }
    }

    /// `count` fresh request ids, the first of a consecutive range.
    package func makeRequestIDs(count: Int) -> UInt64 {
        lastRequestID.add(UInt64(count), ordering: .relaxed).oldValue + 1
    }

    /// Sends many requests with one lock and one event-loop hop per connection: the path of broadcasts,
    /// where per-request thread hops would cost more than the HTTP/2 work itself.
    package func submit(contentsOf requests: [PushWireRequest]) {
        run(event { machine, now in machine.submit(requests, now: now) })
    }

    /// Withdraws the requests `ids` of a caller that no longer wants them (its task was cancelled): those not yet
    /// written to a connection end as not sent (`cancelled`) now; those written are still answered or time out, so
    /// that no request that may have reached the server is reported as not sent.
    package func withdraw(_ ids: Set<UInt64>) {
        run(event { machine, _ in machine.withdraw(ids) })
    }

    /// Stops new requests (they get `notSent(.shutdown)`), lets the open streams finish, and closes
    /// every connection.
    package func shutdown() async {
        let actions = event { machine, _ in machine.shutdown() }
        state.withLock { $0.sampler?.cancel() }
        run(actions)
        for connection in actions.drain {
            try? await connection.channel.closeFuture.get()
        }
    }

    // MARK: Performing the state machine's actions

    /// Feeds one event to the state machine under the lock, with the time read there, and sets the timer
    /// it asks for.
    private func event(_ body: (inout Machine, NIODeadline) -> Machine.Actions) -> Machine.Actions {
        state.withLock { locked in
            let actions = body(&locked.machine, .now())
            if let timer = actions.timer { setTimer(timer, &locked) }
            return actions
        }
    }

    private func setTimer(_ action: Machine.TimerAction, _ locked: inout Locked) {
        locked.timer?.cancel()
        switch action {
        case .schedule(let deadline):
            locked.timer = timerLoop.scheduleTask(deadline: deadline) { [weak self] in self?.timerFired() }
        case .cancel:
            locked.timer = nil
        }
    }

    private func timerFired() {
        run(event { machine, now in machine.timerFired(now: now) })
    }

    private func run(_ actions: Machine.Actions) {
        for (request, result) in actions.complete {
            request.completion(result)
        }
        for handover in actions.enqueue {
            enqueue(handover.requests, on: handover.connection)
        }
        for connection in actions.close {
            connection.channel.close(promise: nil)
        }
        for connection in actions.drain {
            connection.channel.eventLoop.execute { connection.handler.value.drain() }
        }
        if let (ids, connections) = actions.withdraw {
            // After the hand-overs already on each event loop: a request handed over before the withdrawal is there.
            for connection in connections {
                connection.channel.eventLoop.execute { connection.handler.value.withdraw(ids) }
            }
        }
        if let id = actions.connect {
            connect(id: id)
        }
    }

    private func enqueue(_ requests: [PushWireRequest], on connection: Connection) {
        let handler = connection.handler
        let eventLoop = connection.channel.eventLoop
        if requests.count == 1 {
            let request = requests[0]
            if eventLoop.inEventLoop {
                handler.value.enqueue(request)
            } else {
                eventLoop.execute { handler.value.enqueue(request) }
            }
        } else if eventLoop.inEventLoop {
            handler.value.enqueue(contentsOf: requests)
        } else {
            eventLoop.execute { handler.value.enqueue(contentsOf: requests) }
        }
    }

    // MARK: Opening connections

    /// The handlers of a connection between the socket (or TLS) and its ``PushConnectionHandler``: the flush coalescer
    /// and NIOHTTP2Handler with the pool's settings. The allocation benchmarks build their in-memory connections with
    /// it too, so that they run the pool's pipeline.
    package static func addHTTP2Handlers(to pipeline: ChannelPipeline.SynchronousOperations, streamCap: Int) throws {
        try pipeline.addHandler(PushFlushCoalescer())
        try pipeline.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: http2Configuration(streamCap: streamCap)))
    }

    /// NIOHTTP2's settings for every connection.
    private static func http2Configuration(streamCap: Int) -> NIOHTTP2Handler.ConnectionConfiguration {
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
        http2.maximumRecentlyResetStreams = max(streamCap, 32)
        return http2
    }

    private func connect(id: Int) {
        let endpoint = configuration.endpoint
        let sslContext = self.sslContext
        let configuration = self.configuration
        ClientBootstrap(group: group)
            .connectTimeout(configuration.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            // A tick's coalesced write of a batch's requests (hundreds of HEADERS and DATA frames) passed NIO's default
            // high-water mark of 64 KiB and fell back under it once written: the channel flapped unwritable and
            // writable every tick, and NIOHTTP2Handler held DATA frames back and then released them all at once (10 %
            // of the client's CPU, and streams finishing out of order). A connection's writes are bounded by its
            // streams (at most ``PushConnectionPool/Configuration/streamCap`` requests of a few hundred bytes), so a
            // higher mark only ends the flapping; a socket that cannot keep up still makes the channel unwritable.
            .channelOption(.writeBufferWaterMark, value: .init(low: 512 * 1024, high: 2 * 1024 * 1024))
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let sslContext {
                        // SNI takes names, not addresses.
                        let isAddress = (try? SocketAddress(ipAddress: endpoint.host, port: 0)) != nil
                        try pipeline.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: isAddress ? nil : endpoint.host))
                    }
                    try Self.addHTTP2Handlers(to: pipeline, streamCap: configuration.streamCap)
                    let handler = PushConnectionHandler(
                        id: id,
                        service: configuration.service,
                        delegate: self,
                        initialStreamLimit: configuration.initialStreamLimit,
                        streamCap: configuration.streamCap,
                        timing: configuration.timing
                    )
                    try pipeline.addHandler(handler)
                    let connection = Connection(handler: NIOLoopBound(handler, eventLoop: channel.eventLoop), channel: channel)
                    self.state.withLock { $0.machine.connectionCreated(id, connection) }
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
            .whenComplete { [self] result in
                switch result {
                case .success:
                    metrics.connectionOpened()
                    logger.debug(
                        "\(configuration.service) connection open",
                        metadata: [keys.endpoint: "\(configuration.endpoint)", keys.connection: "\(id)"]
                    )
                    run(event { machine, now in machine.connectionEstablished(id, now: now) })
                case .failure(let error):
                    let actions = event { machine, now in machine.connectFailed(id, error: "\(error)", now: now) }
                    metrics.connectFailed()
                    logger.warning(
                        "\(configuration.service) connection failed",
                        metadata: [keys.endpoint: "\(configuration.endpoint)", "error": "\(error)"]
                    )
                    run(actions)
                }
            }
    }

    // MARK: PushConnectionDelegate (on the connection's event loop)

    package func connection(_ id: Int, finished request: PushWireRequest, result: PushWireResult) {
        let next = state.withLock { locked in
            let finished = locked.machine.requestFinished(on: id, request, result: result, now: .now())
            if case .actions(let actions) = finished, let timer = actions.timer { setTimer(timer, &locked) }
            return finished
        }
        if case .resend = result {} else { request.completion(result) }
        switch next {
        case .none:
            break
        case .handOver(let waiting, let connection):
            enqueue([waiting], on: connection)
        case .actions(let actions):
            run(actions)
        }
    }

    package func connection(_ id: Int, readyWithStreamLimit limit: Int) {
        run(event { machine, now in machine.connectionReady(id, streamLimit: limit, now: now) })
    }

    package func connection(_ id: Int, streamLimitChanged limit: Int) {
        run(event { machine, now in machine.streamLimitChanged(id, to: limit, now: now) })
    }

    package func connection(_ id: Int, goingAway resend: [PushWireRequest]) {
        let actions = event { machine, now in machine.connectionGoingAway(id, resend: resend, now: now) }
        metrics.goAway()
        logger.debug("\(configuration.service) connection going away", metadata: [keys.connection: "\(id)", keys.resend: "\(resend.count)"])
        run(actions)
    }

    package func connection(_ id: Int, closed resend: [PushWireRequest], fateUnknown: [PushWireRequest]) {
        let actions = event { machine, now in machine.connectionClosed(id, resend: resend, now: now) }
        metrics.connectionClosed()
        if !fateUnknown.isEmpty {
            logger.warning(
                "\(configuration.service) connection lost with requests unanswered",
                metadata: [keys.connection: "\(id)", keys.fateUnknown: "\(fateUnknown.count)", keys.resend: "\(resend.count)"]
            )
        }
        for request in fateUnknown {
            request.completion(.fateUnknown(PushTransportError(.connectionLost, "the \(configuration.service) connection closed before the answer")))
        }
        run(actions)
    }
}
