import Foundation

/// Values read from a request's path, query or form, each bounded where it is read and refused naming its field: one
/// parser for the device API, the admin API and the console, with the bounds openapi.yaml states and the CLI's flags
/// keep (ids of the database's `integer` keys, UUIDs, whole numbers in a range, publication ids, choices). Nothing here
/// can trap on input: every number is checked for its digits and length before it is converted.
public enum RequestValue {
    /// A value refused: the field it came in, and why, in words for the person or program that sent it.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var field: String
        public var message: String

        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }

        public var description: String { "\(field): \(message)" }
    }

    /// The largest id of an `integer` key.
    public static let maximumID = Int(Int32.max)

    /// An id of an `integer` key (apps, API keys, schedules): digits only, 1 to 2,147,483,647.
    /// - Parameter what: how the refusal describes the value, e.g. "an app id is a whole number from 1 (see GET /v1/apps)".
    public static func id(_ text: String?, field: String, what: String) throws(Refusal) -> Int {
        guard let value = digits(text, upTo: 10), (1...maximumID).contains(value) else { throw Refusal(field: field, message: what) }
        return value
    }

    /// An id of a `bigint` key (console sessions): digits only, 1 to 9,223,372,036,854,775,807.
    public static func bigID(_ text: String?, field: String, what: String) throws(Refusal) -> Int64 {
        guard let text, !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = Int64(text), value >= 1
        else { throw Refusal(field: field, message: what) }
        return value
    }

    /// A UUID (broadcasts, editions), in its 36-character form.
    public static func uuid(_ text: String?, field: String, what: String) throws(Refusal) -> UUID {
        guard let text, text.utf8.count == 36, let value = UUID(uuidString: text) else { throw Refusal(field: field, message: what) }
        return value
    }

    /// A whole number within `range`, written as digits (with a leading `-` where the range allows it), spaces
    /// around it ignored.
    public static func integer(_ text: String?, field: String, in range: ClosedRange<Int>) throws(Refusal) -> Int {
        let trimmed = text?.trimmingCharacters(in: .whitespaces) ?? ""
        let negative = trimmed.hasPrefix("-")
        guard let magnitude = digits(negative ? String(trimmed.dropFirst()) : trimmed, upTo: 18),
            case let value = negative ? -magnitude : magnitude, range.contains(value)
        else {
            throw Refusal(field: field, message: "a whole number from \(range.lowerBound) to \(range.upperBound), not \(quoted(text))")
        }
        return value
    }

    /// A publication's id as publications are made (lower-case letters, digits, `-` and `_`, 1 to 63 characters).
    public static func publication(_ text: String?, field: String = "publication") throws(Refusal) -> String {
        guard let text, !text.isEmpty, text.utf8.count <= 63,
            text.utf8.enumerated().allSatisfy({ index, byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || (index > 0 && (byte == 0x2D || byte == 0x5F))
            })
        else {
            throw Refusal(field: field, message: "a publication id is lower-case letters, digits, '-' and '_' (at most 63), like morning")
        }
        return text
    }

    /// One of `Choice`'s raw values, compared without case and surrounding spaces.
    public static func choice<Choice: RawRepresentable & CaseIterable>(_ text: String?, field: String, as type: Choice.Type) throws(Refusal) -> Choice
    where Choice.RawValue == String {
        let trimmed = text?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard trimmed.utf8.count <= 64, let value = Choice(rawValue: trimmed) else {
            let names = Choice.allCases.map(\.rawValue).joined(separator: " or ")
            throw Refusal(field: field, message: "\(names), not \(quoted(text))")
        }
        return value
    }

    /// `text` as a non-negative number when it is 1 to `limit` ASCII digits.
    private static func digits(_ text: String?, upTo limit: Int) -> Int? {
        guard let text, !text.isEmpty, text.utf8.count <= limit, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// A refused value as the refusal quotes it: at most 40 code points, so that a megabyte of input is not echoed.
    static func quoted(_ text: String?) -> String {
        guard let text else { return "nothing" }
        return text.codePoints > 40 ? "\"\(text.clipped(toCodePoints: 40))…\"" : "\"\(text)\""
    }
}
