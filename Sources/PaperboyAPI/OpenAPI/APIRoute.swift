import Hummingbird
import PaperboyStore
import PostgresNIO

/// A route of the API: a method and a path pattern as the router has it, e.g. `PUT /v1/devices/{token}`.
public struct APIRoute: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var method: String
    public var path: String

    public init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    public var description: String { "\(method) \(path)" }

    public static func < (lhs: APIRoute, rhs: APIRoute) -> Bool {
        (lhs.path, lhs.method) < (rhs.path, rhs.method)
    }
}

/// The routes ``buildRouter(client:configuration:)`` serves, read from the router (`Router.routes`) before
/// the 405 answers for the other methods are added; HEAD, which every GET path also answers, is not
/// listed. Builds a router over `client` without using it: the client need not run. The OpenAPI contract
/// test compares this with `openapi.yaml`.
public func routeTable(client: PostgresClient, configuration: APIConfiguration = APIConfiguration()) -> [APIRoute] {
    let apps = AppRepository(client: client)
    let router = buildRoutes(client: client, configuration: configuration) { key, logger in try await apps.find(apiKey: key, logger: logger) }
    return router.servedRoutes
}

extension Router {
    /// The routes added so far, from Hummingbird's `routes`, without HEAD.
    var servedRoutes: [APIRoute] {
        routes.filter { $0.method != .head }.map { APIRoute(method: $0.method.rawValue, path: $0.path.description) }
    }
}
