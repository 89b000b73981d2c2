import Hummingbird

extension APIError {
    /// What went wrong, as clients match on it: the `code` of the JSON error body. The values are the
    /// ones `openapi.yaml` lists for `Error.error.code`; ``http(_:)`` covers the statuses Hummingbird itself
    /// answers that have no code of their own.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// The body is not JSON, or not readable.
        public static let invalidJSON = Code(rawValue: "invalid_json")
        /// A required field is absent or null.
        public static let missingField = Code(rawValue: "missing_field")
        /// A field has the wrong JSON type.
        public static let wrongType = Code(rawValue: "wrong_type")
        /// A field, parameter or header has a value that is not allowed.
        public static let invalidValue = Code(rawValue: "invalid_value")
        /// The device key or the admin token is missing or wrong.
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// No such route, device, edition, broadcast or publication.
        public static let notFound = Code(rawValue: "not_found")
        /// The path exists, the method does not (405, with `Allow`).
        public static let methodNotAllowed = Code(rawValue: "method_not_allowed")
        /// The request contradicts what is stored.
        public static let conflict = Code(rawValue: "conflict")
        /// The body is larger than the route accepts (413).
        public static let bodyTooLarge = Code(rawValue: "body_too_large")
        /// Over the per-client limit (429, with `Retry-After`).
        public static let rateLimited = Code(rawValue: "rate_limited")
        /// `/health/ready` on a public listener: not ready. Why is in the server's log and metrics, and on the admin
        /// listener's `/health/ready`, never told to strangers.
        public static let notReady = Code(rawValue: "not_ready")
        /// `/health/ready`: the database did not answer in time.
        public static let databaseUnavailable = Code(rawValue: "database_unavailable")
        /// `/health/ready`: the database lacks migrations this binary has.
        public static let migrationsPending = Code(rawValue: "migrations_pending")
        /// `/health/ready`: the database has migrations this binary does not know.
        public static let migrationsMismatch = Code(rawValue: "migrations_mismatch")
        /// `/health/ready`: this process's dispatcher cannot send for an app (its credentials cannot be loaded
        /// here, or the provider refuses them).
        public static let cannotSend = Code(rawValue: "cannot_send")
        /// The server failed; the detail is in its log only.
        public static let `internal` = Code(rawValue: "internal")

        /// `http_<status>`: a status Hummingbird answered that has no code of its own.
        public static func http(_ status: HTTPResponse.Status) -> Code {
            Code(rawValue: "http_\(status.code)")
        }

        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }
}
