import NIOCore
import NIOHPACK
import NIOPosix

/// An HTTP/2 client on raw bytes, for what well-behaved clients (NIO's buffers streams beyond the server's limit)
/// never do: open more streams than SETTINGS_MAX_CONCURRENT_STREAMS allows.
final class RawHTTP2Client {
    struct Frame: Equatable {
        enum Kind: Equatable {
            /// HEADERS with this `:status`.
            case headers(String)
            case data
            /// RST_STREAM with this error code.
            case reset(UInt32)
            case goAway(lastStream: Int, error: UInt32)
            case settings
            case other(UInt8)
        }

        var stream: Int
        var kind: Kind
    }

    /// Frames to write, built in order.
    struct Frames {
        fileprivate var buffer = ByteBuffer()
        fileprivate var encoder = HPACKEncoder(allocator: .init())

        mutating func headers(stream: Int, token: String, port: Int, endStream: Bool) {
            let headers: HPACKHeaders = [
                ":method": "POST", ":scheme": "http", ":authority": "127.0.0.1:\(port)",
                ":path": "/v1/projects/\(SimulatorFixture.projectID)/messages:send", "content-type": "application/json",
                "authorization": "Bearer \(token)",
            ]
            var block = ByteBuffer()
            try! encoder.encode(headers: headers, to: &block)
            // END_HEADERS (0x4), plus END_STREAM (0x1).
            frame(type: 1, flags: endStream ? 0x5 : 0x4, stream: stream, payload: block)
        }

        mutating func data(stream: Int, _ body: String) {
            frame(type: 0, flags: 0x1, stream: stream, payload: ByteBuffer(string: body))
        }

        mutating func frame(type: UInt8, flags: UInt8, stream: Int, payload: ByteBuffer) {
            let length = payload.readableBytes
            buffer.writeBytes([UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags])
            buffer.writeInteger(UInt32(stream))
            var payload = payload
            buffer.writeBuffer(&payload)
        }
    }

    private let channel: any Channel
    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var pending = ByteBuffer()
    private var decoder = HPACKDecoder(allocator: .init())
    private(set) var closed = false

    private init(channel: any Channel, inbound: NIOAsyncChannelInboundStream<ByteBuffer>) {
        self.channel = channel
        self.inbound = inbound.makeAsyncIterator()
    }

    /// Connects, exchanges the prefaces, acknowledges the server's SETTINGS and runs `body`; the connection is
    /// closed after it.
    static func with<Result>(port: Int, _ body: (RawHTTP2Client) async throws -> Result) async throws -> Result {
        let asyncChannel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        return try await asyncChannel.executeThenClose { inbound, _ in
            let client = RawHTTP2Client(channel: asyncChannel.channel, inbound: inbound)
            var hello = ByteBuffer(string: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            var frames = Frames()
            frames.frame(type: 4, flags: 0, stream: 0, payload: ByteBuffer())
            hello.writeBuffer(&frames.buffer)
            try await client.channel.writeAndFlush(hello)
            while true {
                guard let frame = try await client.next() else { throw TestFailure("the server closed before its SETTINGS") }
                if frame.kind == .settings { break }
            }
            try await client.write { $0.frame(type: 4, flags: 0x1, stream: 0, payload: ByteBuffer()) }
            return try await body(client)
        }
    }

    func write(_ build: (inout Frames) -> Void) async throws {
        var frames = Frames()
        build(&frames)
        try await channel.writeAndFlush(frames.buffer)
    }

    /// Reads frames until the server closes the connection (`closes`) or until `stream` is answered and a little
    /// after (whatever else the server sent with it).
    func readUntilClosedOrAnswered(stream: Int, closes: Bool) async throws -> [Frame] {
        var frames: [Frame] = []
        while let frame = try await next() {
            frames.append(frame)
            if !closes, frame.stream == stream, frame.kind == .data { break }
        }
        return frames
    }

    /// The next frame other than SETTINGS ACKs and WINDOW_UPDATEs; nil once the server closed.
    private func next() async throws -> Frame? {
        while true {
            if pending.readableBytes >= 9 {
                let length =
                    Int(pending.getInteger(at: pending.readerIndex, as: UInt16.self)!) << 8
                    | Int(pending.getInteger(at: pending.readerIndex + 2, as: UInt8.self)!)
                if pending.readableBytes >= 9 + length {
                    let type = pending.readInteger(as: UInt32.self)! & 0xff
                    let flags = pending.readInteger(as: UInt8.self)!
                    let stream = Int(pending.readInteger(as: UInt32.self)! & 0x7fff_ffff)
                    var payload = pending.readSlice(length: length)!
                    switch type {
                    case 0: return Frame(stream: stream, kind: .data)
                    case 1:
                        let headers = try decoder.decodeHeaders(from: &payload)
                        return Frame(stream: stream, kind: .headers(headers.first(name: ":status") ?? ""))
                    case 3: return Frame(stream: stream, kind: .reset(payload.readInteger(as: UInt32.self)!))
                    case 4: if flags & 0x1 == 0 { return Frame(stream: 0, kind: .settings) }
                    case 7:
                        let last = Int(payload.readInteger(as: UInt32.self)! & 0x7fff_ffff)
                        return Frame(stream: 0, kind: .goAway(lastStream: last, error: payload.readInteger(as: UInt32.self)!))
                    case 8: break
                    default: return Frame(stream: stream, kind: .other(UInt8(type)))
                    }
                    continue
                }
            }
            guard var bytes = try await inbound.next() else {
                closed = true
                return nil
            }
            pending.writeBuffer(&bytes)
        }
    }
}
