import Foundation

/// The words of an app's edition alerts (the ready alert and the alert last resort), in the app's language:
/// a title and a body with placeholders that each edition fills in.
///
/// Both alerts are shown as written when the Notification Service Extension could not fetch the edition (no
/// extension, no network, its 30 seconds ran out), so the words must be true without a download: the edition
/// is *out*, not *ready on the phone*. The default says so. An extension that fetched and checked the bundle may
/// replace the body with its own "ready to read" line (docs/app-integration.md): only it knows that the download
/// worked.
///
/// Placeholders: `{publication}` (the publication's title, or its id when it has none), `{date}` (the issue date,
/// `2026-11-23`), `{year}`, `{month}` and `{day}` (its parts as numbers, `2026`, `11`, `23`, for a language's own
/// order: `{year}年{month}月{day}日`, `{day}/{month}/{year}`).
public struct EditionAlertText: Codable, Sendable, Equatable {
    public var title: String
    public var body: String

    /// English, true whether or not the extension fetched the edition.
    public static let standard = EditionAlertText(unchecked: "{publication}", body: "The edition of {date} is out. Open the app to read it.")

    /// The placeholders a text may use.
    public static let placeholders = ["publication", "date", "year", "month", "day"]
    /// The longest title and body, in UTF-8 bytes, with the placeholders filled in: the alert shares APNs' 4096
    /// bytes with the bundle URLs, and a lock screen shows about two lines of a body anyway.
    public static let maximumTitleBytes = 160
    public static let maximumBodyBytes = 400
    /// The longest publication title a text is filled in with (longer ones are cut), so that a text checked
    /// here cannot outgrow its limit with a long title.
    static let maximumPublicationBytes = 64

    /// - Throws: ``EditionAlertTextError`` naming `title` or `body`: empty, an unknown placeholder, or longer
    ///   than its limit once filled in with the longest values.
    public init(title: String, body: String) throws(EditionAlertTextError) {
        try Self.check(title, field: "title", limit: Self.maximumTitleBytes)
        try Self.check(body, field: "body", limit: Self.maximumBodyBytes)
        self.title = title
        self.body = body
    }

    /// Words as stored: they passed ``init(title:body:)`` when they were set.
    public init(unchecked title: String, body: String) {
        self.title = title
        self.body = body
    }

    /// The alert's title and body for one edition.
    public func filled(publication: String, issueDate: String) -> (title: String, body: String) {
        let values = Self.values(publication: publication, issueDate: issueDate)
        return (Self.fill(title, values), Self.fill(body, values))
    }

    static func values(publication: String, issueDate: String) -> [String: String] {
        var name = publication
        while name.utf8.count > maximumPublicationBytes { name.removeLast() }
        let parts = issueDate.split(separator: "-").map { String(Int($0) ?? 0) }
        return [
            "publication": name, "date": issueDate,
            "year": parts.count == 3 ? parts[0] : issueDate,
            "month": parts.count == 3 ? parts[1] : "",
            "day": parts.count == 3 ? parts[2] : "",
        ]
    }

    static func fill(_ text: String, _ values: [String: String]) -> String {
        var result = text
        for (name, value) in values {
            result = result.replacingOccurrences(of: "{\(name)}", with: value)
        }
        return result
    }

    private static func check(_ text: String, field: String, limit: Int) throws(EditionAlertTextError) {
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw EditionAlertTextError(field: field, message: "the alert's \(field) is empty")
        }
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let name = String(rest[rest.index(after: open)..<close])
            guard placeholders.contains(name) else {
                throw EditionAlertTextError(
                    field: field,
                    message: "the alert's \(field) has {\(name)}, which is no placeholder: use "
                        + placeholders.map { "{\($0)}" }.joined(separator: ", ")
                )
            }
            rest = rest[rest.index(after: close)...]
        }
        let longest = fill(text, values(publication: String(repeating: "W", count: maximumPublicationBytes), issueDate: "2026-11-23"))
        guard longest.utf8.count <= limit else {
            throw EditionAlertTextError(
                field: field,
                message: "the alert's \(field) is \(longest.utf8.count) bytes with a 64-byte publication title filled in; at most \(limit)"
            )
        }
    }
}

/// Alert words that cannot be sent; `field` is `title` or `body`.
public struct EditionAlertTextError: Error, Equatable, CustomStringConvertible {
    public var field: String
    public var message: String

    public var description: String { message }
}
