import Hummingbird

/// `GET /openapi.yaml` (no auth): the API's OpenAPI 3.1 document, `openapi.yaml` at the repository's root
/// as `scripts/embed-openapi.sh` embedded it (``OpenAPISpec/yaml``).
struct OpenAPIRoutes {
    static let contentType = OpenAPISpec.mediaType

    func add(to router: Router<APIRequestContext>) {
        router.get("openapi.yaml") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: Self.contentType],
                body: .init(byteBuffer: ByteBuffer(string: OpenAPISpec.yaml))
            )
        }
    }
}
