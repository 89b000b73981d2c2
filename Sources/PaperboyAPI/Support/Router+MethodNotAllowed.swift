import Hummingbird

extension Router {
    /// The methods a request may have that a path answers 405 (with `Allow`) for when it lacks them:
    /// Hummingbird's router would answer them 404. QUERY (the safe method with a body, RFC draft
    /// httpbis-safe-method-w-body) is among them, as clients and tools have started to send it.
    static var methodNotAllowedCandidates: [HTTPRequest.Method] {
        [.get, .head, .post, .put, .patch, .delete, .options, .trace, .connect, .query]
    }

    /// Answers 405 with `Allow` for every candidate method a path of the routes added so far lacks (HEAD
    /// counts as present where GET is). Call it after every route is added: the `Allow` lists are read
    /// from the router itself, so they cannot drift from the routes.
    func addMethodNotAllowed() {
        var methods: [String: [HTTPRequest.Method]] = [:]
        var order: [RouterPath] = []
        for route in routes {
            let key = route.path.description
            if methods[key] == nil { order.append(route.path) }
            methods[key, default: []].append(route.method)
        }
        for path in order {
            let text = path.description
            var allowed = methods[text] ?? []
            if allowed.contains(.get) && !allowed.contains(.head) { allowed.append(.head) }
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in Self.methodNotAllowedCandidates where !allowed.contains(method) {
                on(path, method: method) { request, _ -> Response in
                    throw APIError(
                        .methodNotAllowed,
                        code: .methodNotAllowed,
                        message: "\(request.method) is not allowed on \(text); use \(allow)",
                        headers: [.allow: allow]
                    )
                }
            }
        }
    }
}
