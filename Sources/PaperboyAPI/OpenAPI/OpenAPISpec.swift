/// The API's OpenAPI 3.1 document. ``yaml`` is generated from `openapi.yaml` by
/// `scripts/embed-openapi.sh` (in `OpenAPISpec+Bundled.swift`).
public enum OpenAPISpec {
    /// The media type it is served with.
    public static let mediaType = "application/yaml"
}
