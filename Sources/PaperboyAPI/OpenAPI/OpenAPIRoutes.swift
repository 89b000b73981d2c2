import Hummingbird
import PostgresNIO
import Synchronization

/// `GET /openapi.yaml` (no auth): the API's OpenAPI 3.1 document, `openapi.yaml` at the repository's root
/// as `scripts/embed-openapi.sh` embedded it (``OpenAPISpec/yaml``).
///
/// Added last in ``buildRouter(client:configuration:)``, after every other route, so that it also hands the
/// complete ``RouteTable`` to ``routeTable(client:configuration:)`` when that asks for it.
struct OpenAPIRoutes {
    static let path = "/openapi.yaml"
    static let contentType = OpenAPISpec.mediaType

    func add(to router: Router<APIRequestContext>, routes: inout RouteTable<APIRequestContext>) {
        router.get("openapi.yaml") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: Self.contentType],
                body: .init(byteBuffer: ByteBuffer(string: OpenAPISpec.yaml))
            )
        }
        routes.record(Self.path, .get)
        RouteCapture.current?.store(routes.recordedRoutes())
    }
}

/// A route of the API: a method and a path pattern as the ``RouteTable`` records it, e.g.
/// `PUT /v1/devices/{token}`.
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

/// The routes ``buildRouter(client:configuration:)`` serves, as its ``RouteTable`` recorded them (HEAD,
/// which every GET path also answers, is not listed). Builds a router over `client` without using it: the
/// client need not run. The OpenAPI contract test compares this with `openapi.yaml`.
public func routeTable(client: PostgresClient, configuration: APIConfiguration = APIConfiguration()) -> [APIRoute] {
    let capture = RouteCapture()
    RouteCapture.$current.withValue(capture) {
        _ = buildRouter(client: client, configuration: configuration)
    }
    return capture.routes
}

/// Where ``OpenAPIRoutes`` leaves the route table for ``routeTable(client:configuration:)``: task-local, so
/// that routers built elsewhere (servers, other tests) are not affected.
final class RouteCapture: Sendable {
    @TaskLocal static var current: RouteCapture?

    private let stored = Mutex<[APIRoute]>([])

    var routes: [APIRoute] { stored.withLock { $0 } }

    func store(_ routes: [APIRoute]) {
        stored.withLock { $0 = routes }
    }
}

extension RouteTable {
    /// The methods and paths recorded so far.
    ///
    /// The table keeps them private and exposes them only through ``addMethodNotAllowed(to:)``, which adds a
    /// 405 handler for every method of `methodNotAllowedCandidates` that a path lacks (and HEAD too when it
    /// lacks GET). That is read back here with a router that only takes notes: a path's methods are the
    /// candidates it was not given a 405 for.
    func recordedRoutes() -> [APIRoute] {
        let notes = RefusalNotes<Context>()
        addMethodNotAllowed(to: notes)
        var routes: [APIRoute] = []
        for (path, refused) in notes.refusals {
            var served = Self.methodNotAllowedCandidates.filter { !refused.contains($0) }
            if served.contains(.get) { served.removeAll { $0 == .head } }
            routes += served.map { APIRoute(method: $0.rawValue, path: path) }
        }
        return routes
    }

    /// The methods ``addMethodNotAllowed(to:)`` answers 405 for when a path lacks them.
    static var methodNotAllowedCandidates: [HTTPRequest.Method] { [.get, .head, .post, .put, .patch, .delete, .options] }
}

/// A `RouterMethods` that registers nothing and notes, per path in order, the methods it was given.
private final class RefusalNotes<Context: RequestContext>: RouterMethods {
    private(set) var refusals: [(path: String, methods: [HTTPRequest.Method])] = []

    @discardableResult
    func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        let text = path.description
        if let index = refusals.firstIndex(where: { $0.path == text }) {
            refusals[index].methods.append(method)
        } else {
            refusals.append((text, [method]))
        }
        return self
    }

    func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self { self }
}
