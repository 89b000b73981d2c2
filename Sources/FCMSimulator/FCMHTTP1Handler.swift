import NIOCore
import NIOHTTP1

/// One HTTP/1.1 connection of the simulator (token endpoint, control, and sends from HTTP/1.1 clients such as
/// the Python Admin SDK): gathers each request, answers it through ``FCMSimulator/handle(_:)``, keeps the
/// connection alive as the client asks. NIO's server pipeline answers requests one at a time, in order.
final class FCMHTTP1Handler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let simulator: FCMSimulator
    /// The connection's number in the ledger.
    private let connection: Int
    private var request: FCMSimulatorRequest?
    private var keepAlive = true
    private var version = HTTPVersion.http1_1

    init(simulator: FCMSimulator, connection: Int) {
        self.simulator = simulator
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            var request = FCMSimulatorRequest(method: head.method.rawValue, path: head.uri, body: context.channel.allocator.buffer(capacity: 0))
            request.connection = connection
            for (name, value) in head.headers { request.add(header: name, value: value) }
            self.request = request
            keepAlive = head.isKeepAlive
            version = head.version
        case .body(var bytes):
            request?.append(body: &bytes)
        case .end:
            guard let request else { return }
            self.request = nil
            let response = simulator.handle(request)
            if response.delay > .zero {
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: TimeAmount(response.delay)) {
                    let (handler, context) = loopBound.value
                    handler.respond(response, context: context)
                }
            } else {
                respond(response, context: context)
            }
        }
    }

    private func respond(_ response: FCMSimulatorResponse, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var body = context.channel.allocator.buffer(capacity: response.body.utf8.count)
        body.writeString(response.body)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: response.contentType)
        headers.add(name: "content-length", value: String(body.readableBytes))
        if let retryAfter = response.retryAfter { headers.add(name: "retry-after", value: String(retryAfter)) }
        if !keepAlive { headers.add(name: "connection", value: "close") }
        let head = HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
        }
    }
}
