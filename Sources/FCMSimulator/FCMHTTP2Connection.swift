import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 connection of the simulator, on frames (no per-stream channels): gathers each stream's request,
/// answers it through ``FCMSimulator/handle(_:)``, advertises the stream limit and enforces it as
/// ``FCMSimulator/Faults/streamLimitAction`` says. Confined to its event loop.
final class FCMHTTP2Connection: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// The connection-level receive window the simulator keeps open: large, so that clients never wait on it.
    static let connectionWindow = 1 << 24
    static let streamWindow = 65535

    private let simulator: FCMSimulator
    private let maxConcurrentStreams: Int
    private let limitAction: FCMSimulator.StreamLimitAction
    private var streams: [HTTP2StreamID: FCMSimulatorRequest] = [:]
    /// SETTINGS_MAX_CONCURRENT_STREAMS values sent and not yet acknowledged, oldest first.
    private var unacknowledgedLimits: [Int] = []
    /// The stream limit the client has acknowledged; none (unlimited, as HTTP/2 says) before its first ACK.
    private var acknowledgedLimit = Int.max
    private var lastOpenedStreamID = HTTP2StreamID.rootStream
    private var peakStreams = 0
    private var goAwayLastStreamID: HTTP2StreamID?
    private var isClosing = false
    private var needsFlush = false
    /// After our GOAWAY: the last frame written, after which the connection may close.
    private var lastWrite: EventLoopFuture<Void>?
    /// Writes our GOAWAY past NIOHTTP2Handler (see ``FCMGoAwayWriter``).
    private let goAwayWriter: FCMGoAwayWriter?

    init(simulator: FCMSimulator, maxConcurrentStreams: Int, limitAction: FCMSimulator.StreamLimitAction, goAwayWriter: FCMGoAwayWriter?) {
        self.simulator = simulator
        self.maxConcurrentStreams = maxConcurrentStreams
        self.limitAction = limitAction
        self.goAwayWriter = goAwayWriter
    }

    /// Adds the GOAWAY writer, the HTTP/2 frame handler and a connection to a channel that is already active
    /// (the protocol sniffer calls this after the client's preface).
    static func configure(_ channel: any Channel, simulator: FCMSimulator) throws {
        let (limit, action) = simulator.streamLimit
        let sync = channel.pipeline.syncOperations
        let goAwayWriter = FCMGoAwayWriter()
        try sync.addHandler(goAwayWriter)
        try sync.addHandler(FCMStreamLimitAdvertiser(maxConcurrentStreams: limit))
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = [
            // NIO would answer a client over the limit with a connection error (GOAWAY PROTOCOL_ERROR, every stream
            // lost); it is told "unlimited" and the advertiser puts the real limit on the wire, enforced below.
            HTTP2Setting(parameter: .maxConcurrentStreams, value: FCMStreamLimitAdvertiser.placeholder),
            HTTP2Setting(parameter: .initialWindowSize, value: streamWindow),
            HTTP2Setting(parameter: .maxFrameSize, value: 1 << 14),
        ]
        // A client that ignores the stream limit is counted, not cut off after NIO's default of 200 stream errors.
        connectionConfiguration.maximumConnectionGlitches = 1 << 30
        var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
        streamConfiguration.streamErrorRateLimit.maximumCount = 1 << 30
        try sync.addHandler(
            NIOHTTP2Handler(mode: .server, connectionConfiguration: connectionConfiguration, streamConfiguration: streamConfiguration)
        )
        try sync.addHandler(FCMHTTP2Connection(simulator: simulator, maxConcurrentStreams: limit, limitAction: action, goAwayWriter: goAwayWriter))
        simulator.connectionOpened(http2: true)
    }

    // MARK: Inbound

    func handlerAdded(context: ChannelHandlerContext) {
        // NIOHTTP2Handler, added just before on an active channel, has written its preface with the SETTINGS.
        unacknowledgedLimits.append(maxConcurrentStreams)
        let increment = Self.connectionWindow - 65535
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil
        )
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !isClosing else { return }
        switch frame.payload {
        case .headers(let headers):
            if streams[frame.streamID] == nil {
                open(frame.streamID, headers: headers.headers, context: context)
            }
            if headers.endStream { complete(frame.streamID, context: context) }
        case .data(let data):
            receive(data, on: frame.streamID, context: context)
        case .settings(.ack):
            if !unacknowledgedLimits.isEmpty { acknowledgedLimit = unacknowledgedLimits.removeFirst() }
        case .rstStream:
            streams.removeValue(forKey: frame.streamID)
            closeIfDrained(context: context)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? NIOHTTP2WindowUpdatedEvent {
            if event.streamID == .rootStream, let window = event.inboundWindowSize, window < Self.connectionWindow / 2 {
                write(
                    HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - window)),
                    context: context
                )
            }
        } else if let event = event as? StreamClosedEvent {
            if streams.removeValue(forKey: event.streamID) != nil { closeIfDrained(context: context) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIO has reset the stream of a stream error; any other error ended the connection (NIO has sent its
        // GOAWAY) or is TLS or I/O: close, so that the client sees it at once.
        if error is NIOHTTP2Errors.StreamError { return }
        isClosing = true
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        isClosing = true
        streams.removeAll()
        context.fireChannelInactive()
    }

    // MARK: Requests

    private func open(_ streamID: HTTP2StreamID, headers: HPACKHeaders, context: ChannelHandlerContext) {
        // Streams above our GOAWAY's last stream are never processed: the client must send them again.
        if let last = goAwayLastStreamID, streamID > last { return }
        if streams.count >= acknowledgedLimit {
            exceededLimit(streamID, context: context)
            return
        }
        var request = FCMSimulatorRequest(body: context.channel.allocator.buffer(capacity: 0))
        for header in headers { request.add(header: header.name, value: header.value) }
        streams[streamID] = request
        lastOpenedStreamID = streamID
        if streams.count > peakStreams {
            peakStreams = streams.count
            simulator.concurrentStreams(peakStreams)
        }
    }

    /// A client opened a stream beyond the limit it acknowledged: counted, never processed; with
    /// ``FCMSimulator/StreamLimitAction/refuseStream`` reset, with ``FCMSimulator/StreamLimitAction/goAway`` the
    /// connection goes away (last stream = the last one within the limit) and drains.
    private func exceededLimit(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        simulator.streamLimitViolated()
        if limitAction == .refuseStream {
            write(HTTP2Frame(streamID: streamID, payload: .rstStream(.refusedStream)), context: context)
            return
        }
        guard goAwayLastStreamID == nil else { return }
        goAwayLastStreamID = lastOpenedStreamID
        if let written = goAwayWriter?.writeGoAway(lastStreamID: lastOpenedStreamID, errorCode: .refusedStream) {
            lastWrite = written
        } else {
            write(
                HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastOpenedStreamID, errorCode: .refusedStream, opaqueData: nil)),
                context: context
            )
        }
        simulator.goAwaySent()
        closeIfDrained(context: context)
    }

    private func receive(_ data: HTTP2Frame.FramePayload.Data, on streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard var request = streams[streamID], case .byteBuffer(var bytes) = data.data else { return }
        let size = bytes.readableBytes
        request.append(body: &bytes)
        streams[streamID] = request
        // Without per-stream channels nothing else returns the stream's window: do it, so any body can arrive.
        if size > 0, !data.endStream { write(HTTP2Frame(streamID: streamID, payload: .windowUpdate(windowSizeIncrement: size)), context: context) }
        if data.endStream { complete(streamID, context: context) }
    }

    private func complete(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let request = streams[streamID] else { return }
        let response = simulator.handle(request)
        if response.delay > .zero {
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: TimeAmount(response.delay)) {
                let (connection, context) = loopBound.value
                guard !connection.isClosing else { return }
                connection.respond(on: streamID, response, context: context)
                connection.flushIfNeeded(context: context)
            }
        } else {
            respond(on: streamID, response, context: context)
        }
    }

    // MARK: Responses

    private func respond(on streamID: HTTP2StreamID, _ response: FCMSimulatorResponse, context: ChannelHandlerContext) {
        guard streams.removeValue(forKey: streamID) != nil else { return }
        var body = context.channel.allocator.buffer(capacity: response.body.utf8.count)
        body.writeString(response.body)
        var headers = HPACKHeaders()
        headers.reserveCapacity(4)
        headers.add(name: ":status", value: Self.statusText(response.status))
        headers.add(name: "content-type", value: response.contentType)
        headers.add(name: "content-length", value: String(body.readableBytes))
        if let retryAfter = response.retryAfter { headers.add(name: "retry-after", value: String(retryAfter)) }
        write(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers))), context: context)
        write(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true))), context: context)
        closeIfDrained(context: context)
    }

    /// After our GOAWAY, closes the connection once every stream up to its last stream has been answered.
    private func closeIfDrained(context: ChannelHandlerContext) {
        guard goAwayLastStreamID != nil, streams.isEmpty, !isClosing else { return }
        isClosing = true
        needsFlush = false
        context.flush()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        if let lastWrite {
            // Close only once the last answers are on the wire, so that none of them is lost.
            lastWrite.whenComplete { _ in loopBound.value.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
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

    private static func statusText(_ status: Int) -> String {
        switch status {
        case 200: "200"
        case 400: "400"
        case 401: "401"
        case 403: "403"
        case 404: "404"
        case 429: "429"
        case 500: "500"
        case 503: "503"
        default: String(status)
        }
    }
}

/// Sends the simulator's GOAWAY as raw bytes beneath NIOHTTP2Handler.
///
/// Had NIOHTTP2Handler sent it, NIO would treat DATA the client wrote on streams above the last stream id, before
/// it saw the GOAWAY, as a connection error and stop reading, leaving the bodies of streams within the last id
/// unread behind them. RFC 9113 §6.8 lets a server drop such frames; the connection handler ignores those streams.
final class FCMGoAwayWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    @discardableResult
    func writeGoAway(lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode) -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        var frame = context.channel.allocator.buffer(capacity: 17)
        // Length 8, type GOAWAY (7), no flags, stream 0; then the last stream id and the error code.
        frame.writeBytes([0, 0, 8, 7, 0, 0, 0, 0, 0])
        frame.writeInteger(UInt32(Int32(lastStreamID)))
        frame.writeInteger(UInt32(errorCode.networkCode))
        return context.writeAndFlush(wrapOutboundOut(frame))
    }
}

