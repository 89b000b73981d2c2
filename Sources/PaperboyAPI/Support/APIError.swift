import Foundation
import Hummingbird

/// An API error, always answered as `{"error": {"code": ..., "field": ..., "message": ...}}`.
///
/// `field` names the input at fault (a JSON path like `subscriptions[1]`, or `token`, or a header) when
/// one is. Messages never contain secrets.
public struct APIError: HTTPResponseError, Equatable {
    public var status: HTTPResponse.Status
    public var code: Code
    public var field: String?
    public var message: String
    /// Extra response headers, e.g. `Allow` on a 405.
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, code: Code, field: String? = nil, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.field = field
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        // Never stored by a cache, whatever it is told to keep: a 401 cached by URL would answer the devices
        // with a key after it, and one app's 404 would answer another app's request.
        if headers[.cacheControl] == nil { headers[.cacheControl] = "no-store" }
        let body = try APIError.encoder.encode(Body(error: .init(code: code, field: field, message: message)))
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The JSON shape of every error.
    public struct Body: Codable, Equatable {
        public struct Detail: Codable, Equatable {
            public var code: Code
            public var field: String?
            public var message: String
        }

        public var error: Detail
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

extension APIError {
    static func unauthorized(_ message: String, field: String) -> APIError {
        APIError(.unauthorized, code: .unauthorized, field: field, message: message)
    }

    static func invalid(_ field: String, _ message: String) -> APIError {
        APIError(.badRequest, code: .invalidValue, field: field, message: message)
    }
}
