import Foundation

/// An edition as `GET /v1/editions/{id}` (the push's `manifest`) and `GET /v1/editions/latest` answer it: per
/// tier its bundles with their sizes and SHA-256, and the pages. Tiers the edition lacks are absent.
///
/// Checked when decoded, before anything is downloaded (as the Android client does; clients/vectors/editions/refused.json):
/// the id a UUID, the deadline RFC 3339, every bundle's url an absolute http(s) URL, its bytes above 0, its sha256 64
/// hexadecimal characters (kept in lowercase), every page's number above 0. Anything else throws ``Refusal`` naming
/// the field: such an edition cannot be downloaded and checked (post `failed`; the server refuses it on publish).
public struct EditionManifest: Decodable, Sendable, Equatable {
    public struct Bundle: Codable, Sendable, Equatable {
        public var url: URL
        /// The bundle's length: a download of another length failed.
        public var bytes: Int64
        /// Its SHA-256 in lowercase hex: a download with another digest failed (post `failed`).
        public var sha256: String

        public init(url: URL, bytes: Int64, sha256: String) {
            self.url = url
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    public struct Page: Codable, Sendable, Equatable {
        public var number: Int
        public var title: String?
    }

    struct Tier: Codable, Sendable, Equatable {
        var bundles: [Bundle]
    }

    /// The edition's id (lowercase UUID).
    public var id: String
    public var publication: String
    /// The day it is for, `YYYY-MM-DD`.
    public var issueDate: String
    /// RFC 3339 with the newsroom's offset, as published.
    public var deadline: String
    public var pages: [Page]
    /// The bundles per tier.
    public var tiers: [ImageTier: [Bundle]]

    enum CodingKeys: String, CodingKey {
        case id, publication, issueDate, deadline, pages, tiers
    }

    /// A manifest this client cannot download and check, naming the field at fault (a JSON path, as
    /// `tiers.large.bundles[0].sha256`).
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public var field: String
        public var problem: String

        public var description: String { "the edition's \(field) \(problem)" }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let id = try container.decode(String.self, forKey: .id)
        guard UUID(uuidString: id) != nil else { throw Refusal(field: "id", problem: "is not a UUID") }
        self.id = id.lowercased()
        publication = try container.decode(String.self, forKey: .publication)
        issueDate = try container.decode(String.self, forKey: .issueDate)
        deadline = try container.decode(String.self, forKey: .deadline)
        guard EditionWakeUp.date(deadline) != nil else { throw Refusal(field: "deadline", problem: "is not an RFC 3339 time") }
        pages = try container.decodeIfPresent([Page].self, forKey: .pages) ?? []
        for (index, page) in pages.enumerated() where page.number < 1 {
            throw Refusal(field: "pages[\(index)].number", problem: "is not a page number")
        }
        // Keyed by name: a tier a later Paperboy adds is skipped here, not an error.
        let named = try container.decode([String: Tier].self, forKey: .tiers)
        var tiers: [ImageTier: [Bundle]] = [:]
        for (name, tier) in named {
            guard let known = ImageTier(rawValue: name) else { continue }
            tiers[known] = try tier.bundles.enumerated().map { index, bundle in
                try Self.checked(bundle, "tiers.\(name).bundles[\(index)]")
            }
        }
        self.tiers = tiers
    }

    /// A bundle as it can be downloaded and checked, its sha256 in lowercase; or the refusal naming its field.
    static func checked(_ bundle: Bundle, _ path: String) throws -> Bundle {
        let scheme = bundle.url.scheme?.lowercased()
        guard scheme == "https" || scheme == "http", let host = bundle.url.host, !host.isEmpty else {
            throw Refusal(field: "\(path).url", problem: "is not an absolute http(s) URL")
        }
        guard bundle.bytes > 0 else { throw Refusal(field: "\(path).bytes", problem: "is not greater than 0") }
        let hex = bundle.sha256.lowercased()
        guard hex.utf8.count == 64, hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw Refusal(field: "\(path).sha256", problem: "is not 64 hexadecimal characters")
        }
        return Bundle(url: bundle.url, bytes: bundle.bytes, sha256: hex)
    }

    /// The deadline as a date; nil when it is not RFC 3339 (Paperboy refuses such editions).
    public var deadlineDate: Date? { EditionWakeUp.date(deadline) }

    /// What a device of `tier` downloads: its tier's bundles, or when the edition lacks them the nearest tier it
    /// has (``ImageTier/fallbackOrder``). Nil only for an edition without any bundle.
    public func plan(for tier: ImageTier) -> DownloadPlan? {
        for candidate in tier.fallbackOrder {
            if let bundles = tiers[candidate], !bundles.isEmpty {
                return DownloadPlan(tier: candidate, bundles: bundles, fellBack: candidate != tier)
            }
        }
        return nil
    }
}

/// The bundles a device downloads for an edition, and the tier they are of.
public struct DownloadPlan: Sendable, Equatable {
    public var tier: ImageTier
    public var bundles: [EditionManifest.Bundle]
    /// Whether the edition lacks the device's own tier and `tier` is the nearest it has.
    public var fellBack: Bool

    /// The bytes to download in all.
    public var bytes: Int64 { bundles.reduce(0) { $0 + $1.bytes } }
}
