import Foundation

/// An edition as the newsroom publishes it: which publication and day, until when it is worth
/// downloading, and per image tier the bundles to fetch, plus the page list.
///
/// Dates stay text as published so that validation can name the field at fault and the deadline keeps
/// the newsroom's offset (`2026-11-23T09:00:00+09:00`).
public struct EditionManifest: Codable, Equatable, Sendable {
    public struct Bundle: Codable, Equatable, Sendable {
        public var url: String
        public var bytes: Int64
        public var sha256: String

        public init(url: String, bytes: Int64, sha256: String) {
            self.url = url
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    public struct Tier: Codable, Equatable, Sendable {
        public var bundles: [Bundle]

        public init(bundles: [Bundle]) {
            self.bundles = bundles
        }
    }

    public struct Page: Codable, Equatable, Sendable {
        public var number: Int
        public var title: String?

        public init(number: Int, title: String? = nil) {
            self.number = number
            self.title = title
        }
    }

    /// The publication's id, e.g. `morning`.
    public var publication: String
    /// The day the edition is for, `YYYY-MM-DD`.
    public var issueDate: String
    /// An RFC 3339 time after which the edition is worthless and no push may be sent.
    public var deadline: String
    /// Bundles by tier name (`small`, `medium`, `large`).
    public var tiers: [String: Tier]
    public var pages: [Page]

    public init(publication: String, issueDate: String, deadline: String, tiers: [String: Tier], pages: [Page]) {
        self.publication = publication
        self.issueDate = issueDate
        self.deadline = deadline
        self.tiers = tiers
        self.pages = pages
    }
}

/// Why a manifest was refused; `field` is a JSON path into the published file, e.g.
/// `tiers.large.bundles[0].sha256`.
public struct EditionManifestError: Error, Equatable, CustomStringConvertible {
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}

extension EditionManifest {
    /// The deadline as an instant, if it is RFC 3339 text with an offset.
    public var deadlineDate: Date? {
        Self.parseDeadline(deadline)
    }

    /// Checks what JSON decoding cannot, in the order of the file's fields.
    ///
    /// - Parameter now: the publishing time; the deadline must be after it.
    /// - Returns: the deadline as an instant.
    @discardableResult
    public func validate(now: Date) throws(EditionManifestError) -> Date {
        guard !publication.isEmpty else {
            throw EditionManifestError(field: "publication", message: "publication must name a publication, like morning")
        }
        guard Self.isCalendarDate(issueDate) else {
            throw EditionManifestError(field: "issueDate", message: "issueDate must be a real date as YYYY-MM-DD, like 2026-11-23")
        }
        guard let deadlineDate else {
            throw EditionManifestError(field: "deadline", message: "deadline must be an RFC 3339 time with an offset, like 2026-11-23T09:00:00+09:00")
        }
        guard deadlineDate > now else {
            throw EditionManifestError(field: "deadline", message: "deadline has passed; an edition past its deadline cannot be sent")
        }
        guard !tiers.isEmpty else {
            throw EditionManifestError(field: "tiers", message: "an edition needs at least one tier of small, medium, large")
        }
        for name in tiers.keys.sorted() {
            guard ImageTier(rawValue: name) != nil else {
                throw EditionManifestError(field: "tiers.\(name)", message: "tier names are small, medium, large")
            }
            let bundles = tiers[name]?.bundles ?? []
            guard !bundles.isEmpty else {
                throw EditionManifestError(field: "tiers.\(name).bundles", message: "a tier needs at least one bundle")
            }
            for (index, bundle) in bundles.enumerated() {
                try bundle.validate(field: "tiers.\(name).bundles[\(index)]")
            }
        }
        var seen = Set<Int>()
        for (index, page) in pages.enumerated() {
            guard page.number >= 1 else {
                throw EditionManifestError(field: "pages[\(index)].number", message: "page numbers start at 1")
            }
            guard seen.insert(page.number).inserted else {
                throw EditionManifestError(field: "pages[\(index)].number", message: "page \(page.number) appears twice")
            }
        }
        if let gap = (1...max(pages.count, 1)).first(where: { !seen.contains($0) }), !pages.isEmpty {
            throw EditionManifestError(field: "pages", message: "pages must be numbered 1 to \(pages.count) without gaps; \(gap) is missing")
        }
        return deadlineDate
    }

    static func isCalendarDate(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.count == 10, parts.count == 3, parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]), year >= 1, (1...12).contains(month), day >= 1
        else { return false }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= days[month - 1]
    }

    static func parseDeadline(_ text: String) -> Date? {
        // RFC 3339 exactly: `YYYY-MM-DDTHH:MM:SS[.fraction]` then `Z` or `±HH:MM` (Foundation also takes `+0900`).
        guard text.wholeMatch(of: /\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})/) != nil else { return nil }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}

extension EditionManifest.Bundle {
    func validate(field: String) throws(EditionManifestError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), let host = components.host,
            !host.isEmpty
        else {
            throw EditionManifestError(field: "\(field).url", message: "url must be an absolute https URL")
        }
        // Plain http only for a CDN stand-in on this machine, as in development and tests.
        let local = ["127.0.0.1", "localhost"].contains(host.lowercased())
        guard scheme == "https" || (scheme == "http" && local) else {
            throw EditionManifestError(field: "\(field).url", message: "url must use https (http only for localhost)")
        }
        guard bytes > 0 else {
            throw EditionManifestError(field: "\(field).bytes", message: "bytes must be greater than 0")
        }
        guard sha256.utf8.count == 64, sha256.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) })
        else {
            throw EditionManifestError(field: "\(field).sha256", message: "sha256 must be 64 hexadecimal characters")
        }
    }
}
