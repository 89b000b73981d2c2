import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Synchronization
import Testing

@testable import PushTransport

/// The connection handler on HTTP/2 frames, without sockets or NIOHTTP2Handler: what it writes and what
/// it tells its pool.
@Suite("Connection handler")
struct PushConnectionHandlerTests {
    /// Records what the handler tells its pool, by request id.
    final class Recorder: PushConnectionDelegate {
        let results = Mutex<[UInt64: PushWireResult]>([:])
        let ready = Mutex<[Int]>([])
        let goingAway = Mutex<[[UInt64]]>([])
        let closed = Mutex<[(resend: [UInt64], fateUnknown: [UInt64])]>([])

        func connection(_ id: Int, finished request: PushWireRequest, result: PushWireResult) {
            results.withLock { $0[request.id] = result }
        }
        func connection(_ id: Int, readyWithStreamLimit limit: Int) {
            ready.withLock { $0.append(limit) }
        }
        func connection(_ id: Int, streamLimitChanged limit: Int) {}
        func connection(_ id: Int, goingAway resend: [PushWireRequest]) {
            goingAway.withLock { $0.append(resend.map(\.id)) }
        }
        func connection(_ id: Int, closed resend: [PushWireRequest], fateUnknown: [PushWireRequest]) {
            closed.withLock { $0.append((resend.map(\.id), fateUnknown.map(\.id))) }
        }

        func status(of request: UInt64) -> Int? {
            guard case .response(let status, _, _) = results.withLock({ $0[request] }) else { return nil }
            return status
        }
    }

    static func request(_ id: UInt64) -> PushWireRequest {
        PushWireRequest(id: id, headers: HPACKHeaders([(":method", "POST")]), body: ByteBuffer(string: "{}"), enqueuedAt: .now()) { _ in }
    }

    static func connect(
        _ recorder: Recorder,
        requestTimeout: TimeAmount = .seconds(10),
        pingInterval: TimeAmount = .seconds(60),
        pingTimeout: TimeAmount = .seconds(10)
    ) throws -> (EmbeddedChannel, PushConnectionHandler) {
        let handler = PushConnectionHandler(
            id: 1,
            service: "APNs",
            delegate: recorder,
            initialStreamLimit: 1,
            streamCap: 10,
            timing: .init(requestTimeout: requestTimeout, pingInterval: pingInterval, pingTimeout: pingTimeout)
        )
        let channel = EmbeddedChannel(handler: handler)
        return (channel, handler)
    }

