import NIOCore
import NIOHTTP1
import NIOHTTP2

/// Tells HTTP/2 with prior knowledge from HTTP/1.1 by the client's first bytes (the HTTP/2 connection preface,
/// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, cannot start an HTTP/1.1 request), sets up that protocol's handlers and
/// steps aside, passing on what it read.
final class FCMProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private let simulator: FCMSimulator
    /// The connection's number in the ledger.
    private let connection: Int
    private var buffered: ByteBuffer?

    init(simulator: FCMSimulator, connection: Int) {
        self.simulator = simulator
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if buffered == nil {
            buffered = bytes
        } else {
            buffered!.writeBuffer(&bytes)
        }
        let seen = buffered!.readableBytesView
        let compared = min(seen.count, Self.preface.count)
        let isHTTP2 = seen.prefix(compared).elementsEqual(Self.preface.prefix(compared))
        // Wait for the whole preface before deciding for HTTP/2; one differing byte decides for HTTP/1.1.
        if isHTTP2 && compared < Self.preface.count { return }
        do {
            let sync = context.pipeline.syncOperations
            if isHTTP2 {
                try FCMHTTP2Streams.configure(context.channel, simulator: simulator, connection: connection)
            } else {
                try sync.configureHTTPServerPipeline(withErrorHandling: true)
                try sync.addHandler(FCMHTTP1Handler(simulator: simulator, connection: connection))
                simulator.http1ConnectionOpened()
            }
        } catch {
            context.close(promise: nil)
            return
        }
        let pending = buffered!
        buffered = nil
        context.fireChannelRead(wrapInboundOut(pending))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
