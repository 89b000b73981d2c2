import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Synchronization
import Testing

@testable import APNs

/// The connection handler on HTTP/2 frames, without sockets or NIOHTTP2Handler: what it writes and what
/// it tells its pool.
@Suite("Connection handler")
struct APNsConnectionHandlerTests {
    /// Records what the handler reports, by request id.
    final class Recorder: APNsConnectionDelegate {
        let results = Mutex<[UInt64: APNsWireResult]>([:])

        func connection(_ id: Int, finished request: APNsWireRequest, result: APNsWireResult) {
            results.withLock { $0[request.id] = result }
        }
        func connection(_ id: Int, readyWithStreamLimit limit: Int) {}
        func connection(_ id: Int, streamLimitChanged limit: Int) {}
        func connection(_ id: Int, goingAway resend: [APNsWireRequest]) {}
        func connection(_ id: Int, closed resend: [APNsWireRequest], fateUnknown: [APNsWireRequest]) {}
    }

    static func request(_ id: UInt64) -> APNsWireRequest {
        APNsWireRequest(id: id, headers: HPACKHeaders([(":method", "POST")]), body: ByteBuffer(string: "{}"), enqueuedAt: .now()) { _ in }
    }

    static func connect(_ recorder: Recorder, requestTimeout: TimeAmount = .seconds(10)) throws -> (EmbeddedChannel, APNsConnectionHandler) {
        let handler = APNsConnectionHandler(
            id: 1,
            delegate: recorder,
            initialStreamLimit: 1,
            streamCap: 10,
            timing: .init(requestTimeout: requestTimeout, pingInterval: .seconds(60), pingTimeout: .seconds(10))
        )
        let channel = EmbeddedChannel(handler: handler)
        return (channel, handler)
    }

    static func outbound(_ channel: EmbeddedChannel) throws -> [HTTP2Frame] {
        var frames: [HTTP2Frame] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) { frames.append(frame) }
        return frames
    }

    @Test("a request queued behind a busy stream gets the request timeout from when it was queued, and fails as not sent")
    func queuedRequestDeadline() throws {
        let recorder = Recorder()
        let (channel, handler) = try Self.connect(recorder, requestTimeout: .milliseconds(200))
        handler.enqueue(contentsOf: [Self.request(1), Self.request(2)])
        let written = try Self.outbound(channel).filter { if case .headers = $0.payload { true } else { false } }.map(\.streamID)
        #expect(written == [HTTP2StreamID(1)], "one stream allowed: the second request waits on the connection")
        Thread.sleep(forTimeInterval: 0.3)
        // Runs the timeout sweep.
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

    @Test("the window policy gives back what was used once half the window is gone")
    func windowPolicy() {
        let window = APNsReceiveWindow()
        #expect(window.increment(forWindow: 65_535) == nil)
        #expect(window.increment(forWindow: 32_768) == nil)
        #expect(window.increment(forWindow: 32_767) == 32_768)
        #expect(window.increment(forWindow: 0) == 65_535)
    }
}
