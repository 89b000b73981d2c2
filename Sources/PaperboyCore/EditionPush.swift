import Foundation

/// The app's keys of an edition's push: which edition, where its manifest is, the device's tier, what
/// to fetch first, and the push's wave. One kind of push for every device of a tier, so the app does the same
/// work whichever push iOS lets run.
///
/// ```json
/// {"edition":"…","manifest":"/v1/editions/…","tier":"large","deadline":"2026-11-23T09:00:00+09:00",
///  "fetch":["https://cdn.example.com/…/large-1.zip", …],"wave":1,"sentAt":"2026-11-22T20:05:09Z"}
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
    /// When Paperboy sent the push, RFC 3339 in UTC to the second: the app's `secondsFromPush` is the time from
    /// it to the run. On iOS the app runs when the push arrives, so only the send time measures how long the
    /// system held the push. Absent from a push built without its send instant.
    public var sentAt: String?
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
        case edition, manifest, tier, deadline, fetch, wave, sentAt
        case extensionLimits = "extension"
    }

    /// The largest wave a push may carry: `deliveries.wave` is a smallint. Pushes are checked against APNs'
    /// and FCM's size limits with it, so that no wave's push is larger than the one checked.
    public static let largestWave = Int(Int16.max)

    public init(edition: Edition, tier: ImageTier, wave: Int, sentAt: Date? = nil) {
        self.edition = edition.id.uuidString.lowercased()
        self.manifest = "/v1/editions/\(self.edition)"
        self.tier = tier.rawValue
        self.deadline = edition.manifest.deadline
        self.fetch = edition.manifest.tiers[tier.rawValue]?.bundles.map(\.url) ?? []
        self.wave = wave
        self.sentAt = sentAt.map(Self.sentAtText)
    }

    /// The keys of an alert for a Notification Service Extension (the ready alert, and the alert last resort to an
    /// iOS device): the small tier's bundles to fetch, and the extension's limits to fetch them in. The extension
    /// has about 30 seconds and 24 MB: the device's own tier (a large one is tens of MB) would not fit.
    public static func ready(edition: Edition, wave: Int, sentAt: Date? = nil) -> EditionPush {
        var push = EditionPush(edition: edition, tier: .small, wave: wave, sentAt: sentAt)
        push.extensionLimits = ExtensionLimits()
        return push
    }

    /// `sentAt`'s text: RFC 3339, UTC, whole seconds (always 20 characters, so a push checked with one instant
    /// is as large as with any other).
    public static func sentAtText(_ instant: Date) -> String {
        instant.formatted(Date.ISO8601FormatStyle())
    }
}

extension EditionPush {
    /// The same keys as FCM data (string to string): `fetch` (and `extension`) are their JSON as text, `wave` its
    /// digits. An Android app (or an
    /// iOS app registered through FCM) reads the same fields as from the APNs payload.
    /// - Throws: when `fetch` cannot be encoded: never an empty list in its place, which would send the device
    ///   nothing to download.
    public func fcmData() throws -> [String: String] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let fetchText = String(decoding: try encoder.encode(fetch), as: UTF8.self)
        var data = ["edition": edition, "manifest": manifest, "tier": tier, "deadline": deadline, "fetch": fetchText, "wave": String(wave)]
        data["sentAt"] = sentAt
        if let extensionLimits {
            encoder.outputFormatting = [.sortedKeys]
            data["extension"] = String(decoding: try encoder.encode(extensionLimits), as: UTF8.self)
        }
        return data
    }
}
