import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PaperboyCore
import PaperboyStore

/// Authenticates device requests by the app's key in `X-API-Key`.
///
/// Keys are looked up by their SHA-256, never compared as text; found apps are cached for a short time so
/// that a registration costs one database statement, not two, and unknown keys are too (``AppDirectory``).
struct DeviceKeyMiddleware: RouterMiddleware {
    typealias Context = APIRequestContext
    static let header = HTTPField.Name("X-API-Key")!

    let directory: AppDirectory

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let secret = request.headers[Self.header], !secret.isEmpty else {
            throw APIError.unauthorized("this endpoint needs the app's device API key in the X-API-Key header", field: "X-API-Key")
        }
        guard let app = try await directory.app(forKey: DeviceAPIKey(secret: secret), logger: context.logger) else {
            throw APIError.unauthorized("the X-API-Key is not a key of any app", field: "X-API-Key")
        }
        var context = context
        context.app = app
        return try await next(request, context)
    }
}

/// Apps by the hash of their device API key, cached for `timeToLive`; keys that are no app's are
/// remembered too, so that a flood of wrong keys costs one database statement per key, not per request.
///
/// A key remembered as unknown stays unknown for up to `unknownTimeToLive` (30 s by default) even if an
/// app gets that key in the meantime. Keys are generated (`pb_` and 256 random bits), so a device cannot
/// have sent one before it existed; only a guessed key is remembered as unknown. At most
/// `unknownCapacity` unknown keys are remembered; the oldest are forgotten first.
actor AppDirectory {
    /// The database lookup: `AppRepository.find(apiKey:)`; tests count its calls.
    typealias Lookup = @Sendable (DeviceAPIKey, Logger) async throws -> App?

    private let lookup: Lookup
    private let timeToLive: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private var cache: [[UInt8]: (app: App, expires: ContinuousClock.Instant)] = [:]
    private var unknown: UnknownKeys
    /// Lookups under way, by key hash: concurrent requests with the same key wait for one lookup.
    private var pending: [[UInt8]: Task<App?, any Error>] = [:]

    init(
        lookup: @escaping Lookup,
        timeToLive: Duration,
        unknownTimeToLive: Duration = .seconds(30),
        unknownCapacity: Int = 4096,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.lookup = lookup
        self.timeToLive = timeToLive
        self.unknown = UnknownKeys(capacity: unknownCapacity, timeToLive: unknownTimeToLive)
        self.now = now
    }

    init(repository: AppRepository, timeToLive: Duration, unknownTimeToLive: Duration = .seconds(30)) {
        self.init(
            lookup: { key, logger in try await repository.find(apiKey: key, logger: logger) },
            timeToLive: timeToLive,
            unknownTimeToLive: unknownTimeToLive
        )
    }

    func app(forKey key: DeviceAPIKey, logger: Logger) async throws -> App? {
        let hash = key.hash
        if let cached = cache[hash], cached.expires > now() { return cached.app }
        if unknown.contains(hash, now: now()) { return nil }
        if let lookingUp = pending[hash] { return try await lookingUp.value }
        let lookup = self.lookup
        let task = Task { try await lookup(key, logger) }
        pending[hash] = task
        defer { pending[hash] = nil }
        guard let app = try await task.value else {
            unknown.insert(hash, now: now())
            return nil
        }
        if cache.count > 10_000 { cache.removeAll() }
        cache[hash] = (app, now() + timeToLive)
        return app
    }

    /// Unknown keys remembered now (for tests).
    var unknownCount: Int { unknown.count }
}

/// Hashes of keys that are no app's, each remembered for `timeToLive`, at most `capacity` of them.
///
/// One time to live for all means the order of insertion is the order of expiry: expired entries are
/// dropped from the front, and when full the front is the one closest to expiring anyway.
struct UnknownKeys {
    let capacity: Int
    let timeToLive: Duration
    private var expiries: [[UInt8]: ContinuousClock.Instant] = [:]
    /// Every key of `expiries` once, oldest first, from `head` on.
    private var order: [[UInt8]] = []
    private var head = 0

    init(capacity: Int, timeToLive: Duration) {
        self.capacity = max(1, capacity)
        self.timeToLive = timeToLive
    }

    var count: Int { expiries.count }

