import APNs
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL

/// One client connection of the simulator, on HTTP/2 frames (no per-stream channels): gathers each stream's
/// request, validates it, applies the faults and answers as APNs does. Confined to its event loop.
final class APNsSimulatorConnection: ChannelInboundHandler, NIOHTTP2FrameDelegate {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// What all connections of one simulator share.
    struct Rules: Sendable {
        var validator: APNsRequestValidator
        var faults: APNsSimulator.Faults
        var ledger: APNsSimulatorLedger
        var onAccept: (@Sendable (APNsSimulator.Delivery) -> Void)?
    }

    /// A request being received on one stream.
    private struct PendingRequest {
        var head: APNsRequestValidator.Head
        var body: ByteBuffer?
        /// Bytes of body received, including those not kept once the payload limit was passed.
        var bodyBytes = 0
    }

    /// The connection-level receive window the simulator keeps open: large, so that clients never wait on it.
    static let connectionWindow = 1 << 24

    private let rules: Rules
    private let tokenOutcomes: [(prefix: String, outcome: APNsSimulator.Outcome)]
    private let latency: TimeAmount?
    private let latencyByToken: [(prefix: String, latency: TimeAmount?)]
    /// Streams the client reset that ``APNsSimulator/Faults/lateAnswerBodyBytes`` answers anyway.
    private var resetByClient: Set<HTTP2StreamID> = []
    /// Sends SETTINGS and at once GOAWAY, then closes (``APNsSimulator/Faults/goAwayAtStartForConnections``).
    var goesAwayAtStart = false
    private var streams: [HTTP2StreamID: PendingRequest] = [:]
    private var providerTokens = APNsRequestValidator.ProviderTokenCache()
    /// SETTINGS_MAX_CONCURRENT_STREAMS values sent and not yet acknowledged, oldest first.
    private var unacknowledgedLimits: [Int] = []
    /// The stream limit the client has acknowledged; none (unlimited, as HTTP/2 says) before its first ACK.
    private var acknowledgedLimit = Int.max
    private var raisedLimit = false
    private var streamsOpened = 0
    private var requestsCompleted = 0
    private var peakStreams = 0
    private var goAwayLastStreamID: HTTP2StreamID?
    /// Writes our GOAWAY past NIOHTTP2Handler when present (see ``GoAwayWriter``).
    var goAwayWriter: GoAwayWriter?
    private var isClosing = false
    /// After our GOAWAY: the last frame written, after which the connection may close.
    private var lastWrite: EventLoopFuture<Void>?
    private var needsFlush = false
    /// Set when the HTTP/2 layer sent GOAWAY with an error: the connection is dead and is closed.
    private var failedWithGoAway = false
    private var messageIDs = SplitMix64(seed: UInt64.random(in: .min ... .max))

    init(rules: Rules) {
        self.rules = rules
        self.tokenOutcomes = rules.faults.outcomesByTokenPrefix.map { ($0.prefix.lowercased(), $0.outcome) }
        self.latency = rules.faults.latency > .zero ? TimeAmount(rules.faults.latency) : nil
        self.latencyByToken = rules.faults.latencyByTokenPrefix.map {
            ($0.prefix.lowercased(), $0.latency > .zero ? TimeAmount($0.latency) : nil)
        }
    }

    /// Adds TLS (when given), the HTTP/2 frame handler and a connection to a new child channel.
    static func configure(_ channel: any Channel, rules: Rules, tls: NIOSSLContext?) throws {
        let number = rules.ledger.connectionAccepted()
        // A black hole: the TCP connection stays open and nothing answers, not even the TLS handshake.
        if number <= rules.faults.silentConnections { return }
        let sync = channel.pipeline.syncOperations
        if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
        let goAwayWriter = GoAwayWriter()
        try sync.addHandler(goAwayWriter)
        let connection = APNsSimulatorConnection(rules: rules)
        connection.goAwayWriter = goAwayWriter
        connection.goesAwayAtStart = number <= rules.faults.goAwayAtStartForConnections
        if rules.faults.lateAnswerBodyBytes != nil {
            try sync.addHandler(ResetStreamHider(connection: connection))
        }
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = initialSettings(rules.faults)
        // A client that ignores the stream limit gets REFUSED_STREAM for each extra stream, counted as a
        // violation, rather than losing the connection after NIO's default of 200 stream errors.
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

    static func initialSettings(_ faults: APNsSimulator.Faults) -> HTTP2Settings {
        [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: faults.initialMaxConcurrentStreams),
            HTTP2Setting(parameter: .initialWindowSize, value: 65535),
            HTTP2Setting(parameter: .maxFrameSize, value: 1 << 14),
        ]
    }

