import Hummingbird
import Logging
import PaperboyCore
import PaperboyStore

/// Answers every failure in the API's JSON error shape: Hummingbird's own errors (404, 413, …), store
/// refusals, and anything unexpected (a 500 that says nothing about internals; the detail goes to the log).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as RequestValue.Refusal {
            throw APIError.invalid(error.field, error.message)
        } catch let error as StoreError {
            switch error.code {
            case .invalid: throw APIError(.badRequest, code: .invalidValue, field: error.field, message: error.message)
            case .conflict: throw APIError(.conflict, code: .conflict, field: error.field, message: error.message)
            case .notFound: throw APIError(.notFound, code: .notFound, field: error.field, message: error.message)
            }
        } catch let error as HTTPError {
            switch error.status {
            case .notFound:
                throw APIError(.notFound, code: .notFound, message: "no route for \(request.method) \(request.uri.path)")
            case .contentTooLarge:
                throw APIError(.contentTooLarge, code: .bodyTooLarge, field: "body", message: "the request body is too large")
            default:
                throw APIError(error.status, code: .http(error.status), message: error.body ?? error.status.reasonPhrase)
            }
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            throw APIError(.internalServerError, code: .internal, message: "the server failed to handle the request; see its log")
        }
    }
}
