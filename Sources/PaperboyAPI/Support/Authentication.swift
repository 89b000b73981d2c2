import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PaperboyStore

/// Authenticates device requests by the app's key in `X-API-Key`.
///
/// Keys are looked up by their SHA-256, never compared as text; found apps are cached for a short time so
/// that a registration costs one database statement, not two.
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

/// Apps by the hash of their device API key, cached for `timeToLive`.
actor AppDirectory {
    private let repository: AppRepository
    private let timeToLive: Duration
    private var cache: [[UInt8]: (app: App, expires: ContinuousClock.Instant)] = [:]

    init(repository: AppRepository, timeToLive: Duration) {
        self.repository = repository
        self.timeToLive = timeToLive
    }

    func app(forKey key: DeviceAPIKey, logger: Logger) async throws -> App? {
        let hash = key.hash
        let now = ContinuousClock.now
        if let cached = cache[hash], cached.expires > now { return cached.app }
        guard let app = try await repository.find(apiKey: key, logger: logger) else { return nil }
        if cache.count > 10_000 { cache.removeAll() }
        cache[hash] = (app, now + timeToLive)
        return app
    }
}

/// Protects operator endpoints with `Authorization: Bearer <PAPERBOY_ADMIN_TOKEN>`, compared in
/// constant time. Without a configured token the admin API is closed.
struct AdminTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    private let expectedDigest: SHA256.Digest?

    init(adminToken: String?) {
        self.expectedDigest = adminToken.flatMap { $0.isEmpty ? nil : SHA256.hash(data: Array($0.utf8)) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let expectedDigest else {
            throw APIError.unauthorized("the admin API is disabled; start the server with PAPERBOY_ADMIN_TOKEN set", field: "Authorization")
        }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw APIError.unauthorized("this endpoint needs Authorization: Bearer <admin token>", field: "Authorization")
        }
        let given = SHA256.hash(data: Array(header.dropFirst("Bearer ".count).utf8))
        // Comparing fixed-size digests byte by byte without an early exit: the time says nothing about
        // how much of the token was right.
        var difference: UInt8 = 0
        for (a, b) in zip(given, expectedDigest) { difference |= a ^ b }
        guard difference == 0 else {
            throw APIError.unauthorized("the admin token is wrong", field: "Authorization")
        }
        return try await next(request, context)
    }
}
