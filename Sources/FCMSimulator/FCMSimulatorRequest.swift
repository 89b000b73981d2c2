import NIOCore

/// A request as either protocol delivered it: what the simulator's routes read.
struct FCMSimulatorRequest: Sendable {
    /// Bodies beyond this are not kept (FCM's own limit on a request is far below it).
    static let maximumBodyBytes = 1 << 20

    var method: String
    var path: String
    var authorization: String?
    var contentType: String?
    /// `host` (HTTP/1.1) or `:authority` (HTTP/2).
    var host: String?
    var body: ByteBuffer
    /// The body passed ``maximumBodyBytes`` and was dropped.
    var bodyTooLarge = false
    /// The connection it came on, numbered per simulator from 1.
    var connection = 0
    /// Its HTTP/2 stream id; nil over HTTP/1.1.
    var stream: Int?

    init(method: String = "", path: String = "", body: ByteBuffer = ByteBuffer()) {
        self.method = method
        self.path = path
        self.body = body
    }

    /// Takes the headers the routes read; names must be lowercase (HTTP/2) or are compared as such.
    mutating func add(header name: String, value: String) {
        switch name.lowercased() {
        case ":method": method = value
        case ":path": path = value
        case ":authority", "host": host = value
        case "authorization": authorization = value
        case "content-type": contentType = value
        default: break
        }
    }

    /// Appends a piece of the body, dropping it all once it passes ``maximumBodyBytes``.
    mutating func append(body bytes: inout ByteBuffer) {
        guard !bodyTooLarge else { return }
        if body.readableBytes + bytes.readableBytes > Self.maximumBodyBytes {
            bodyTooLarge = true
            body = ByteBuffer()
        } else {
            body.writeBuffer(&bytes)
        }
    }
}
