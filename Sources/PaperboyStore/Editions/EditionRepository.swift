import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Published editions in PostgreSQL. The manifest is kept as JSONB, as published.
public struct EditionRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Validates and stores an edition of a publication, with a new id.
    ///
    /// - Parameters:
    ///   - appID: the app whose publication it is; may be nil when only one app has a publication by
    ///     that id.
    ///   - now: the publishing time the deadline must be after.
    ///   - check: refuses an edition that cannot be sent (a push over APNs' limit), before anything is stored.
    /// - Throws: `StoreError` naming `issueDate` when the publication has an edition for that day already
    ///   (nothing is changed), `publication` when it is not known, `app` when it is ambiguous; what `check` throws.
    public func publish(
        _ manifest: EditionManifest,
        appID: Int?,
        now: Date = Date(),
        check: (Edition) throws -> Void = { _ in },
        audit: AuditEntry? = nil,
        logger: Logger
    ) async throws -> Edition {
        let deadline: Date
        do {
            deadline = try manifest.validate(now: now)
        } catch {
            throw StoreError(code: .invalid, field: error.field, message: error.message)
        }
        let publication = try await PublicationRepository(client: client).resolve(slug: manifest.publication, appID: appID, logger: logger)
        let id = UUID()
        // Checked in the app's alert words, which its alerts will carry.
        var alertText = EditionAlertText.standard
        for try await (title, body) in try await client.query(
            "SELECT alert_title, alert_body FROM apps WHERE id = \(publication.appID)",
            logger: logger
        ).decode((String?, String?).self) {
            alertText = AppRepository.alertText(title: title, body: body) ?? .standard
        }
        let checked = Edition(
            id: id,
            appID: publication.appID,
            manifest: manifest,
            deadline: deadline,
            publishedAt: now,
            publicationTitle: publication.title,
            alertText: alertText
        )
        try check(checked)
        let json = String(decoding: try Self.encoder.encode(manifest), as: UTF8.self)
        do {
            let published = try await client.audited(audit, logger: logger) { runner -> Date? in
                let rows = try await runner.run(
                    """
                    INSERT INTO editions (id, publication_id, issue_date, deadline, manifest)
                    VALUES (\(id), \(publication.id), \(manifest.issueDate)::date, \(deadline), \(json)::jsonb)
                    RETURNING published_at
                    """,
                    logger: logger
                )
                for try await publishedAt in rows.decode(Date.self) { return publishedAt }
                return nil
            } entry: { entry, published in
                guard published != nil else { return nil }
                var entry = entry
                entry.appID = publication.appID
                entry.editionID = id
                return entry
            }
            if let published {
                var edition = checked
                edition.publishedAt = published
                return edition
            }
        } catch let error as PSQLError where error.isUniqueViolation() {
            throw StoreError(
                code: .conflict,
                field: "issueDate",
                message: "\(manifest.publication) has an edition for \(manifest.issueDate) already"
            )
        }
        throw StoreError(code: .conflict, message: "the edition was not stored")
    }

    /// The edition with this id, if any.
    public func find(id: UUID, logger: Logger) async throws -> Edition? {
        try await select(
            "SELECT \(unescaped: Self.columns) FROM \(unescaped: Self.tables) WHERE e.id = \(id)",
            logger: logger
        ).first
    }

    /// The most recently published edition of a publication of an app, if any.
    public func latest(appID: Int, publication: String, logger: Logger) async throws -> Edition? {
        try await select(
            """
            SELECT \(unescaped: Self.columns) FROM \(unescaped: Self.tables)
            WHERE p.app_id = \(appID) AND p.slug = \(publication)
            ORDER BY e.published_at DESC, e.issue_date DESC LIMIT 1
            """,
            logger: logger
        ).first
    }

    /// Editions, newest first, optionally of one publication (of one app).
    public func list(appID: Int? = nil, publication: String? = nil, limit: Int = 50, logger: Logger) async throws -> [Edition] {
        try await select(
            """
            SELECT \(unescaped: Self.columns) FROM \(unescaped: Self.tables)
            WHERE (\(appID)::integer IS NULL OR p.app_id = \(appID)) AND (\(publication)::text IS NULL OR p.slug = \(publication))
            ORDER BY e.published_at DESC, e.issue_date DESC LIMIT \(limit)
            """,
            logger: logger
        )
    }

    /// An edition's columns, with its publication's title and its app's alert words (what its alerts say).
    static let columns = "e.id, p.app_id, e.manifest::text, e.deadline, e.published_at, p.title, a.alert_title, a.alert_body"
    static let tables = "editions e JOIN publications p ON p.id = e.publication_id JOIN apps a ON a.id = p.app_id"

    private func select(_ query: PostgresQuery, logger: Logger) async throws -> [Edition] {
        let rows = try await client.query(query, logger: logger)
        var editions: [Edition] = []
        for try await (id, appID, manifest, deadline, publishedAt, title, alertTitle, alertBody) in rows.decode(
            (UUID, Int, String, Date, Date, String?, String?, String?).self
        ) {
            let manifest = try JSONDecoder().decode(EditionManifest.self, from: Data(manifest.utf8))
            editions.append(
                Edition(
                    id: id,
                    appID: appID,
                    manifest: manifest,
                    deadline: deadline,
                    publishedAt: publishedAt,
                    publicationTitle: title,
                    alertText: AppRepository.alertText(title: alertTitle, body: alertBody) ?? .standard
                )
            )
        }
        return editions
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
