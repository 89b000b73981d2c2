import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL

/// What a simulator does with the requests of one HTTP/2 connection (APNs's checks and faults, FCM's routes); the
/// connection (``SimulatorHTTP2Connection``) does the frames. One per connection, confined to its event loop.
package protocol SimulatorStreams: AnyObject, SendableMetatype {
    /// Counts what happened on the connection in the simulator's ledger.
    func record(_ event: SimulatorConnectionEvent)
    /// Whether the connection sends GOAWAY (NO_ERROR) with the `count`-th stream it opened as the last one it
    /// processes: a fault.
    func goesAway(afterOpening count: Int) -> Bool
    /// The answer to a complete request.
    func answer(_ request: SimulatorRequest) -> SimulatorAnswer
}

extension SimulatorStreams {
    package func goesAway(afterOpening count: Int) -> Bool { false }
}

/// A request received on one stream.
package struct SimulatorRequest {
    package var stream: HTTP2StreamID
    package var headers: HPACKHeaders
    /// The body as received (a request's one DATA frame is kept as it came, without a copy), or empty once it
    /// passed the simulator's limit (see ``bodyBytes``).
    package var body = ByteBuffer()
    /// Bytes of body received, including those not kept once the limit was passed.
    package var bodyBytes = 0

    package init(stream: HTTP2StreamID, headers: HPACKHeaders) {
        self.stream = stream
        self.headers = headers
    }

    /// The body passed the simulator's limit and was not kept: only its length is known.
    package var isBodyDropped: Bool { bodyBytes > body.readableBytes }

    mutating func append(_ bytes: inout ByteBuffer, limit: Int) {
        bodyBytes += bytes.readableBytes
        if bodyBytes > limit {
            body = ByteBuffer()
        } else if bodyBytes == bytes.readableBytes {
            body = bytes
        } else {
            body.writeBuffer(&bytes)
        }
    }
}

/// What the simulator does with a complete request.
package enum SimulatorAnswer {
    /// Answers it, after `delay` (scheduled on the event loop, never blocking it); first, when given, advertises a
    /// new SETTINGS_MAX_CONCURRENT_STREAMS (APNs raises it after the first valid provider token).
    case respond(SimulatorResponse, after: TimeAmount? = nil, advertisingStreamLimit: Int? = nil)
    /// Closes the connection at once, answering neither this request nor any other open stream (a fault).
    case dropConnection
}

