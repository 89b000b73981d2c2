import Hummingbird

/// Registers routes and answers 405 (with `Allow`) for the other methods on a known path, which
/// Hummingbird's router would answer 404.
struct RouteTable<Context: RequestContext> {
    private var methods: [String: [HTTPRequest.Method]] = [:]
    private var order: [String] = []

    mutating func record(_ path: String, _ method: HTTPRequest.Method) {
        if methods[path] == nil { order.append(path) }
        methods[path, default: []].append(method)
    }

    func addMethodNotAllowed(to router: some RouterMethods<Context>) {
        let candidates: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options, .trace, .connect]
        for path in order {
            var allowed = methods[path] ?? []
            if allowed.contains(.get) { allowed.append(.head) }
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in candidates where !allowed.contains(method) {
                router.on(RouterPath(path), method: method) { request, _ -> Response in
                    throw APIError(
                        .methodNotAllowed,
                        code: "method_not_allowed",
                        message: "\(request.method) is not allowed on \(path); use \(allow)",
                        headers: [.allow: allow]
                    )
                }
            }
        }
    }
}
