import Foundation

/// An answer of Paperboy's API that was not a success, or no answer at all.
public struct PaperboyAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status; nil when no answer came (no network, a timeout).
    public var status: Int?
    /// The error's `code` (`missing_field`, `not_found`, `rate_limited`, …), when the body had one.
    public var code: String?
    /// The input at fault (`token`, `editionId`, `subscriptions[1]`, …), when there is one.
    public var field: String?
    public var message: String
    /// `Retry-After`, in seconds, of a 429.
    public var retryAfter: Int?

    public init(status: Int?, code: String? = nil, field: String? = nil, message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.field = field
        self.message = message
        self.retryAfter = retryAfter
    }

    /// `error` as the API's error: itself when it is one (every call of ``PaperboyAPIClient`` throws only these),
    /// else as no answer.
    public init(_ error: any Error) {
        self = error as? PaperboyAPIError ?? PaperboyAPIError(status: nil, message: "\(error)")
    }

    /// What to do about it.
    public var reaction: APIReaction {
        guard let status else { return .retryLater }
        return .to(status: status, field: field, retryAfter: retryAfter)
    }

    public var description: String {
        let what = status.map { "HTTP \($0)" } ?? "no answer"
        return [what, code, field.map { "field \($0)" }, message].compactMap { $0 }.joined(separator: ": ")
    }
}
