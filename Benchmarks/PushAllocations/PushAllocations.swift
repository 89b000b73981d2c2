import APNs
import Benchmark
import FCM
import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import PushTransport

// Allocations per request of the push clients, counted by package-benchmark (its malloc interposer) and held by the
// thresholds in Benchmarks/Thresholds: `swift package benchmark thresholds check --target PushAllocations` fails on
// more allocations than recorded there (CI runs it; see README "Benchmarks").
//
// Every benchmark is deterministic: no sockets, no threads, no clocks. The connection benchmarks run the client's
// pipeline as the pool builds it (`PushConnectionPool.addHTTP2Handlers`, then PushConnectionHandler)
// over an in-memory channel, against a NIOHTTP2 server in another in-memory channel that answers each request with
// APNs's 200; the bytes are carried between the two by hand. So a count is the same on every run and every machine
// with the same toolchain and packages, and a change that adds an allocation per request moves it by 1,000.
//
// The server's own allocations are in both connection counts; "NIOHTTP2Server" counts them alone (the client's bytes of
// an exchange replayed to a new server), so the client's are the difference. "NIOHTTP2Client" is the exchange with a
// client handler that only writes each request's frames: the floor that PushConnectionHandler adds to.

let requestsPerRun = 1_000
/// As a broadcast hands them to a connection: the pool's batches of 250 split over connections.
let batch = 100

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal],
        warmupIterations: 2,
        maxDuration: .seconds(10),
        maxIterations: 20,
        // Deterministic counts: 1 % of slack (10 allocations a run of 1,000) covers a package update's noise, not one
        // more allocation per request.
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 1.0], absolute: [.p90: 10])]
    )

    Benchmark("APNsRequests") { benchmark in
        let provider = APNsProvider(configuration: .init(endpoint: .production), tokens: FixedProviderToken())
        let deliveries = apnsDeliveries()
        benchmark.startMeasurement()
        blackHole(provider.requests(for: deliveries, credential: providerToken))
    }

    Benchmark("FCMRequests") { benchmark in
        let provider = FCMProvider(configuration: .init(), projectID: "paperboy-bench", tokens: FixedAccessToken())
        let message = try! FCMMessage.data(
            ["edition": "2026-12-05-morning"],
            for: .android(priority: .normal, ttl: .seconds(3600), collapseKey: "daily-paper")
        )
        let deliveries = (0..<requestsPerRun).map { FCMDelivery(message, to: fcmToken($0)) }
        benchmark.startMeasurement()
        blackHole(provider.requests(for: deliveries, credential: "ya29.bench-access-token"))
    }

    // The connection as the pool builds it, and NIOHTTP2's client alone on the same exchange.
    for (name, client) in [("APNsConnection", Exchange.Client.pushConnection), ("NIOHTTP2Client", .bare)] {
        Benchmark(name) { benchmark in
            let requests = apnsRequests()
            let exchange = try! Exchange(client: client)
            benchmark.startMeasurement()
            exchange.run(requests)
            benchmark.stopMeasurement()
            precondition(exchange.answered == requestsPerRun, "\(exchange.answered) of \(requestsPerRun) answered")
        }
    }

    Benchmark("NIOHTTP2Server") { benchmark in
        // The client's bytes of an exchange, replayed in the same chunks to a new server: what the server side of
        // the two connection counts allocates.
        let exchange = try! Exchange(client: .bare, keepingSent: true)
        exchange.run(apnsRequests())
        let server = try! Exchange.server()
        benchmark.startMeasurement()
        for bytes in exchange.sent {
            try! server.writeInbound(bytes)
            server.embeddedEventLoop.run()
            while try! server.readOutbound(as: IOData.self) != nil {}
        }
        benchmark.stopMeasurement()
    }
}

// MARK: Requests

let providerToken = "eyJhbGciOiJFUzI1NiIsImtpZCI6IkJFTkNIS0VZMDEifQ.eyJpc3MiOiJCRU5DSFRFQU0xIiwiaWF0IjoxNzY0OTA4MDAwfQ.c2lnbmF0dXJl"

struct FixedProviderToken: APNsProviderTokenSource {
    func current() throws -> String { providerToken }
    func rejected(_ token: String) {}
    var keyID: String { "BENCHKEY01" }
}

struct FixedAccessToken: FCMAccessTokenSource {
    func current() async throws(FCMAuthError) -> String { "ya29.bench-access-token" }
    func rejected(_ token: String) async {}
}

