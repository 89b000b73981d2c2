/// A request the store refused: invalid values, a conflict, or something missing.
///
/// `field` names the input at fault, in the API's camelCase, so that callers can pass it on.
public struct StoreError: Error, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case invalid
        case conflict
        case notFound
    }

    public var code: Code
    public var field: String?
    public var message: String

    public init(code: Code, field: String? = nil, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    public var description: String { field.map { "\($0): \(message)" } ?? message }
}
