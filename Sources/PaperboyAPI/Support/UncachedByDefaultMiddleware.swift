import HTTPTypes
import Hummingbird

/// Answers `Cache-Control: no-store` on every response that does not set its own (only the editions do).
///
/// A proxy in front may be told to cache more than it should (nginx's `proxy_cache_valid` stores answers
/// without `Cache-Control`; Varnish keeps any 200 for two minutes by default), and a device's registration,
/// an admin listing or a health check read from a cache would be another client's or stale. Errors say the
/// same through ``APIError``, which this middleware never sees as a response.
struct UncachedByDefaultMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if response.headers[.cacheControl] == nil {
            response.headers[.cacheControl] = "no-store"
        }
        return response
    }
}
