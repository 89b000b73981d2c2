import Foundation
import Hummingbird

/// A request the API answered, as a ``RequestObserverMiddleware`` reports it.
public struct ObservedRequest: Sendable {
    /// When the response was ready.
    public var at: Date
    /// The method and matched route, e.g. `GET /v1/editions/{id}` (the path itself for unmatched ones).
    public var route: String
    public var status: Int
}

/// Reports every answered request to an observer: the demo's request log (the content load it charts).
struct RequestObserverMiddleware<Context: RequestContext>: RouterMiddleware {
    let observe: @Sendable (ObservedRequest) -> Void

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            report(request, context: context, status: response.status.code)
            return response
        } catch let error as any HTTPResponseError {
            report(request, context: context, status: error.status.code)
            throw error
        } catch {
            report(request, context: context, status: 500)
            throw error
        }
    }

    private func report(_ request: Request, context: Context, status: Int) {
        let path = context.endpointPath ?? request.uri.path
        observe(ObservedRequest(at: Date(), route: "\(request.method) \(path)", status: status))
    }
}
