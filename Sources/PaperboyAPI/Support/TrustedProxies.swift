import Foundation
import HTTPTypes
import NIOCore

/// The reverse proxies in front of Paperboy (`serve --trusted-proxy`), as addresses or CIDR blocks: a request that
/// comes from one of them is counted by the client address the proxy saw, the rightmost address of
/// `X-Forwarded-For` that is not itself a trusted proxy. A request from anywhere else is counted by the address it
/// comes from, whatever `X-Forwarded-For` it sends: a client can write anything there.
///
/// Behind a proxy every connection comes from the proxy: without this, the per-address limits (device requests,
/// wrong console and admin tokens) would count every client as one, so that one client guessing would make all wait,
/// and the audit log would record the proxy's address for everyone.
public struct TrustedProxies: Sendable, Equatable {
    struct Block: Sendable, Equatable {
        var bytes: [UInt8]
        var prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var left = prefix
            for (a, b) in zip(address, bytes) {
                guard left > 0 else { return true }
                let bits = min(8, left)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                guard a & mask == b & mask else { return false }
                left -= bits
            }
            return true
        }
    }

    var blocks: [Block]

    public static let none = TrustedProxies(blocks: [])

    /// - Parameter texts: addresses (`127.0.0.1`, `::1`) or blocks (`10.0.0.0/8`, `fd00::/8`).
    /// - Throws: ``TrustedProxiesError`` naming the text that is neither.
    public init(parsing texts: [String]) throws(TrustedProxiesError) {
        var blocks: [Block] = []
        for text in texts {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, let bytes = Self.bytes(String(parts[0])) else {
                throw TrustedProxiesError(text: text)
            }
            let prefix: Int
            if parts.count == 2 {
                guard let given = Int(parts[1]), (0...(bytes.count * 8)).contains(given) else { throw TrustedProxiesError(text: text) }
                prefix = given
            } else {
                prefix = bytes.count * 8
            }
            blocks.append(Block(bytes: bytes, prefix: prefix))
        }
        self.blocks = blocks
    }

    init(blocks: [Block]) {
        self.blocks = blocks
    }

    public var isEmpty: Bool { blocks.isEmpty }

    /// Whether `address` is one of the proxies.
    func contains(_ address: SocketAddress?) -> Bool {
        guard let bytes = address.flatMap(Self.bytes) else { return false }
        return blocks.contains { $0.contains(bytes) }
    }

    /// The client's address: the connection's, or when that is a trusted proxy, the rightmost address of
    /// `X-Forwarded-For` that is not one (the proxy's own when the header is missing or holds no address).
    func client(connection: SocketAddress?, forwardedFor: String?) -> SocketAddress? {
        guard contains(connection), let forwardedFor else { return connection }
        for text in forwardedFor.split(separator: ",").reversed() {
            guard let address = try? SocketAddress(ipAddress: Self.stripped(text), port: 0) else { return connection }
            if !contains(address) { return address }
        }
        return connection
    }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!

    /// A request's head as the routes see it: the client's address stamped (``ClientAddress``, from
    /// ``client(connection:forwardedFor:)``), and `X-Forwarded-Proto` kept only from a trusted proxy. Anyone else
    /// could say the connection was HTTPS (the console's cookie and origin follow it); only the proxy knows how the
    /// browser reached it.
    func stamped(_ head: HTTPRequest, connection: SocketAddress?) -> HTTPRequest {
        var head = head
        let client = self.client(connection: connection, forwardedFor: head.headerFields[values: Self.forwardedFor].joined(separator: ","))
        head.headerFields[ClientAddress.header] = ClientAddress.key(for: client)
        if !contains(connection) { head.headerFields[values: Self.forwardedProto] = [] }
        return head
    }

    /// An address as written in `X-Forwarded-For`: trimmed, IPv6 brackets and an IPv4 port removed.
    static func stripped(_ text: Substring) -> String {
        var text = text.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("["), let end = text.firstIndex(of: "]") {
            text = String(text[text.index(after: text.startIndex)..<end])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        return text
    }

    static func bytes(_ text: String) -> [UInt8]? {
        (try? SocketAddress(ipAddress: text, port: 0)).flatMap(bytes)
    }

    static func bytes(_ address: SocketAddress) -> [UInt8]? {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            // An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 address.
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff { return Array(bytes[12..<16]) }
            return bytes
        case .unixDomainSocket:
            return nil
        }
    }
}

public struct TrustedProxiesError: Error, Equatable, CustomStringConvertible {
    public var text: String
    public var description: String { "\(text) is not an IP address or a CIDR block (e.g. 127.0.0.1, 10.0.0.0/8, fd00::/8)" }
}
