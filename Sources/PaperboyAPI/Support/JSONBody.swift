import Foundation
import Hummingbird
import NIOCore

extension Request {
    /// Decodes a JSON body of at most `limit` bytes, with errors that name the field at fault.
    ///
    /// Text Paperboy keeps may not hold NUL (PostgreSQL text cannot); unknown fields are ignored, NUL and
    /// all. So a body with a NUL escape is refused only when the decoded value, encoded again (known
    /// fields only), still has one.
    /// - Parameter allowedValues: for enum fields, the values to name when a body has another one.
    func decodeJSON<Value: Codable>(_ type: Value.Type, limit: Int, allowedValues: [String: String] = [:]) async throws -> Value {
        let body: ByteBuffer
        do {
            body = try await self.body.collect(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError.bodyTooLarge(limit: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.bodyTooLarge(limit: limit)
        }
        guard body.readableBytes > 0 else {
            throw APIError(.badRequest, code: .invalidJSON, field: "body", message: "the request needs a JSON body")
        }
        // Deeply nested JSON costs the decoder stack and time for no field Paperboy has: refuse it unread.
        if body.readableBytesView.jsonNestingExceeds(JSONNesting.maxDepth) {
            throw APIError.invalid("body", "the body nests arrays and objects deeper than \(JSONNesting.maxDepth) levels")
        }
        let value: Value
        do {
            value = try JSONDecoder().decode(Value.self, from: Data(body.readableBytesView))
        } catch let error as DecodingError {
            var apiError = APIError(decoding: error)
            if apiError.code == .invalidValue, let field = apiError.field, let allowed = allowedValues[field] {
                apiError.message = "\(field) must be one of: \(allowed)"
            }
            throw apiError
        }
        // PostgreSQL text cannot hold NUL; refuse it here, as a bad request, rather than fail at the database.
        if body.readableBytesView.containsNULEscape, try ByteBuffer(bytes: JSONEncoder().encode(value)).readableBytesView.containsNULEscape {
            throw APIError.invalid("body", "text in the body may not contain the NUL character (\\u0000)")
        }
        return value
    }
}

extension APIError {
    static func bodyTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, code: .bodyTooLarge, field: "body", message: "the request body is larger than \(limit) bytes")
    }

    /// Maps a decoding failure to a 400 that names the field, as a JSON path (`subscriptions[1]`).
    init(decoding error: DecodingError) {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            var path = ""
            for key in codingPath + (last.map { [$0] } ?? []) {
                if let index = key.intValue {
                    path += "[\(index)]"
                } else {
                    path += path.isEmpty ? key.stringValue : "." + key.stringValue
                }
            }
            return path.isEmpty ? "body" : path
        }
        switch error {
        case .keyNotFound(let key, let context):
            self.init(
                .badRequest,
                code: .missingField,
                field: path(context.codingPath, key),
                message: "\(path(context.codingPath, key)) is required"
            )
        case .valueNotFound(_, let context):
            self.init(.badRequest, code: .missingField, field: path(context.codingPath), message: "\(path(context.codingPath)) must not be null")
        case .typeMismatch(let type, let context):
            self.init(
                .badRequest,
                code: .wrongType,
                field: path(context.codingPath),
                message: "\(path(context.codingPath)) must be \(Self.jsonTypeName(type))"
            )
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            self.init(.badRequest, code: .invalidJSON, field: "body", message: "the body is not valid JSON")
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            self.init(.badRequest, code: .invalidValue, field: field, message: "\(field) has a value that is not allowed")
        @unknown default:
            self.init(.badRequest, code: .invalidJSON, field: "body", message: "the body could not be read")
        }
    }

    private static func jsonTypeName(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: "a boolean"
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Double.Type: "a number"
        case is [String].Type, is [Any].Type: "an array"
        default: "an object"
        }
    }
}

extension ByteBufferView {
    /// Whether the JSON text has a `\u0000` escape (any case), the only way JSON writes NUL in a string.
    var containsNULEscape: Bool {
        let bytes = Array(self)
        var index = 0
        while index + 5 < bytes.count {
            if bytes[index] == UInt8(ascii: "\\") {
                // A `\\` pair is an escaped backslash, not the start of an escape.
                if bytes[index + 1] == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if bytes[index + 1] == UInt8(ascii: "u"), bytes[index + 2] == UInt8(ascii: "0"), bytes[index + 3] == UInt8(ascii: "0"),
                    bytes[index + 4] == UInt8(ascii: "0"), bytes[index + 5] == UInt8(ascii: "0")
                {
                    return true
                }
            }
            index += 1
        }
        return false
    }
}

/// The deepest nesting of JSON arrays and objects a request body may have.
enum JSONNesting {
    static let maxDepth = 32
}

extension Sequence<UInt8> {
    /// Whether JSON text opens more than `limit` arrays or objects inside one another, counting `[` and `{`
    /// outside strings. Does not validate the JSON: the decoder does that, once this has passed.
    func jsonNestingExceeds(_ limit: Int) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in self {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth = Swift.max(0, depth - 1)
            default:
                break
            }
        }
        return false
    }
}
