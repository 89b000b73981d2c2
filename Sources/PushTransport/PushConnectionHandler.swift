import NIOCore
import NIOHPACK
import NIOHTTP2
import Synchronization

/// A request as the pool hands it to a connection: everything needed to write it, and whom to tell.
package struct PushWireRequest: Sendable {
    /// Unique within the pool; the connection's stream bookkeeping is keyed by it.
    let id: UInt64
    let headers: HPACKHeaders
    let body: ByteBuffer
    /// When it entered the pool, for the wait limit.
    let enqueuedAt: NIODeadline
    /// How often a connection gave it back unprocessed (GOAWAY, refused stream, closed before writing).
    var resends = 0
    /// Whether its caller still wants it; shared by the requests of one call.
    let cancellation: PushBatchCancellation?
    let completion: @Sendable (PushWireResult) -> Void

    package init(
        id: UInt64,
        headers: HPACKHeaders,
        body: ByteBuffer,
        enqueuedAt: NIODeadline,
        cancellation: PushBatchCancellation? = nil,
        completion: @escaping @Sendable (PushWireResult) -> Void
    ) {
        self.id = id
        self.headers = headers
        self.body = body
        self.enqueuedAt = enqueuedAt
        self.cancellation = cancellation
        self.completion = completion
    }

    /// Whether its caller withdrew it: given back by a connection, it is then not sent again.
    var isWithdrawn: Bool { cancellation?.isCancelled ?? false }
}

/// Whether the caller of one call's requests still wants them, and whether they were handed to the pool: the
/// handshake between the call and its task's cancellation handler, which may run before, during or after the
/// hand-over. Lock-free: the pool reads it for every request a connection gives back.
package final class PushBatchCancellation: Sendable {
    private static let new: UInt8 = 0
    private static let submitted: UInt8 = 1
    private static let cancelledBeforeSubmit: UInt8 = 2
    private static let cancelledAfterSubmit: UInt8 = 3

    private let state = Atomic<UInt8>(0)

    package init() {}

    /// Whether the caller was cancelled.
    package var isCancelled: Bool { state.load(ordering: .acquiring) >= Self.cancelledBeforeSubmit }

    /// Records that the requests go to the pool now. False when the caller was cancelled first: they must not.
    package func submit() -> Bool {
        state.compareExchange(expected: Self.new, desired: Self.submitted, ordering: .acquiringAndReleasing).exchanged
    }

    /// Records the cancellation. True when the requests were handed to the pool already: they must be withdrawn.
    package func cancel() -> Bool {
        var current = state.load(ordering: .acquiring)
        while current < Self.cancelledBeforeSubmit {
            let next = current == Self.new ? Self.cancelledBeforeSubmit : Self.cancelledAfterSubmit
            let (exchanged, original) = state.compareExchange(expected: current, desired: next, ordering: .acquiringAndReleasing)
            if exchanged { return next == Self.cancelledAfterSubmit }
            current = original
        }
        return false
    }
}

/// What a connection learned about one request.
package enum PushWireResult: Sendable {
    /// The server answered: `:status`, the response headers and the body, if any.
    case response(status: Int, headers: HPACKHeaders, body: ByteBuffer?)
    /// The server did not process it (never written, above GOAWAY's last stream id, REFUSED_STREAM):
    /// the pool sends it again on another connection.
    case resend
    /// Written, then the connection failed or the answer did not come in time.
    case fateUnknown(PushTransportError)
    case notSent(PushTransportError)
}

/// A connection's clocks: how long an answer may take, and when a quiet connection is probed with a PING.
package struct PushConnectionTiming: Sendable {
    package var requestTimeout: TimeAmount
    package var pingInterval: TimeAmount
    package var pingTimeout: TimeAmount

    package init(requestTimeout: TimeAmount, pingInterval: TimeAmount, pingTimeout: TimeAmount) {
        self.requestTimeout = requestTimeout
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
    }
}

/// What a connection tells its pool. Always called on the connection's event loop.
package protocol PushConnectionDelegate: AnyObject, Sendable {
    func connection(_ id: Int, finished request: PushWireRequest, result: PushWireResult)
    func connection(_ id: Int, readyWithStreamLimit limit: Int)
    func connection(_ id: Int, streamLimitChanged limit: Int)
    func connection(_ id: Int, goingAway resend: [PushWireRequest])
    func connection(_ id: Int, closed resend: [PushWireRequest], fateUnknown: [PushWireRequest])
}

