import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOCore
import PaperboyStore
import Synchronization

/// A per-client token bucket for the device routes: `burst` requests at once, refilled at `perSecond`.
///
/// A client is a network address, counted before the device API key is looked up, so that a client trying
/// wrong keys is limited like any other and cannot make each try cost a database statement. Devices behind
/// a carrier NAT share one address (of all apps the server serves), so the defaults are generous (a burst of
/// 60 and 10 a second). IPv6 addresses count by their /64, the block one subscriber gets.
/// Behind a reverse proxy every request comes from the proxy's address: limit at the proxy instead and
/// turn this off (`paperboy serve --rate-limit off`).
public struct DeviceRateLimit: Sendable {
    /// Requests a client may make at once.
    public var burst: Int
    /// Requests a client may make per second, sustained.
    public var perSecond: Double
    /// Seconds on a monotonic clock; tests pass their own to move time without sleeping.
    public var now: @Sendable () -> Double
    /// Clients remembered at most; idle ones (whose bucket has refilled) are forgotten first.
    public var maxClients: Int

    public init(burst: Int = 60, perSecond: Double = 10, maxClients: Int = 100_000, now: (@Sendable () -> Double)? = nil) {
        precondition(burst >= 1 && perSecond > 0, "a rate limit needs a burst of at least 1 and a positive rate")
        self.burst = burst
        self.perSecond = perSecond
        self.maxClients = max(1, maxClients)
        self.now = now ?? DeviceRateLimit.monotonicSeconds
    }

    /// The default for `paperboy serve`: a burst of 60, then 10 requests a second per address.
    public static let standard = DeviceRateLimit()

    private static let origin = ContinuousClock.now
    private static let monotonicSeconds: @Sendable () -> Double = {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}

/// Token buckets by client, in bounded memory, at O(1) a request: the buckets are kept in two generations (a client
/// is found in the newer or the older and moved to the newer; when the newer holds half of ``DeviceRateLimit/maxClients``
/// the older is forgotten, freed after the lock), so the clients unseen longest are forgotten first without sorting
/// anything. A forgotten client starts again with a full bucket, as an idle one would have. Before, a new client at
/// the maximum filtered and sorted all 100,000 under the lock.
final class RateLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    struct Generations {
        var newer: [String: Bucket] = [:]
        var older: [String: Bucket] = [:]
    }

    let limit: DeviceRateLimit
    private let buckets = Mutex(Generations())

    init(limit: DeviceRateLimit) {
        self.limit = limit
    }

    /// Takes one token from `client`'s bucket: nil when there was one, else whole seconds until there is.
    func acquire(_ client: String) -> Int? {
        let now = limit.now()
        let burst = Double(limit.burst)
        let rate = limit.perSecond
        let half = max(1, limit.maxClients / 2)
        let (wait, forgotten) = buckets.withLock { buckets -> (Int?, [String: Bucket]) in
            var bucket = buckets.newer[client] ?? buckets.older[client] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
            bucket.updated = now
            var forgotten: [String: Bucket] = [:]
            if buckets.newer[client] == nil {
                buckets.older[client] = nil
                if buckets.newer.count >= half {
                    forgotten = buckets.older
                    buckets.older = buckets.newer
                    buckets.newer = [:]
                    buckets.newer.reserveCapacity(half)
                }
            }
            let wait: Int?
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                wait = nil
            } else {
                wait = max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
            }
            buckets.newer[client] = bucket
            return (wait, forgotten)
        }
        // The forgotten generation is freed here, after the lock.
        withExtendedLifetime(forgotten) {}
        return wait
    }

    /// Clients remembered now (for tests).
    var count: Int { buckets.withLock { $0.newer.count + $0.older.count } }
}

/// Answers 429 with `Retry-After` when a device client is over its ``DeviceRateLimit``. Runs before the
/// device-key middleware: a client is the address it connects from, whatever key it sends.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = APIRequestContext

    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let retryAfter = limiter.acquire(ClientAddress.of(request) ?? "unknown") {
            throw APIError(
                .tooManyRequests,
                code: .rateLimited,
                message: "too many requests from this client; retry after \(retryAfter) s",
                headers: [.retryAfter: String(retryAfter)]
            )
        }
        return try await next(request, context)
    }
}

/// The address a request came from, stamped by the server (``paperboyServer(tls:trustedProxies:)``) into a header
/// that no client can set: the server replaces whatever a client sent under that name. Behind a trusted proxy, the
/// address the proxy saw (``TrustedProxies``).
public enum ClientAddress {
    static let header = HTTPField.Name("X-Paperboy-Client-Address")!

    /// The client's address as the limits count it and the audit log records it: IPv4 as is, IPv6 by its /64.
    public static func of(_ request: Request) -> String? {
        request.headers[header]
    }

    static func key(for address: SocketAddress?) -> String? {
        guard let address else { return nil }
        switch address {
        case .v4:
            return address.ipAddress
        case .v6(let v6):
            var raw = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &raw) { Array($0) }
            // An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 client.
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                return bytes[12..<16].map(String.init).joined(separator: ".")
            }
            let prefix = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return prefix.joined(separator: ":") + "::/64"
        case .unixDomainSocket:
            return "unix"
        }
    }
}

/// HTTP/1.1, over TLS when `tls` is set, with the client's address stamped on every request for the limits and
/// the audit log (``ClientAddress``): the connection's, or behind one of `trustedProxies` the one it forwarded. A
/// connection idle for `idleTimeout` (``APIConfiguration/idleTimeout``) is closed, by Hummingbird's own
/// `HTTPConnectionStateHandler`; one whose request is not read in full within `bodyTimeout` of its head, by
/// ``RequestReadDeadline``.
func paperboyServer(
    tls: TLSConfiguration?,
    trustedProxies: TrustedProxies = .none,
    idleTimeout: Duration = APIConfiguration.defaultIdleTimeout,
    bodyTimeout: Duration = APIConfiguration.defaultBodyTimeout
) -> HTTPServerBuilder {
    HTTPServerBuilder { responder in
        let stamping: HTTPChannelHandler.Responder = { request, writer, channel in
            let head = trustedProxies.stamped(request.head, connection: channel.remoteAddress)
            try await responder(Request(head: head, body: request.body), writer, channel)
        }
        func amount(_ duration: Duration) -> TimeAmount {
            let (seconds, attoseconds) = duration.components
            return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        let body = amount(bodyTimeout)
        let http = HTTP1Channel(
            responder: stamping,
            configuration: .init(additionalChannelHandlers: [RequestReadDeadline(limit: body)], idleTimeout: amount(idleTimeout))
        )
        if let tls {
            return try TLSChannel(http, tlsConfiguration: tls)
        }
        return http
    }
}
