import Foundation

/// A published edition: its manifest as published, with the id Paperboy assigned and when it was
/// published. Encodes flat, as the API and `paperboy editions show --json` present it.
public struct Edition: Equatable, Sendable, Encodable {
    public var id: UUID
    /// The app whose publication this is.
    public var appID: Int
    public var manifest: EditionManifest
    public var deadline: Date
    public var publishedAt: Date
    /// The publication's title (`paperboy publications add --title`), when it has one: what the alerts name.
    public var publicationTitle: String?
    /// The app's words for the edition's alerts, as they were when the edition was read: the dispatcher reads
    /// the edition for every batch, so a change of the app's words reaches the next batch. Not in the API's
    /// edition (``encode(to:)``).
    public var alertText: EditionAlertText

    public init(
        id: UUID,
        appID: Int,
        manifest: EditionManifest,
        deadline: Date,
        publishedAt: Date,
        publicationTitle: String? = nil,
        alertText: EditionAlertText = .standard
    ) {
        self.id = id
        self.appID = appID
        self.manifest = manifest
        self.deadline = deadline
        self.publishedAt = publishedAt
        self.publicationTitle = publicationTitle
        self.alertText = alertText
    }

    /// The edition's alert title and body in its app's words.
    public var alert: (title: String, body: String) {
        alertText.filled(publication: publicationTitle ?? manifest.publication, issueDate: manifest.issueDate)
    }

    enum CodingKeys: String, CodingKey {
        case id, appId, publication, issueDate, deadline, tiers, pages, publishedAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(appID, forKey: .appId)
        try container.encode(manifest.publication, forKey: .publication)
        try container.encode(manifest.issueDate, forKey: .issueDate)
        try container.encode(manifest.deadline, forKey: .deadline)
        try container.encode(manifest.tiers, forKey: .tiers)
        try container.encode(manifest.pages, forKey: .pages)
        // Text, not Date, so the shape does not depend on the encoder's date strategy.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        try container.encode(formatter.string(from: publishedAt), forKey: .publishedAt)
    }
}