/// An answer: the status, the headers besides `:status`, and the body; without a body the HEADERS frame ends the
/// stream.
package struct SimulatorResponse {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: ByteBuffer?

    package init(status: Int, headers: [(name: String, value: String)] = [], body: ByteBuffer? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// How a simulator's HTTP/2 connections behave, besides their requests' answers.
package struct SimulatorHTTP2Settings: Sendable {
    /// What happens to a stream a client opens beyond the limit it acknowledged; each is counted as a violation.
    package enum StreamLimitEnforcement: Sendable, Equatable {
        /// NIO refuses it (REFUSED_STREAM); one that reaches the connection anyway is processed.
        case byNIO
        /// RST_STREAM REFUSED_STREAM for the extra stream only, unprocessed.
        case refuseStream
        /// GOAWAY (last stream id = the last stream within the limit, REFUSED_STREAM): the streams within the limit
        /// are answered, the rest never processed; then the connection closes.
        case goAway
    }

    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised at the start.
    package var maxConcurrentStreams: Int
    package var enforcement: StreamLimitEnforcement
    /// Bodies beyond this are not kept (their length still counts).
    package var maximumBodyBytes: Int
    /// Sends SETTINGS and at once GOAWAY (last stream 0), and closes: a server that goes away before answering.
    package var goesAwayAtStart = false
    /// Answers streams the client reset (RST_STREAM, e.g. after its request timeout) anyway, as a server that had
    /// started answering does, with the body padded to this many bytes (at most 16,384, one frame). The client's
    /// HTTP/2 layer drops these frames, but they still use its connection window.
    package var lateAnswerBodyBytes: Int? = nil

    package init(maxConcurrentStreams: Int, enforcement: StreamLimitEnforcement, maximumBodyBytes: Int) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.enforcement = enforcement
        self.maximumBodyBytes = maximumBodyBytes
    }
}

/// One client connection of a simulator on HTTP/2 frames (no per-stream channels), the same for APNs and FCM: it
/// gathers each stream's request and hands it to its ``SimulatorStreams``, writes the answers, keeps the client's
/// connection and stream windows open, tracks the stream limit the client acknowledged, and goes away (GOAWAY,
/// draining the streams it still answers, then closing) when a fault or the limit says so. Confined to its event
/// loop.
package final class SimulatorHTTP2Connection<Streams: SimulatorStreams>: ChannelInboundHandler, NIOHTTP2FrameDelegate {
    package typealias InboundIn = HTTP2Frame
    package typealias OutboundOut = HTTP2Frame

    /// The connection-level receive window the simulator keeps open: large, so that clients never wait on it.
    package static var connectionWindow: Int { 1 << 24 }

    private let streams: Streams
    private let settings: SimulatorHTTP2Settings
    private let goAwayWriter: SimulatorGoAwayWriter?
    private var requests: [HTTP2StreamID: SimulatorRequest] = [:]
    /// Streams the client reset that ``SimulatorHTTP2Settings/lateAnswerBodyBytes`` answers anyway.
    private var resetByClient: Set<HTTP2StreamID> = []
    /// SETTINGS_MAX_CONCURRENT_STREAMS values sent and not yet acknowledged, oldest first.
    private var unacknowledgedLimits: [Int] = []
    /// The stream limit the client has acknowledged; none (unlimited, as HTTP/2 says) before its first ACK.
    private var acknowledgedLimit = Int.max
    private var started = false
    private var streamsOpened = 0
    private var lastOpenedStreamID = HTTP2StreamID.rootStream
    private var peakStreams = 0
    private var goAwayLastStreamID: HTTP2StreamID?
    private var isClosing = false
    /// After our GOAWAY: the last frame written, after which the connection may close.
    private var lastWrite: EventLoopFuture<Void>?
    private var needsFlush = false
    /// Set when the HTTP/2 layer sent GOAWAY with an error: the connection is dead and is closed.
    private var failedWithGoAway = false

    package init(streams: Streams, settings: SimulatorHTTP2Settings, goAwayWriter: SimulatorGoAwayWriter?) {
        self.streams = streams
        self.settings = settings
        self.goAwayWriter = goAwayWriter
    }

    /// Adds TLS (when given), the frame writers, the HTTP/2 frame handler and a connection to a new child channel,
    /// before it is active or (after a protocol sniffer) once it is.
    package static func configure(_ channel: any Channel, settings: SimulatorHTTP2Settings, streams: Streams, tls: NIOSSLContext?) throws {
        let sync = channel.pipeline.syncOperations
        if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
        let goAwayWriter = SimulatorGoAwayWriter()
        try sync.addHandler(goAwayWriter)
        let connection = SimulatorHTTP2Connection(streams: streams, settings: settings, goAwayWriter: goAwayWriter)
        var advertised = settings.maxConcurrentStreams
        if settings.enforcement != .byNIO {
            // NIO would end the connection of a client over its limit; it is told "unlimited", the advertiser puts
            // the real limit on the wire, and the connection enforces it.
            try sync.addHandler(SimulatorStreamLimitAdvertiser(maxConcurrentStreams: settings.maxConcurrentStreams))
            advertised = SimulatorStreamLimitAdvertiser.placeholder
        }
        if settings.lateAnswerBodyBytes != nil {
            try sync.addHandler(SimulatorResetStreamHider { connection.clientReset($0) })
        }
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: advertised),
            HTTP2Setting(parameter: .initialWindowSize, value: 65535),
            HTTP2Setting(parameter: .maxFrameSize, value: 1 << 14),
        ]
        // A client that ignores the stream limit is counted, rather than losing the connection after NIO's default
        // of 200 stream errors.
        connectionConfiguration.maximumConnectionGlitches = 1 << 30
        var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
        streamConfiguration.streamErrorRateLimit.maximumCount = 1 << 30
        try sync.addHandler(
            NIOHTTP2Handler(
                mode: .server,
                frameDelegate: connection,
                connectionConfiguration: connectionConfiguration,
                streamConfiguration: streamConfiguration
            )
        )
        try sync.addHandler(connection)
    }

    // MARK: Inbound

    package func handlerAdded(context: ChannelHandlerContext) {
        // Added after a protocol sniffer: NIOHTTP2Handler, just before, has written its preface with the SETTINGS.
        if context.channel.isActive { start(context: context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        // The HTTP/2 handler before this one has just written the preface with the initial SETTINGS.
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        streams.record(.opened)
        unacknowledgedLimits.append(settings.maxConcurrentStreams)
        let increment = Self.connectionWindow - 65535
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil
        )
        guard settings.goesAwayAtStart else { return }
        isClosing = true
        streams.record(.goAwaySent)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        if let written = goAwayWriter?.writeGoAway(lastStreamID: .rootStream, errorCode: .noError) {
            written.whenComplete { _ in loopBound.value.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }

    /// The client reset `stream`; ``SimulatorResetStreamHider`` kept the frame from NIO so that the stream can still
    /// be answered.
    func clientReset(_ stream: HTTP2StreamID) {
        if requests[stream] != nil { resetByClient.insert(stream) }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !isClosing else { return }
        switch frame.payload {
        case .headers(let headers):
            // HEADERS on an open stream are trailers: nothing in them matters.
            if requests[frame.streamID] == nil { open(frame.streamID, headers: headers.headers, context: context) }
            if headers.endStream { complete(frame.streamID, context: context) }
        case .data(let data):
            receive(data, on: frame.streamID, context: context)
        case .settings(.ack):
            if !unacknowledgedLimits.isEmpty { acknowledgedLimit = unacknowledgedLimits.removeFirst() }
        case .rstStream:
            requests.removeValue(forKey: frame.streamID)
            closeIfDrained(context: context)
        default:
            break
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? NIOHTTP2WindowUpdatedEvent {
            if event.streamID == .rootStream, let window = event.inboundWindowSize, window < Self.connectionWindow / 2 {
                write(
                    HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - window)),
                    context: context
                )
            }
        } else if let event = event as? StreamClosedEvent {
            // Closed by the client (RST_STREAM) or dropped by our GOAWAY.
            if requests.removeValue(forKey: event.streamID) != nil { closeIfDrained(context: context) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if Self.isStreamLimitViolation(error) {
            // NIO refused a stream beyond the limit the client acknowledged (REFUSED_STREAM).
            streams.record(.streamLimitViolated)
        } else if failedWithGoAway || !(error is any NIOHTTP2Error) {
            // A connection error (the HTTP/2 layer already sent GOAWAY), or TLS or I/O failed: close, so that the
            // client sees it at once. NIO has reset the stream of a stream error itself.
            isClosing = true
            context.close(promise: nil)
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        isClosing = true
        requests.removeAll()
        context.fireChannelInactive()
    }

    package func wroteFrame(_ frame: HTTP2Frame) {
        if case .goAway(_, let errorCode, _) = frame.payload, errorCode != .noError { failedWithGoAway = true }
    }

    static func isStreamLimitViolation(_ error: any Error) -> Bool {
        if error is NIOHTTP2Errors.MaxStreamsViolation { return true }
        if let error = error as? NIOHTTP2Errors.StreamError { return error.baseError is NIOHTTP2Errors.MaxStreamsViolation }
        return false
    }

    // MARK: Requests

    private func open(_ stream: HTTP2StreamID, headers: HPACKHeaders, context: ChannelHandlerContext) {
        // Streams above our GOAWAY's last stream are never processed: the client must send them again.
        if let last = goAwayLastStreamID, stream > last { return }
        if requests.count >= acknowledgedLimit {
            streams.record(.streamLimitViolated)
            switch settings.enforcement {
            case .byNIO:
                break
            case .refuseStream:
                write(HTTP2Frame(streamID: stream, payload: .rstStream(.refusedStream)), context: context)
                return
            case .goAway:
                goAway(lastStreamID: lastOpenedStreamID, errorCode: .refusedStream, context: context)
                closeIfDrained(context: context)
                return
            }
        }
        streamsOpened += 1
        requests[stream] = SimulatorRequest(stream: stream, headers: headers)
        lastOpenedStreamID = stream
        if requests.count > peakStreams {
            peakStreams = requests.count
            streams.record(.concurrentStreams(peakStreams))
        }
        if streams.goesAway(afterOpening: streamsOpened) { goAway(lastStreamID: stream, errorCode: .noError, context: context) }
    }

    private func goAway(lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode, context: ChannelHandlerContext) {
        guard goAwayLastStreamID == nil else { return }
        goAwayLastStreamID = lastStreamID
        if let written = goAwayWriter?.writeGoAway(lastStreamID: lastStreamID, errorCode: errorCode) {
            lastWrite = written
        } else {
            write(
                HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: errorCode, opaqueData: nil)),
                context: context
            )
        }
        streams.record(.goAwaySent)
    }

    private func receive(_ data: HTTP2Frame.FramePayload.Data, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        guard requests[stream] != nil, case .byteBuffer(var bytes) = data.data else { return }
        let size = bytes.readableBytes
        requests[stream]!.append(&bytes, limit: settings.maximumBodyBytes)
        // Without per-stream channels nothing else returns the stream's window: do it, so that any body can arrive
        // (and one over the limit be answered).
        if size > 0, !data.endStream { write(HTTP2Frame(streamID: stream, payload: .windowUpdate(windowSizeIncrement: size)), context: context) }
        if data.endStream { complete(stream, context: context) }
    }

    private func complete(_ stream: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let request = requests[stream] else { return }
        switch streams.answer(request) {
        case .dropConnection:
            streams.record(.dropped)
            isClosing = true
            requests.removeAll()
            context.flush()
            context.close(promise: nil)
        case .respond(let response, let delay, let limit):
            if let limit {
                unacknowledgedLimits.append(limit)
                write(
                    HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)]))),
                    context: context
                )
            }
            guard let delay else {
                respond(on: stream, response, context: context)
                return
            }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: delay) {
                let (connection, context) = loopBound.value
                guard !connection.isClosing else { return }
                connection.respond(on: stream, response, context: context)
                connection.flushIfNeeded(context: context)
            }
        }
    }

    // MARK: Responses

    private func respond(on stream: HTTP2StreamID, _ response: SimulatorResponse, context: ChannelHandlerContext) {
        guard requests.removeValue(forKey: stream) != nil else { return }
        var headers = HPACKHeaders()
        headers.reserveCapacity(1 + response.headers.count)
        headers.add(name: ":status", value: Self.statusText(response.status))
        for (name, value) in response.headers {
            headers.add(name: name, value: value, indexing: name == "apns-id" ? .nonIndexable : .indexable)
        }
        if var body = response.body {
            if let size = settings.lateAnswerBodyBytes, resetByClient.remove(stream) != nil, size > body.readableBytes {
                // JSON allows the whitespace; the client's HTTP/2 layer drops the frame anyway.
                body.writeRepeatingByte(UInt8(ascii: " "), count: min(size, 1 << 14) - body.readableBytes)
            }
            write(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers))), context: context)
            write(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true))), context: context)
        } else {
            write(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers, endStream: true))), context: context)
        }
        closeIfDrained(context: context)
    }

    /// After our GOAWAY, closes the connection once every stream up to its last stream has been answered.
    private func closeIfDrained(context: ChannelHandlerContext) {
        guard goAwayLastStreamID != nil, requests.isEmpty, !isClosing else { return }
        isClosing = true
        needsFlush = false
        context.flush()
        guard let lastWrite else {
            context.close(promise: nil)
            return
        }
        // Close only once the last answers are on the wire, so that none of them is lost.
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        lastWrite.whenComplete { _ in loopBound.value.close(promise: nil) }
    }

    private func write(_ frame: HTTP2Frame, context: ChannelHandlerContext) {
        if goAwayLastStreamID != nil {
            let promise = context.eventLoop.makePromise(of: Void.self)
            context.write(wrapOutboundOut(frame), promise: promise)
            lastWrite = promise.futureResult
        } else {
            context.write(wrapOutboundOut(frame), promise: nil)
        }
        needsFlush = true
    }

    private func flushIfNeeded(context: ChannelHandlerContext) {
        guard needsFlush else { return }
        needsFlush = false
        context.flush()
    }

    /// The statuses the simulators answer, without formatting an integer per answer.
    private static func statusText(_ status: Int) -> String {
        switch status {
        case 200: "200"
        case 400: "400"
        case 401: "401"
        case 403: "403"
        case 404: "404"
        case 405: "405"
        case 410: "410"
        case 413: "413"
        case 429: "429"
        case 500: "500"
        case 503: "503"
        default: String(status)
        }
    }
}
