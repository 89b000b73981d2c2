import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request is not read in full within `limit` of its head: a body trickled a byte at a
/// time (slow POST) holds a connection no longer than that, however steadily it trickles. The idle timeout
/// (``APIConfiguration/idleTimeout``) closes a connection that sends nothing; this one a connection that sends too
/// slowly. Placed after NIO's HTTP decoding in each listener's pipeline (``paperboyServer(tls:trustedProxies:idleTimeout:bodyTimeout:)``);
/// an answer being written (a live stream) is not reading, and is not limited.
final class RequestReadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let limit: TimeAmount
    private var deadline: Scheduled<Void>?

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: limit) {
                loopBound.value.close(promise: nil)
            }
        case .body:
            break
        case .end:
            deadline?.cancel()
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}