    // MARK: Inbound

    func channelActive(context: ChannelHandlerContext) {
        rules.ledger.connectionOpened()
        // The HTTP/2 handler before this one has just written the preamble with the initial SETTINGS.
        unacknowledgedLimits.append(rules.faults.initialMaxConcurrentStreams)
        let increment = Self.connectionWindow - 65535
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil
        )
        context.fireChannelActive()
        if goesAwayAtStart, let goAwayWriter {
            isClosing = true
            rules.ledger.goAwaySent()
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            if let written = goAwayWriter.writeGoAway(lastStreamID: .rootStream) {
                written.whenComplete { _ in loopBound.value.close(promise: nil) }
            } else {
                context.close(promise: nil)
            }
        }
    }

    /// The client reset `streamID`; ``ResetStreamHider`` kept the frame from NIO so that the stream can
    /// still be answered.
    func clientReset(_ streamID: HTTP2StreamID) {
        if streams[streamID] != nil { resetByClient.insert(streamID) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !isClosing else { return }
        switch frame.payload {
        case .headers(let headers):
            if streams[frame.streamID] != nil {
                // Trailers: nothing in them matters to APNs.
                if headers.endStream { complete(frame.streamID, context: context) }
            } else {
                open(frame.streamID, headers: headers.headers, context: context)
                if headers.endStream { complete(frame.streamID, context: context) }
            }
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
            // Closed by the client (RST_STREAM) or dropped by our GOAWAY.
            if streams.removeValue(forKey: event.streamID) != nil { closeIfDrained(context: context) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if Self.isStreamLimitViolation(error) {
            // NIO refused a stream beyond the limit the client acknowledged (REFUSED_STREAM).
            rules.ledger.streamLimitViolated()
        } else if failedWithGoAway || !(error is any NIOHTTP2Error) {
            // A connection error (the HTTP/2 layer already sent GOAWAY), or TLS or I/O failed.
            isClosing = true
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isClosing = true
        streams.removeAll()
        context.fireChannelInactive()
    }

    func wroteFrame(_ frame: HTTP2Frame) {
        if case .goAway(_, let errorCode, _) = frame.payload, errorCode != .noError { failedWithGoAway = true }
    }

    static func isStreamLimitViolation(_ error: any Error) -> Bool {
        if error is NIOHTTP2Errors.MaxStreamsViolation { return true }
        if let error = error as? NIOHTTP2Errors.StreamError { return error.baseError is NIOHTTP2Errors.MaxStreamsViolation }
        return false
    }

    // MARK: Requests

    private func open(_ streamID: HTTP2StreamID, headers: HPACKHeaders, context: ChannelHandlerContext) {
        // Streams above our GOAWAY's last stream are never processed: the client must send them again.
        if let last = goAwayLastStreamID, streamID > last { return }
        streamsOpened += 1
        if streams.count >= acknowledgedLimit { rules.ledger.streamLimitViolated() }
        var head = APNsRequestValidator.Head()
        for header in headers { head.add(name: header.name, value: header.value) }
        streams[streamID] = PendingRequest(head: head)
        if streams.count > peakStreams {
            peakStreams = streams.count
            rules.ledger.concurrentStreams(peakStreams)
        }
        if let limit = rules.faults.goAwayAfterStreams, streamsOpened == limit {
            goAwayLastStreamID = streamID
            if let goAwayWriter {
                goAwayWriter.writeGoAway(lastStreamID: streamID)
            } else {
                write(
                    HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: streamID, errorCode: .noError, opaqueData: nil)),
                    context: context
                )
            }
            rules.ledger.goAwaySent()
        }
    }

    private func receive(_ data: HTTP2Frame.FramePayload.Data, on streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard var request = streams[streamID] else { return }
        guard case .byteBuffer(var bytes) = data.data else { return }
        request.bodyBytes += bytes.readableBytes
        // Past the limit the body is answered 413 without being kept; only its length matters.
        if request.bodyBytes <= APNsNotification.maximumPayloadBytes + 1 {
            if request.body == nil {
                request.body = bytes
            } else {
                request.body!.writeBuffer(&bytes)
            }
        } else {
            request.body = nil
            // Keep an oversized body flowing (the stream window is 64 KiB) so that it can be answered.
            let increment = data.data.readableBytes
            if increment > 0 { write(HTTP2Frame(streamID: streamID, payload: .windowUpdate(windowSizeIncrement: increment)), context: context) }
        }
        streams[streamID] = request
        if data.endStream { complete(streamID, context: context) }
    }

    private func complete(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let request = streams[streamID] else { return }
        requestsCompleted += 1
        let now = Date()
        let outcome: APNsSimulator.Outcome?
        var delay = latency
        let body = request.body?.readableBytesView ?? ByteBuffer().readableBytesView
        let verdict: APNsRequestValidator.Verdict
        if request.bodyBytes > body.count {
            // The body was too large to keep: only its length is judged, after the other rules.
            verdict = rules.validator.validate(
                request.head,
                body: repeatElement(UInt8(ascii: "{"), count: request.bodyBytes),
                now: now,
                providerTokens: &providerTokens
            )
        } else {
            verdict = rules.validator.validate(request.head, body: body, now: now, providerTokens: &providerTokens)
        }
        switch verdict {
        case .accepted(let token):
            if let match = latencyByToken.first(where: { token.hasPrefix($0.prefix) }) { delay = match.latency }
            if let match = tokenOutcomes.first(where: { token.hasPrefix($0.prefix) }) {
                rules.ledger.reject(match.outcome.reason)
                outcome = match.outcome
            } else {
                outcome = rules.ledger.admit(token: token, at: now)
                if outcome == nil, let onAccept = rules.onAccept {
                    onAccept(
                        APNsSimulator.Delivery(
                            token: token,
                            pushType: request.head.pushType ?? "alert",
                            topic: request.head.topic,
                            payload: Array(body),
                            acceptedAt: now
                        )
                    )
                }
            }
        case .rejected(let status, let reason):
            rules.ledger.reject(reason)
            outcome = APNsSimulator.Outcome(status: status, reason: reason)
        }
        if !raisedLimit, providerTokens.hasAcceptedToken {
            raisedLimit = true
            let limit = rules.faults.maxConcurrentStreams
            unacknowledgedLimits.append(limit)
            write(
                HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)]))),
                context: context
            )
        }
        if let limit = rules.faults.dropConnectionAfterStreams, requestsCompleted == limit {
            rules.ledger.connectionDropped()
            isClosing = true
            streams.removeAll()
            context.flush()
            context.close(promise: nil)
            return
        }
        let apnsID = request.head.apnsID ?? makeAPNsID()
        if let delay {
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: delay) {
                let (connection, context) = loopBound.value
                guard !connection.isClosing else { return }
                connection.respond(on: streamID, outcome: outcome, apnsID: apnsID, at: now, context: context)
                connection.flushIfNeeded(context: context)
            }
        } else {
            respond(on: streamID, outcome: outcome, apnsID: apnsID, at: now, context: context)
        }
    }

    // MARK: Responses

    /// Answers a stream: 200 with only HEADERS, or the outcome's status and a JSON `reason` (and `timestamp` for 410).
    private func respond(on streamID: HTTP2StreamID, outcome: APNsSimulator.Outcome?, apnsID: String, at now: Date, context: ChannelHandlerContext) {
        var headers = HPACKHeaders()
        headers.reserveCapacity(3)
        if let outcome {
            headers.add(name: ":status", value: Self.statusText(outcome.status))
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
            write(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers))), context: context)
            var body = context.channel.allocator.buffer(capacity: 96)
            body.writeString(#"{"reason":""#)
            body.writeString(outcome.reason.rawValue)
            if outcome.status == 410 {
                let timestamp = outcome.timestamp ?? now
                body.writeString(#"","timestamp":"#)
                body.writeString(String(Int64((timestamp.timeIntervalSince1970 * 1000).rounded())))
                body.writeString("}")
            } else {
                body.writeString(#""}"#)
            }
            if let size = rules.faults.lateAnswerBodyBytes, resetByClient.remove(streamID) != nil, size > body.readableBytes {
                // JSON allows the whitespace; the client's HTTP/2 layer drops the frame anyway.
                body.writeRepeatingByte(UInt8(ascii: " "), count: min(size, 1 << 14) - body.readableBytes)
            }
            write(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true))), context: context)
        } else {
            headers.add(name: ":status", value: "200")
            headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
            write(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true))), context: context)
        }
        streams.removeValue(forKey: streamID)
        closeIfDrained(context: context)
    }

    /// After our GOAWAY, closes the connection once every stream up to its last stream has been answered.
    private func closeIfDrained(context: ChannelHandlerContext) {
        guard goAwayLastStreamID != nil, streams.isEmpty, !isClosing else { return }
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

    private static func statusText(_ status: Int) -> String {
        switch status {
        case 200: "200"
        case 400: "400"
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

    /// A new lowercase UUID (version 4 layout) for a response whose request carried no `apns-id`.
    private func makeAPNsID() -> String {
        let high = messageIDs.next() & 0xffff_ffff_ffff_0fff | 0x0000_0000_0000_4000
        let low = messageIDs.next() & 0x3fff_ffff_ffff_ffff | 0x8000_0000_0000_0000
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                var shift = (nibbles - 1) * 4
                while shift >= 0 {
                    buffer[index] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xf)]
                    index += 1
                    shift -= 4
                }
            }
            put(high >> 32, nibbles: 8)
            buffer[index] = UInt8(ascii: "-")
            index += 1
            put((high >> 16) & 0xffff, nibbles: 4)
            buffer[index] = UInt8(ascii: "-")
            index += 1
            put(high & 0xffff, nibbles: 4)
            buffer[index] = UInt8(ascii: "-")
            index += 1
            put(low >> 48, nibbles: 4)
            buffer[index] = UInt8(ascii: "-")
            index += 1
            put(low & 0xffff_ffff_ffff, nibbles: 12)
            return index
        }
    }
}