/// Puts the simulator's SETTINGS_MAX_CONCURRENT_STREAMS into the connection's first SETTINGS frame in place of
/// ``placeholder``, the value NIOHTTP2Handler was configured with, then steps aside. NIO enforces its own value with
/// a connection error; this way the client sees the real limit and ``FCMHTTP2Connection`` enforces it as
/// ``FCMSimulator/StreamLimitAction`` says.
final class FCMStreamLimitAdvertiser: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    static let placeholder = (1 << 31) - 2
    private let maxConcurrentStreams: Int

    init(maxConcurrentStreams: Int) {
        self.maxConcurrentStreams = maxConcurrentStreams
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var bytes) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        let start = bytes.readerIndex
        // The server's first frame is its SETTINGS: 9-byte header (type 4), then 6-byte entries.
        if bytes.readableBytes >= 9, bytes.getInteger(at: start + 3, as: UInt8.self) == 4 {
            let length = Int(bytes.getInteger(at: start, as: UInt16.self)!) << 8 | Int(bytes.getInteger(at: start + 2, as: UInt8.self)!)
            var entry = start + 9
            while entry + 6 <= min(start + 9 + length, bytes.writerIndex) {
                if bytes.getInteger(at: entry, as: UInt16.self) == 3, bytes.getInteger(at: entry + 2, as: UInt32.self) == UInt32(Self.placeholder) {
                    bytes.setInteger(UInt32(maxConcurrentStreams), at: entry + 2)
                }
                entry += 6
            }
        }
        context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: promise)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