/// The client side of one HTTP/2 connection to a push service, after `NIOHTTP2Handler` in frame mode: it opens a stream per
/// request (client stream ids are odd and increasing), reads the answers, and keeps the stream count
/// under the server's `SETTINGS_MAX_CONCURRENT_STREAMS`. The bookkeeping that decides between "send
/// again" and "fate unknown" is ``PushConnectionState``; this handler feeds it frames.
///
/// Every stream is one HEADERS and one DATA frame; no per-stream child channels, so a request costs
/// two frame writes and a dictionary entry.
package final class PushConnectionHandler: ChannelDuplexHandler {
    package typealias InboundIn = HTTP2Frame
    package typealias OutboundIn = Never
    package typealias OutboundOut = HTTP2Frame

    package typealias Timing = PushConnectionTiming

    private struct Stream {
        var request: PushWireRequest
        var streamID: HTTP2StreamID
        var deadline: NIODeadline
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?
    }

    let id: Int
    /// The service's name in messages: "APNs", "FCM".
    private let service: String
    private let delegate: any PushConnectionDelegate
    private let timing: Timing
    /// The most streams used even if the server allows more.
    private let streamCap: Int
    private var state: PushConnectionState<UInt64>
    /// The open streams by id: one dictionary, one lookup per frame (the request ids the state machine names are
    /// mapped to streams only when a connection goes away or closes, by ``streamIDs(of:)``).
    private var streams: [HTTP2StreamID: Stream] = [:]
    /// A request handed to this connection while it had no free stream.
    private struct Queued {
        var request: PushWireRequest
        /// ``Timing/requestTimeout`` after the connection took it: time spent waiting here counts, so that a
        /// request queued behind slow streams is not promised the whole timeout again once written.
        var deadline: NIODeadline
    }

    private var waiting = CircularBuffer<Queued>()
    /// The next client stream id (odd, increasing). Tests start it near the end of the ids.
    var nextStreamID = 1
    private var context: ChannelHandlerContext?
    private var seenSettings = false
    /// Times come from the channel's event loop: the system clock, or a test's virtual one.
    private var lastRead = NIODeadline.uptimeNanoseconds(0)
    private var pingSentAt: NIODeadline?
    private var sweep: RepeatedTask?
    private var closeReported = false
    /// In frame mode nothing else reopens the connection window; without it the server stalls after
    /// 64 KiB of answers.
    private let receiveWindow = PushReceiveWindow()

    package init(id: Int, service: String, delegate: any PushConnectionDelegate, initialStreamLimit: Int, streamCap: Int, timing: Timing) {
        self.id = id
        self.service = service
        self.delegate = delegate
        self.timing = timing
        self.streamCap = streamCap
        self.state = PushConnectionState(initialMaxConcurrentStreams: min(initialStreamLimit, streamCap))
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        lastRead = context.eventLoop.now
        let interval = TimeAmount.nanoseconds(min(timing.requestTimeout, timing.pingTimeout, .seconds(1)).nanoseconds / 2)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        sweep = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            handler.value.checkTimers()
        }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        sweep?.cancel()
        sweep = nil
        self.context = nil
    }

    // MARK: Requests from the pool

    /// Takes a request; writes it at once when a stream is free, else queues it here.
    func enqueue(_ request: PushWireRequest) {
        guard !state.isDraining, let context else {
            delegate.connection(id, finished: request, result: .resend)
            return
        }
        waiting.append(Queued(request: request, deadline: context.eventLoop.now + timing.requestTimeout))
        writeWaiting()
    }

    /// Takes many requests at once; they leave in one flush.
    package func enqueue(contentsOf requests: [PushWireRequest]) {
        guard !state.isDraining, let context else {
            for request in requests { delegate.connection(id, finished: request, result: .resend) }
            return
        }
        let deadline = context.eventLoop.now + timing.requestTimeout
        waiting.append(contentsOf: requests.lazy.map { Queued(request: $0, deadline: deadline) })
        writeWaiting()
    }

    /// Gives up the requests among `ids` that wait here for a stream, as not sent: their caller withdrew them (its
    /// task was cancelled). Those already written stay, to be answered or to time out.
    func withdraw(_ ids: Set<UInt64>) {
        guard waiting.contains(where: { ids.contains($0.request.id) }) else { return }
        var kept = CircularBuffer<Queued>(initialCapacity: waiting.count)
        var withdrawn: [PushWireRequest] = []
        while let queued = waiting.popFirst() {
            if ids.contains(queued.request.id) { withdrawn.append(queued.request) } else { kept.append(queued) }
        }
        waiting = kept
        let error = PushTransportError(.cancelled, "the sender was cancelled before the request was written")
        for request in withdrawn { delegate.connection(id, finished: request, result: .notSent(error)) }
    }

    /// Stops taking requests; closes once the open streams are answered.
    func drain() {
        guard let context else { return }
        if !state.isDraining {
            // Everything written stays to be answered; only what waits here goes back.
            returnWaiting(state.goAway(lastStreamID: Int(HTTP2StreamID.maxID)))
        }
        closeIfIdle(context: context)
    }

    private func writeWaiting() {
        guard let context else { return }
        expireWaiting(now: context.eventLoop.now)
        while let queued = waiting.first {
            let request = queued.request
            if nextStreamID > Int(HTTP2StreamID.maxID) - 2 {
                // Stream ids are spent: this connection takes nothing more; the pool opens another.
                returnWaiting(state.goAway(lastStreamID: Int(HTTP2StreamID.maxID)))
                return
            }
            guard state.reserve(request.id) else { return }
            waiting.removeFirst()
            let streamID = HTTP2StreamID(nextStreamID)
            state.written(request.id, streamID: nextStreamID)
            nextStreamID += 2
            streams[streamID] = Stream(request: request, streamID: streamID, deadline: queued.deadline)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: request.headers)))), promise: nil)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
                promise: nil
            )
            // A flush per stream makes NIOHTTP2Handler release this stream's DATA now, in stream order
            // (it releases the streams of one flush in no particular order). Streams then finish in the
            // order they opened, which keeps NIO's per-connection stream table cheap to update; the
            // socket still sees one flush per event-loop tick (``PushFlushCoalescer``).
            context.flush()
        }
    }

    /// Gives back what this connection will never write: the `resend` ids from the state machine and
    /// every queued request.
    private func returnWaiting(_ resend: [UInt64]) {
        var returned: [PushWireRequest] = []
        let streamIDs = streamIDs(of: resend)
        for requestID in resend {
            guard let streamID = streamIDs[requestID], let stream = streams.removeValue(forKey: streamID) else { continue }
            returned.append(stream.request)
        }
        while let queued = waiting.popFirst() { returned.append(queued.request) }
        delegate.connection(id, goingAway: returned)
    }

    // MARK: Frames from the server

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastRead = context.eventLoop.now
        switch frame.payload {
        case .headers(let headers):
            let status = headers.headers.first(name: ":status").flatMap { Int($0) }
            if headers.endStream {
                // The usual answer (APNs' 200): HEADERS that end the stream, one lookup.
                guard var stream = streams.removeValue(forKey: frame.streamID) else { return }
                if let status {
                    stream.status = status
                    stream.headers = headers.headers
                }
                finish(stream)
            } else if let status, let index = streams.index(forKey: frame.streamID) {
                streams.values[index].status = status
                streams.values[index].headers = headers.headers
            }
        case .data(let data):
            guard let index = streams.index(forKey: frame.streamID) else { return }
            if case .byteBuffer(var bytes) = data.data, bytes.readableBytes > 0 {
                if streams.values[index].body == nil {
                    streams.values[index].body = bytes
                } else {
                    streams.values[index].body?.writeBuffer(&bytes)
                }
            }
            if data.endStream { finish(streams.remove(at: index).value) }
        case .rstStream(let code):
            guard let stream = streams.removeValue(forKey: frame.streamID) else { return }
            let requestID = stream.request.id
            switch state.streamReset(requestID, refused: code == .refusedStream) {
            case .resend:
                delegate.connection(id, finished: stream.request, result: .resend)
            case .fateUnknown:
                let error = PushTransportError(.connectionLost, "\(service) reset the stream (\(code)) after the request was written")
                delegate.connection(id, finished: stream.request, result: .fateUnknown(error))
            case .none:
                break
            }
            writeWaiting()
        case .settings(.settings(let settings)):
            var limit: Int? = nil
            for setting in settings where setting.parameter == .maxConcurrentStreams { limit = setting.value }
            if limit == nil && !seenSettings {
                // No limit in the first SETTINGS means unlimited: use our own cap.
                limit = streamCap
            }
            if let limit { state.settingsChanged(maxConcurrentStreams: min(limit, streamCap)) }
            if !seenSettings {
                // The server's first SETTINGS: the connection speaks HTTP/2 (and TLS is up), so it is ready.
                seenSettings = true
                delegate.connection(id, readyWithStreamLimit: state.maxConcurrentStreams)
            } else if limit != nil {
                delegate.connection(id, streamLimitChanged: state.maxConcurrentStreams)
            }
            writeWaiting()
        case .goAway(let lastStreamID, _, _):
            returnWaiting(state.goAway(lastStreamID: Int(lastStreamID)))
            closeIfIdle(context: context)
        case .ping(_, ack: true):
            pingSentAt = nil
        default:
            break
        }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // NIO reports the connection window after every DATA frame, those it dropped included.
        if let event = event as? NIOHTTP2WindowUpdatedEvent, event.streamID == .rootStream, let window = event.inboundWindowSize,
            let increment = receiveWindow.increment(forWindow: window)
        {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    /// Reports the answer of `stream`, taken out of ``streams`` already.
    private func finish(_ stream: Stream) {
        guard let context else { return }
        state.answered(stream.request.id)
        let result: PushWireResult
        if let status = stream.status {
            result = .response(status: status, headers: stream.headers, body: stream.body)
        } else {
            result = .fateUnknown(PushTransportError(.connectionLost, "\(service) ended the stream without a :status"))
        }
        delegate.connection(id, finished: stream.request, result: result)
        writeWaiting()
        closeIfIdle(context: context)
    }

    /// The streams of the requests `requestIDs` (those still open): for the state machine's lists, which name
    /// requests, when the connection goes away or closes.
    private func streamIDs(of requestIDs: [UInt64]) -> [UInt64: HTTP2StreamID] {
        guard !requestIDs.isEmpty else { return [:] }
        var byRequest: [UInt64: HTTP2StreamID] = [:]
        byRequest.reserveCapacity(streams.count)
        for (streamID, stream) in streams { byRequest[stream.request.id] = streamID }
        return byRequest
    }

    private func closeIfIdle(context: ChannelHandlerContext) {
        if state.isDraining && state.inFlight == 0 && waiting.isEmpty {
            context.close(promise: nil)
        }
    }

    // MARK: Timeouts and health

    /// Fails the queued requests whose deadline passed before a stream was free: never written, so not sent.
    private func expireWaiting(now: NIODeadline) {
        // One timeout for all, taken in order: the oldest deadline is first.
        while let queued = waiting.first, queued.deadline <= now {
            waiting.removeFirst()
            let error = PushTransportError(
                .timedOut,
                "no free stream on the \(service) connection within \(timing.requestTimeout.nanoseconds / 1_000_000) ms"
            )
            delegate.connection(id, finished: queued.request, result: .notSent(error))
        }
    }

    private func checkTimers() {
        guard let context else { return }
        let now = context.eventLoop.now
        expireWaiting(now: now)
        var expired: [HTTP2StreamID] = []
        for (streamID, stream) in streams where stream.deadline <= now { expired.append(streamID) }
        for streamID in expired {
            guard let stream = streams.removeValue(forKey: streamID) else { continue }
            context.write(wrapOutboundOut(HTTP2Frame(streamID: stream.streamID, payload: .rstStream(.cancel))), promise: nil)
            _ = state.streamReset(stream.request.id, refused: false)
            let error = PushTransportError(.timedOut, "no answer from \(service) within \(timing.requestTimeout.nanoseconds / 1_000_000) ms")
            delegate.connection(id, finished: stream.request, result: .fateUnknown(error))
        }
        if !expired.isEmpty { writeWaiting() }
        if let pingSentAt {
            if now - pingSentAt > timing.pingTimeout {
                // No PING ACK: the connection is dead even if TCP has not noticed.
                context.close(promise: nil)
                return
            }
        } else if now - lastRead > timing.pingInterval {
            pingSentAt = now
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 0), ack: false))), promise: nil)
        }
        // The RST_STREAMs and the PING above; the socket write is coalesced like every other flush.
        context.flush()
        closeIfIdle(context: context)
    }

    // MARK: Connection end

    package func channelInactive(context: ChannelHandlerContext) {
        reportClosed()
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOHTTP2Errors.StreamError {
            // One stream failed; the timeout sweep reports it if no answer follows.
            return
        }
        context.close(promise: nil)
    }

    private func reportClosed() {
        guard !closeReported else { return }
        closeReported = true
        let (resendIDs, unknownIDs) = state.closed()
        var resend: [PushWireRequest] = []
        var unknown: [PushWireRequest] = []
        let streamIDs = streamIDs(of: resendIDs + unknownIDs)
        for requestID in resendIDs {
            if let streamID = streamIDs[requestID], let stream = streams.removeValue(forKey: streamID) { resend.append(stream.request) }
        }
        for requestID in unknownIDs {
            if let streamID = streamIDs[requestID], let stream = streams.removeValue(forKey: streamID) { unknown.append(stream.request) }
        }
        while let queued = waiting.popFirst() { resend.append(queued.request) }
        streams.removeAll()
        delegate.connection(id, closed: resend, fateUnknown: unknown)
    }
}

/// Sits between the socket and NIOHTTP2Handler and turns many flushes in one event-loop tick into one
/// socket write.
final class PushFlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    private var flushScheduled = false

    func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let coalescer = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (coalescer, context) = coalescer.value
            coalescer.flushScheduled = false
            context.flush()
        }
    }
}
