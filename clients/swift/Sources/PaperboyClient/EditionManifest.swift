import Foundation

/// An edition as `GET /v1/editions/{id}` (the push's `manifest`) and `GET /v1/editions/latest` answer it: per
/// tier its bundles with their sizes and SHA-256, and the pages. Tiers the edition lacks are absent.
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

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        publication = try container.decode(String.self, forKey: .publication)
        issueDate = try container.decode(String.self, forKey: .issueDate)
        deadline = try container.decode(String.self, forKey: .deadline)
        pages = try container.decodeIfPresent([Page].self, forKey: .pages) ?? []
        // Keyed by name: a tier a later Paperboy adds is skipped here, not an error.
        let named = try container.decode([String: Tier].self, forKey: .tiers)
        var tiers: [ImageTier: [Bundle]] = [:]
        for (name, tier) in named {
            if let known = ImageTier(rawValue: name) { tiers[known] = tier.bundles }
        }
        self.tiers = tiers
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