func apnsDeliveries() -> [APNsDelivery] {
    let notification = try! APNsNotification.background(appKeysJSON: Data(#"{"edition":"2026-12-05-morning"}"#.utf8))
    return (0..<requestsPerRun).map { APNsDelivery(notification, to: apnsToken($0), topic: "com.example.paperboy") }
}

func apnsRequests() -> [PushRequest] {
    let provider = APNsProvider(configuration: .init(endpoint: .production), tokens: FixedProviderToken())
    return provider.requests(for: apnsDeliveries(), credential: providerToken)
}

/// 64 hex digits, distinct per index.
func apnsToken(_ index: Int) -> String {
    let hex = String(index, radix: 16)
    return String(repeating: "a", count: 64 - hex.count) + hex
}

/// 163 characters, as FCM's registration tokens.
func fcmToken(_ index: Int) -> String {
    let id = String(index, radix: 16)
    return "b" + String(repeating: "0", count: 21 - id.count) + id + ":APA91b" + String(repeating: "x", count: 134)
}

// MARK: The exchange

/// A client pipeline and a server pipeline on in-memory channels, with the bytes carried between them by ``pump()``.
final class Exchange {
    enum Client {
        /// As ``PushConnectionPool`` builds a connection.
        case pushConnection
        /// NIOHTTP2Handler with a handler that writes each request's two frames and counts the answers.
        case bare
    }

    let client = EmbeddedChannel()
    let server: EmbeddedChannel
    /// What the client wrote, in the chunks the server read, when the exchange was made to keep it.
    private(set) var sent: [ByteBuffer] = []
    private let keepsSent: Bool
    private let recorder = Recorder()
    private var connection: PushConnectionHandler?
    private var bare: BareClient?
    private var nextID: UInt64 = 0

    var answered: Int { connection == nil ? bare!.answered : recorder.finished }

    init(client kind: Client, keepingSent: Bool = false) throws {
        keepsSent = keepingSent
        let pipeline = client.pipeline.syncOperations
        try PushConnectionPool.addHTTP2Handlers(to: pipeline, streamCap: 1000)
        switch kind {
        case .pushConnection:
            let handler = PushConnectionHandler(
                id: 1,
                service: "APNs",
                delegate: recorder,
                initialStreamLimit: 1,
                streamCap: 1000,
                timing: .init(requestTimeout: .seconds(10), pingInterval: .seconds(60), pingTimeout: .seconds(10))
            )
            try pipeline.addHandler(handler)
            connection = handler
        case .bare:
            let handler = BareClient()
            try pipeline.addHandler(handler)
            bare = handler
        }
        server = try Self.server()
        try client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        pump()
        precondition(connection == nil || recorder.ready, "the connection never saw the server's SETTINGS")
    }

    /// A connected server channel: NIOHTTP2Handler and a handler that answers every request as APNs does.
    static func server() throws -> EmbeddedChannel {
        let server = EmbeddedChannel()
        try server.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server))
        try server.pipeline.syncOperations.addHandler(Answerer())
        try server.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 50000)).wait()
        return server
    }

    /// Hands the requests over in batches, as the pool does, and carries bytes until every answer is in.
    func run(_ requests: [PushRequest]) {
        for start in stride(from: 0, to: requests.count, by: batch) {
            let slice = requests[start..<min(start + batch, requests.count)]
            if let connection {
                connection.enqueue(
                    contentsOf: slice.map { request in
                        nextID += 1
                        return PushWireRequest(id: nextID, headers: request.headers, body: request.body, enqueuedAt: .uptimeNanoseconds(0)) { _ in }
                    }
                )
            } else {
                bare!.send(Array(slice))
            }
            pump()
        }
    }

    /// Carries bytes both ways until neither side has any to send.
    func pump() {
        while true {
            client.embeddedEventLoop.run()
            var moved = false
            while let bytes = try! client.readOutbound(as: IOData.self) {
                guard case .byteBuffer(let buffer) = bytes else { fatalError("a file region on an HTTP/2 connection") }
                if keepsSent { sent.append(buffer) }
                try! server.writeInbound(buffer)
                moved = true
            }
            server.embeddedEventLoop.run()
            while let bytes = try! server.readOutbound(as: IOData.self) {
                guard case .byteBuffer(let buffer) = bytes else { fatalError("a file region on an HTTP/2 connection") }
                try! client.writeInbound(buffer)
                moved = true
            }
            if !moved { return }
        }
    }
}

/// What the pool would be told: the answers are counted, nothing else is kept.
final class Recorder: PushConnectionDelegate, @unchecked Sendable {
    var finished = 0
    var ready = false

    func connection(_ id: Int, finished request: PushWireRequest, result: PushWireResult) {
        guard case .response(200, _, _) = result else { fatalError("a request ended as \(result)") }
        finished += 1
    }
    func connection(_ id: Int, readyWithStreamLimit limit: Int) { ready = true }
    func connection(_ id: Int, streamLimitChanged limit: Int) {}
    func connection(_ id: Int, goingAway resend: [PushWireRequest]) { fatalError("GOAWAY") }
    func connection(_ id: Int, closed resend: [PushWireRequest], fateUnknown: [PushWireRequest]) {}
}

/// The floor: each request's HEADERS and DATA written on the next stream, one flush per batch; answers counted.
final class BareClient: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var context: ChannelHandlerContext?
    private var nextStreamID = 1
    var answered = 0

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func send(_ requests: [PushRequest]) {
        guard let context else { return }
        for request in requests {
            let streamID = HTTP2StreamID(nextStreamID)
            nextStreamID += 2
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: request.headers)))), promise: nil)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
                promise: nil
            )
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .headers(let headers) = unwrapInboundIn(data).payload, headers.endStream { answered += 1 }
    }
}

/// APNs's usual answer to every request: HEADERS with `:status` 200 and an `apns-id`, ending the stream.
final class Answerer: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let answer = HPACKHeaders([(":status", "200"), ("apns-id", "6C3C4B1E-0000-4000-8000-000000000001")])

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if case .data(let data) = frame.payload, data.endStream {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .headers(.init(headers: answer, endStream: true)))),
                promise: nil
            )
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }
}