    /// A connected channel whose server allowed `streams` concurrent streams.
    static func ready(
        _ recorder: Recorder,
        streams: Int = 10,
        pingInterval: TimeAmount = .seconds(60),
        pingTimeout: TimeAmount = .seconds(10)
    ) throws -> (EmbeddedChannel, PushConnectionHandler) {
        let (channel, handler) = try connect(recorder, pingInterval: pingInterval, pingTimeout: pingTimeout)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 2197)).wait()
        let settings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: streams)]
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings))))
        return (channel, handler)
    }

    static func outbound(_ channel: EmbeddedChannel) throws -> [HTTP2Frame] {
        var frames: [HTTP2Frame] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) { frames.append(frame) }
        return frames
    }

    /// The streams whose HEADERS the handler wrote.
    static func opened(_ channel: EmbeddedChannel) throws -> [HTTP2StreamID] {
        try outbound(channel).filter { if case .headers = $0.payload { true } else { false } }.map(\.streamID)
    }

    /// The server's answer on `stream`: a 200 in one HEADERS frame.
    static func answer(_ channel: EmbeddedChannel, _ stream: HTTP2StreamID) throws {
        let headers = HPACKHeaders([(":status", "200"), ("apns-id", "00000000-0000-0000-0000-00000000000\(stream)")])
        try channel.writeInbound(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers, endStream: true))))
    }

    @Test("a request queued behind a busy stream gets the request timeout from when it was queued, and fails as not sent")
    func queuedRequestDeadline() throws {
        let recorder = Recorder()
        let (channel, handler) = try Self.connect(recorder, requestTimeout: .milliseconds(200))
        handler.enqueue(contentsOf: [Self.request(1), Self.request(2)])
        let written = try Self.outbound(channel).filter { if case .headers = $0.payload { true } else { false } }.map(\.streamID)
        #expect(written == [HTTP2StreamID(1)], "one stream allowed: the second request waits on the connection")
        // Runs the timeout sweep, on the event loop's clock.
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        let results = recorder.results.withLock { $0 }
        guard case .fateUnknown(let first) = results[1], case .notSent(let second) = results[2] else {
            Issue.record("\(results)")
            return
        }
        #expect(first.code == .timedOut)
        #expect(second.code == .timedOut)
        let later = try Self.outbound(channel).filter { if case .headers = $0.payload { true } else { false } }
        #expect(later.isEmpty, "the queued request was written after its deadline: \(later)")
        _ = try? channel.finish()
    }

    @Test("withdrawing gives up the requests waiting for a stream at once, as not sent; the written one is still answered")
    func withdrawQueued() throws {
        let recorder = Recorder()
        let (channel, handler) = try Self.ready(recorder, streams: 1)
        handler.enqueue(contentsOf: [Self.request(1), Self.request(2), Self.request(3)])
        #expect(try Self.opened(channel) == [HTTP2StreamID(1)])
        handler.withdraw([1, 2])
        let results = recorder.results.withLock { $0 }
        guard case .notSent(let error) = results[2] else {
            Issue.record("\(results)")
            return
        }
        #expect(error.code == .cancelled)
        #expect(results[1] == nil, "written: its fate is the server's answer, not the withdrawal")
        #expect(results[3] == nil, "not withdrawn: it waits on")
        try Self.answer(channel, 1)
        #expect(recorder.status(of: 1) == 200)
        #expect(try Self.opened(channel) == [HTTP2StreamID(3)], "the freed stream goes to the request still wanted")
        _ = try? channel.finish()
    }

    @Test("the connection window is reopened from the window NIO reports, which counts frames NIO dropped")
    func windowFromEvents() throws {
        let recorder = Recorder()
        let (channel, _) = try Self.connect(recorder)
        // 16 KB dropped by NIO for a reset stream: no DATA frame reaches the handler, only the event.
        channel.pipeline.fireUserInboundEventTriggered(
            NIOHTTP2WindowUpdatedEvent(streamID: .rootStream, inboundWindowSize: 49_535, outboundWindowSize: 65_535)
        )
        channel.flush()
        #expect(try Self.outbound(channel).isEmpty, "more than half the window is open")
        channel.pipeline.fireUserInboundEventTriggered(
            NIOHTTP2WindowUpdatedEvent(streamID: .rootStream, inboundWindowSize: 17_535, outboundWindowSize: 65_535)
        )
        channel.flush()
        let frames = try Self.outbound(channel)
        guard frames.count == 1, case .windowUpdate(let increment) = frames[0].payload else {
            Issue.record("\(frames)")
            return
        }
        #expect(frames[0].streamID == .rootStream)
        #expect(increment == 48_000)
        _ = try? channel.finish()
    }

    @Test("GOAWAY: streams above the last stream id come back to be sent again, the others are answered, then the connection closes")
    func goAwayWithStreamsInFlight() throws {
        let recorder = Recorder()
        let (channel, handler) = try Self.ready(recorder, streams: 3)
        #expect(recorder.ready.withLock { $0 } == [3])
        handler.enqueue(contentsOf: (1...4).map { Self.request($0) })
        #expect(try Self.opened(channel) == [1, 3, 5], "three streams allowed: request 4 waits on the connection")
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: 3, errorCode: .noError, opaqueData: nil)))
        #expect(recorder.goingAway.withLock { $0 }.map { Set($0) } == [[3, 4]], "stream 5 and the waiting request were not processed")
        #expect(channel.isActive, "streams 1 and 3 may still be answered")
        handler.enqueue(Self.request(5))
        guard case .resend = recorder.results.withLock({ $0[5] }) else {
            Issue.record("a request handed to a connection going away must come back to be sent again")
            return
        }
        try Self.answer(channel, 1)
        #expect(recorder.status(of: 1) == 200)
        #expect(channel.isActive)
        try Self.answer(channel, 3)
        #expect(recorder.status(of: 2) == 200)
        #expect(!channel.isActive, "closed once the streams below the last stream id are answered")
        let closed = recorder.closed.withLock { $0 }
        #expect(closed.count == 1)
        #expect(closed.first?.resend == [])
        #expect(closed.first?.fateUnknown == [])
        #expect(try Self.opened(channel).isEmpty, "nothing was written after GOAWAY")
    }

    @Test("stream ids running out: the connection takes nothing more, gives the rest back and closes when its streams are answered")
    func streamIDsRunOut() throws {
        let recorder = Recorder()
        let (channel, handler) = try Self.ready(recorder)
        handler.nextStreamID = Int(HTTP2StreamID.maxID) - 2
        handler.enqueue(contentsOf: [Self.request(1), Self.request(2)])
        #expect(try Self.opened(channel) == [HTTP2StreamID(Int(HTTP2StreamID.maxID) - 2)])
        #expect(recorder.goingAway.withLock { $0 } == [[2]], "no stream id left for request 2")
        handler.enqueue(Self.request(3))
        guard case .resend = recorder.results.withLock({ $0[3] }) else {
            Issue.record("a request after the ids ran out must come back to be sent again")
            return
        }
        #expect(channel.isActive)
        try Self.answer(channel, HTTP2StreamID(Int(HTTP2StreamID.maxID) - 2))
        #expect(recorder.status(of: 1) == 200)
        #expect(!channel.isActive)
    }

    @Test("an idle connection is checked with a PING; no ACK within the PING timeout closes it, its written request's fate unknown")
    func pingTimeout() throws {
        let recorder = Recorder()
        let (channel, handler) = try Self.ready(recorder, pingInterval: .seconds(1), pingTimeout: .seconds(1))
        handler.enqueue(Self.request(1))
        #expect(try Self.opened(channel) == [1])
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_500))
        let pings = try Self.outbound(channel).filter { if case .ping(_, ack: false) = $0.payload { true } else { false } }
        #expect(pings.count == 1, "quiet for longer than the PING interval")
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_500))
        #expect(!channel.isActive, "no PING ACK within the PING timeout")
        let closed = recorder.closed.withLock { $0 }
        #expect(closed.first?.resend == [])
        #expect(closed.first?.fateUnknown == [1], "written and unanswered: its fate is unknown")
    }

    @Test("a PING ACK keeps the connection open")
    func pingAnswered() throws {
        let recorder = Recorder()
        let (channel, _) = try Self.ready(recorder, pingInterval: .seconds(1), pingTimeout: .seconds(1))
        for _ in 0..<3 {
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_500))
            let ping = try Self.outbound(channel).first { if case .ping(_, ack: false) = $0.payload { true } else { false } }
            guard case .ping(let data, _) = ping?.payload else {
                Issue.record("no PING")
                return
            }
            try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .ping(data, ack: true)))
        }
        #expect(channel.isActive)
        #expect(recorder.closed.withLock { $0 }.isEmpty)
        _ = try? channel.finish()
    }

    @Test("the window policy gives back what was used once half the window is gone")
    func windowPolicy() {
        let window = PushReceiveWindow()
        #expect(window.increment(forWindow: 65_535) == nil)
        #expect(window.increment(forWindow: 32_768) == nil)
        #expect(window.increment(forWindow: 32_767) == 32_768)
        #expect(window.increment(forWindow: 0) == 65_535)
    }
}
