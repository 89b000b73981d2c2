import Foundation

/// The app's keys of an edition's push: which edition, where its manifest is, the device's tier, what
/// to fetch first, and the push's wave. One kind of push for every device of a tier, so the app does the same
/// work whichever push iOS lets run.
///
/// ```json
/// {"edition":"…","manifest":"/v1/editions/…","tier":"large","deadline":"2026-11-23T09:00:00+09:00",
///  "fetch":["https://cdn.example.com/…/large-1.zip", …],"wave":1}
/// ```
public struct EditionPush: Codable, Sendable, Equatable {
    /// The edition id (lowercase UUID).
    public var edition: String
    /// The manifest's path on Paperboy's API (`GET /v1/editions/{id}`), relative to the API the app uses.
    public var manifest: String
    public var tier: String
    /// The edition's deadline as published: after it the app should not bother.
    public var deadline: String
    /// The tier's bundle URLs in the manifest's order: the order to fetch them in.
    public var fetch: [String]
    /// The broadcast's wave this push belongs to (1 for the first). The app echoes it in its receipt (`wave`),
    /// so that a receipt counts for the push that ran, not an earlier one iOS dropped: what wake rates per
    /// wave are measured with. A few bytes of the 4096.
    public var wave: Int
    /// Only in the ready alert (``ready(edition:wave:)``): the limits of the Notification Service Extension
    /// that fetches `fetch`, the small tier's bundles. JSON key `extension`.
    public var extensionLimits: ExtensionLimits?

    /// What a Notification Service Extension has: about 30 seconds from the alert's arrival before iOS shows
    /// it as it is, and little memory (24 MB on current iOS): the small tier, streamed to disk, fits.
    public struct ExtensionLimits: Codable, Sendable, Equatable {
        public var seconds: Int
        public var megabytes: Int

        public init(seconds: Int = 30, megabytes: Int = 24) {
            self.seconds = seconds
            self.megabytes = megabytes
        }
    }

    enum CodingKeys: String, CodingKey {
        case edition, manifest, tier, deadline, fetch, wave
        case extensionLimits = "extension"
    }

    /// The largest wave a push may carry: `deliveries.wave` is a smallint. Pushes are checked against APNs'
    /// and FCM's size limits with it, so that no wave's push is larger than the one checked.
    public static let largestWave = Int(Int16.max)

    public init(edition: Edition, tier: ImageTier, wave: Int) {
        self.edition = edition.id.uuidString.lowercased()
        self.manifest = "/v1/editions/\(self.edition)"
        self.tier = tier.rawValue
        self.deadline = edition.manifest.deadline
        self.fetch = edition.manifest.tiers[tier.rawValue]?.bundles.map(\.url) ?? []
        self.wave = wave
    }

    /// The ready alert's keys: the small tier's bundles to fetch, and the extension's limits to fetch them in.
    public static func ready(edition: Edition, wave: Int) -> EditionPush {
        var push = EditionPush(edition: edition, tier: .small, wave: wave)
        push.extensionLimits = ExtensionLimits()
        return push
    }
}

extension EditionPush {
    /// The same keys as FCM data (string to string): `fetch` is its JSON array as text. An Android app (or an
    /// iOS app registered through FCM) reads the same fields as from the APNs payload.
    /// - Throws: when `fetch` cannot be encoded: never an empty list in its place, which would send the device
    ///   nothing to download.
    public func fcmData() throws -> [String: String] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let fetchText = String(decoding: try encoder.encode(fetch), as: UTF8.self)
        return ["edition": edition, "manifest": manifest, "tier": tier, "deadline": deadline, "fetch": fetchText, "wave": String(wave)]
    }
}
