import Foundation
import Logging
import PostgresNIO

/// Something devices subscribe to, e.g. the `morning` or `evening` edition of an app.
public struct Publication: Sendable, Codable, Equatable {
    public var id: Int
    public var appID: Int
    /// The name devices and editions use, e.g. `morning`.
    public var slug: String
    public var title: String?
    /// The content origin its broadcasts share (``ContentOrigin``), by name; nil: its broadcasts pace alone.
    public var origin: String?

    enum CodingKeys: String, CodingKey {
        case id
        case appID = "appId"
        case slug
        case title
        case origin
    }

    public init(id: Int, appID: Int, slug: String, title: String?, origin: String? = nil) {
        self.id = id
        self.appID = appID
        self.slug = slug
        self.title = title
        self.origin = origin
    }
}

/// Publications in PostgreSQL.
public struct PublicationRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Declares a publication of an app, sharing the capacity of the content origin named `origin` if given.
    /// - Throws: ``StoreError``: invalid `slug`, a conflict, not found naming `app` or `origin`.
    public func add(
        appID: Int,
        slug: String,
        title: String?,
        origin: String? = nil,
        audit: AuditEntry? = nil,
        logger: Logger
    ) async throws -> Publication {
        guard slug.range(of: #"^[a-z0-9][a-z0-9_-]{0,62}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "slug", message: "a publication id is lower-case letters, digits, '-' and '_', like morning")
        }
        let originID = try await originID(named: origin, logger: logger)
        do {
            let id = try await client.audited(audit, logger: logger) { runner -> Int? in
                let rows = try await runner.run(
                    "INSERT INTO publications (app_id, slug, title, origin_id) VALUES (\(appID), \(slug), \(title), \(originID)) RETURNING id",
                    logger: logger
                )
                for try await id in rows.decode(Int.self) { return id }
                return nil
            }
            if let id { return Publication(id: id, appID: appID, slug: slug, title: title, origin: origin) }
        } catch let error as PSQLError where error.isUniqueViolation() {
            throw StoreError(code: .conflict, field: "slug", message: "app \(appID) has a publication \(slug) already")
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23503" {
            throw StoreError(code: .notFound, field: "app", message: "there is no app \(appID)")
        }
        throw StoreError(code: .conflict, message: "the publication was not created")
    }

    /// Points the publication at the content origin named `origin`, or at none: its broadcasts share that origin's
    /// capacity from their next batch on.
    /// - Returns: the publication as now stored.
    /// - Throws: ``StoreError`` not found naming `origin` or `publication`.
    public func setOrigin(_ publication: Publication, origin: String?, audit: AuditEntry? = nil, logger: Logger) async throws -> Publication {
        let originID = try await originID(named: origin, logger: logger)
        try await client.audited(audit, logger: logger) { runner in
            _ = try await runner.run("UPDATE publications SET origin_id = \(originID) WHERE id = \(publication.id)", logger: logger)
        }
        guard let stored = try await find(appID: publication.appID, slug: publication.slug, logger: logger) else {
            throw StoreError(code: .notFound, field: "publication", message: "there is no publication \(publication.slug)")
        }
        return stored
    }

    private func originID(named name: String?, logger: Logger) async throws -> Int? {
        guard let name else { return nil }
        let rows = try await client.query("SELECT id FROM origins WHERE name = \(name)", logger: logger)
        for try await id in rows.decode(Int.self) { return id }
        throw StoreError(code: .notFound, field: "origin", message: "there is no origin \(name); add it with paperboy origins add")
    }

    /// The publication of an app with this slug, if any.
    public func find(appID: Int, slug: String, logger: Logger) async throws -> Publication? {
        let rows = try await client.query(
            "SELECT p.id, p.title, o.name FROM publications p LEFT JOIN origins o ON o.id = p.origin_id WHERE p.app_id = \(appID) AND p.slug = \(slug)",
            logger: logger
        )
        for try await (id, title, origin) in rows.decode((Int, String?, String?).self) {
            return Publication(id: id, appID: appID, slug: slug, title: title, origin: origin)
        }
        return nil
    }

    /// The one publication named `slug`: of app `appID`, or of any app when `appID` is nil.
    ///
    /// Operators name publications by slug; without an app the slug must be unique across apps, so that a
    /// command never picks one of two apps' `morning` by accident.
    /// - Throws: `StoreError` `.notFound` (field `publication`) when there is none, `.invalid` (field
    ///   `app`) when several apps have one.
    public func resolve(slug: String, appID: Int?, logger: Logger) async throws -> Publication {
        let publications = try await list(appID: appID, logger: logger).filter { $0.slug == slug }
        switch publications.count {
        case 0:
            let scope = appID.map { " of app \($0)" } ?? ""
            throw StoreError(code: .notFound, field: "publication", message: "there is no publication \(slug)\(scope)")
        case 1:
            return publications[0]
        default:
            let apps = publications.map { "\($0.appID)" }.joined(separator: ", ")
            throw StoreError(code: .invalid, field: "app", message: "apps \(apps) each have a publication \(slug); name the app")
        }
    }

    /// The publications of one app, or of every app when `appID` is nil.
    public func list(appID: Int? = nil, logger: Logger) async throws -> [Publication] {
        let select = "SELECT p.id, p.app_id, p.slug, p.title, o.name FROM publications p LEFT JOIN origins o ON o.id = p.origin_id"
        let rows =
            if let appID {
                try await client.query(
                    PostgresQuery(unsafeSQL: select + " WHERE p.app_id = $1 ORDER BY p.slug", binds: Self.binds(appID)),
                    logger: logger
                )
            } else {
                try await client.query(PostgresQuery(unsafeSQL: select + " ORDER BY p.app_id, p.slug"), logger: logger)
            }
        var publications: [Publication] = []
        for try await (id, app, slug, title, origin) in rows.decode((Int, Int, String, String?, String?).self) {
            publications.append(Publication(id: id, appID: app, slug: slug, title: title, origin: origin))
        }
        return publications
    }

    private static func binds(_ value: Int) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 1)
        binds.append(value)
        return binds
    }
}
