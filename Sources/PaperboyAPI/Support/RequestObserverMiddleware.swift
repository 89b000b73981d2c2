import Foundation
import Hummingbird

/// A request the API answered, as a ``RequestObserverMiddleware`` reports it.
public struct ObservedRequest: Sendable {
    /// When the request reached the handlers (its arrival, before any database work).
    public var at: Date
    /// The method and matched route, e.g. `GET /v1/editions/{id}` (the path itself for unmatched ones).
    public var route: String
    public var status: Int
}

/// Reports every answered request to an observer: the demo's request log (the content load it charts).
struct RequestObserverMiddleware<Context: RequestContext>: RouterMiddleware {
    let observe: @Sendable (ObservedRequest) -> Void

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let arrived = Date()
        do {
            let response = try await next(request, context)
            report(request, context: context, arrived: arrived, status: response.status.code)
            return response
        } catch let error as any HTTPResponseError {
            report(request, context: context, arrived: arrived, status: error.status.code)
            throw error
        } catch {
            report(request, context: context, arrived: arrived, status: 500)
            throw error
        }
    }

    private func report(_ request: Request, context: Context, arrived: Date, status: Int) {
        let path = context.endpointPath ?? request.uri.path
        observe(ObservedRequest(at: arrived, route: "\(request.method) \(path)", status: status))
    }
}
