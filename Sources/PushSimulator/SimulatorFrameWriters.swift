import NIOCore
import NIOHTTP2

/// Sends the simulator's GOAWAY as raw bytes beneath NIOHTTP2Handler.
///
/// Had NIOHTTP2Handler sent it, NIO would treat DATA the client wrote on streams above the last stream id, before it
/// saw the GOAWAY, as a connection error and stop reading, leaving the bodies of streams within the last id unread
/// behind them. APNs and FCM drop such frames, as RFC 9113 §6.8 allows; the connection ignores those streams.
package final class SimulatorGoAwayWriter: ChannelOutboundHandler, RemovableChannelHandler {
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?

    package init() {}

    package func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    package func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// - Returns: when the frame is written; nil outside a pipeline, when nothing is written.
    @discardableResult
    package func writeGoAway(lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode) -> EventLoopFuture<Void>? {
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
/// ``placeholder``, the value NIOHTTP2Handler was configured with, then steps aside. NIO enforces its own value with a
/// connection error; this way the client sees the real limit and the connection enforces it as the simulator says
/// (``SimulatorHTTP2Settings/StreamLimitEnforcement``).
package final class SimulatorStreamLimitAdvertiser: ChannelOutboundHandler, RemovableChannelHandler {
    package typealias OutboundIn = IOData
    package typealias OutboundOut = IOData

    package static let placeholder = (1 << 31) - 2
    private let maxConcurrentStreams: Int

    package init(maxConcurrentStreams: Int) {
        self.maxConcurrentStreams = maxConcurrentStreams
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
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

/// Removes the client's RST_STREAM frames before NIOHTTP2Handler sees them, for late answers
/// (``SimulatorHTTP2Settings/lateAnswerBodyBytes``): NIO still thinks the stream open and lets the simulator answer
/// it, with flow control accounted as for any answer. Frames are parsed only for their 9-byte headers; everything
/// else passes through unchanged.
package final class SimulatorResetStreamHider: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    private let onReset: (HTTP2StreamID) -> Void
    private var pending: ByteBuffer?
    /// The client's connection preface (`PRI * HTTP/2.0…`) comes before the first frame.
    private var prefaceLeft = 24

    /// - Parameter onReset: told of each stream the client reset.
    package init(onReset: @escaping (HTTP2StreamID) -> Void) {
        self.onReset = onReset
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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
                onReset(HTTP2StreamID(Int(streamID)))
            } else {
                out.writeBuffer(&frame)
            }
        }
        if buffer.readableBytes > 0 { pending = buffer }
        if out.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(out)) }
    }
}