    func contains(_ hash: [UInt8], now: ContinuousClock.Instant) -> Bool {
        expiries[hash].map { $0 > now } ?? false
    }

    mutating func insert(_ hash: [UInt8], now: ContinuousClock.Instant) {
        while head < order.count, let expires = expiries[order[head]], expires <= now {
            dropOldest()
        }
        guard expiries[hash] == nil else { return }
        while expiries.count >= capacity { dropOldest() }
        expiries[hash] = now + timeToLive
        order.append(hash)
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }

    private mutating func dropOldest() {
        expiries[order[head]] = nil
        head += 1
    }
}

/// Protects operator endpoints with `Authorization: Bearer <PAPERBOY_ADMIN_TOKEN>`, compared in constant time.
/// Without a configured token the admin API is closed. Wrong tokens are limited per client address as the console's
/// are (``GuessThrottle``): past a few, that address waits (429 with `Retry-After`) and its tries are not even
/// checked; other addresses are not affected. A missing header is not a guess and is not counted.
struct AdminTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    private let expectedDigest: SHA256.Digest?
    private let guesses: GuessGuard

    init(adminToken: String?, guesses: GuessGuard = GuessGuard()) {
        self.expectedDigest = adminToken.flatMap { $0.isEmpty ? nil : SHA256.hash(data: Array($0.utf8)) }
        self.guesses = guesses
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let expectedDigest else {
            throw APIError.unauthorized("the admin API is disabled; start the server with PAPERBOY_ADMIN_TOKEN set", field: "Authorization")
        }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw APIError.unauthorized("this endpoint needs Authorization: Bearer <admin token>", field: "Authorization")
        }
        let address = ClientAddress.of(request)
        let given = SHA256.hash(data: Array(header.dropFirst("Bearer ".count).utf8))
        let outcome = guesses.attempt(address: address) {
            // Comparing fixed-size digests byte by byte without an early exit: the time says nothing about
            // how much of the token was right.
            var difference: UInt8 = 0
            for (a, b) in zip(given, expectedDigest) { difference |= a ^ b }
            return difference == 0
        }
        switch outcome {
        case .right:
            break
        case .wait(let seconds):
            throw APIError(
                .tooManyRequests,
                code: .rateLimited,
                field: "Authorization",
                message: "too many wrong admin tokens from this address; retry after \(seconds) s",
                headers: [.retryAfter: String(seconds)]
            )
        case .wrong:
            context.logger.notice("admin token refused", metadata: [LogKey.address: "\(address ?? "unknown")", LogKey.path: "\(request.uri.path)"])
            throw APIError.unauthorized("the admin token is wrong", field: "Authorization")
        }
        if let name = request.headers[AuditEntry.operatorHeader], name.count > AuditEntry.operatorHeaderLimit {
            // The change is refused before it is made: a name this long is a mistake, not a name to cut silently.
            throw APIError.invalid(
                AuditEntry.operatorHeader.rawName,
                "at most \(AuditEntry.operatorHeaderLimit) characters (\(name.count) given); the first 64 printable ones are recorded"
            )
        }
        return try await next(request, context)
    }
}

extension AuditEntry {
    /// The longest `X-Paperboy-Operator` accepted (the OpenAPI document's `maxLength`); longer is refused with 400.
    static let operatorHeaderLimit = 256

    /// The header in which an admin API caller may give their name, recorded with each change they make.
    public static let operatorHeader = HTTPField.Name("X-Paperboy-Operator")!

    /// The audit entry of a change made through the admin API: role `admin`, the name in `X-Paperboy-Operator`
    /// (printable, at most 64 characters), the client's address.
    static func admin(
        _ request: Request,
        action: String,
        appID: Int? = nil,
        broadcastID: UUID? = nil,
        editionID: UUID? = nil,
        detail: String = ""
    ) -> AuditEntry {
        let name = request.headers[operatorHeader].map { text in
            String(text.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.map(Character.init))
                .trimmingCharacters(in: .whitespaces)
        }
        return AuditEntry(
            at: Date(),
            surface: .admin,
            role: "admin",
            name: name.flatMap { $0.isEmpty ? nil : $0.clipped(toCodePoints: 64) },
            address: ClientAddress.of(request),
            action: action,
            appID: appID,
            broadcastID: broadcastID,
            editionID: editionID,
            detail: detail
        )
    }
}