/// Sends the simulator's fault-injected GOAWAY as raw bytes beneath NIOHTTP2Handler.
///
/// Had NIOHTTP2Handler sent it, NIO would treat the DATA of streams above the last stream id that the
/// client wrote before it saw the GOAWAY as a connection error and stop reading, leaving the bodies of
/// streams at or below the last stream id, still on the wire behind them, unread. APNs drops such frames
/// as RFC 9113 §6.8 allows; the simulator does the same in its own handler, which ignores those streams.
final class GoAwayWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// - Returns: when the frame is written; nil outside a pipeline, when nothing is written.
    @discardableResult
    func writeGoAway(lastStreamID: HTTP2StreamID) -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        var frame = context.channel.allocator.buffer(capacity: 17)
        // Length 8, type GOAWAY (7), no flags, stream 0; then the last stream id and NO_ERROR.
        frame.writeBytes([0, 0, 8, 7, 0, 0, 0, 0, 0])
        frame.writeInteger(UInt32(Int32(lastStreamID)))
        frame.writeInteger(UInt32(0))
        return context.writeAndFlush(wrapOutboundOut(frame))
    }
}

/// Removes the client's RST_STREAM frames before NIOHTTP2Handler sees them, for
/// ``APNsSimulator/Faults/lateAnswerBodyBytes``: NIO still thinks the stream open and lets the simulator
/// answer it, with flow control accounted as for any answer. Frames are parsed only for their 9-byte
/// headers; everything else passes through unchanged.
final class ResetStreamHider: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let connection: APNsSimulatorConnection
    private var pending: ByteBuffer?
    /// The client's connection preface (`PRI * HTTP/2.0…`) comes before the first frame.
    private var prefaceLeft = 24

    init(connection: APNsSimulatorConnection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if pending == nil {
            pending = bytes
        } else {
            pending!.writeBuffer(&bytes)
        }
        var buffer = pending!
        pending = nil
        var out = context.channel.allocator.buffer(capacity: buffer.readableBytes)
        if prefaceLeft > 0 {
            var preface = buffer.readSlice(length: min(prefaceLeft, buffer.readableBytes))!
            prefaceLeft -= preface.readableBytes
            out.writeBuffer(&preface)
        }
        while prefaceLeft == 0, buffer.readableBytes >= 9 {
            let start = buffer.readerIndex
            let length = Int(buffer.getInteger(at: start, as: UInt16.self)!) << 8 | Int(buffer.getInteger(at: start + 2, as: UInt8.self)!)
            guard buffer.readableBytes >= 9 + length else { break }
            let type = buffer.getInteger(at: start + 3, as: UInt8.self)!
            var frame = buffer.readSlice(length: 9 + length)!
            if type == 3 {
                let streamID = frame.getInteger(at: frame.readerIndex + 5, as: UInt32.self)! & 0x7fff_ffff
                connection.clientReset(HTTP2StreamID(Int(streamID)))
            } else {
                out.writeBuffer(&frame)
            }
        }
        if buffer.readableBytes > 0 { pending = buffer }
        if out.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(out)) }
    }
}
