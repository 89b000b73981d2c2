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

    enum CodingKeys: String, CodingKey {
        case id
        case appID = "appId"
        case slug
        case title
    }
}

/// Publications in PostgreSQL.
public struct PublicationRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Declares a publication of an app.
    public func add(appID: Int, slug: String, title: String?, logger: Logger) async throws -> Publication {
        guard slug.range(of: #"^[a-z0-9][a-z0-9_-]{0,62}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "slug", message: "a publication id is lower-case letters, digits, '-' and '_', like morning")
        }
        do {
            let rows = try await client.query(
                "INSERT INTO publications (app_id, slug, title) VALUES (\(appID), \(slug), \(title)) RETURNING id",
                logger: logger
            )
            for try await id in rows.decode(Int.self) {
                return Publication(id: id, appID: appID, slug: slug, title: title)
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw StoreError(code: .conflict, field: "slug", message: "app \(appID) has a publication \(slug) already")
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23503" {
            throw StoreError(code: .notFound, field: "app", message: "there is no app \(appID)")
        }
        throw StoreError(code: .conflict, message: "the publication was not created")
    }

    /// The publication of an app with this slug, if any.
    public func find(appID: Int, slug: String, logger: Logger) async throws -> Publication? {
        let rows = try await client.query(
            "SELECT id, title FROM publications WHERE app_id = \(appID) AND slug = \(slug)",
            logger: logger
        )
        for try await (id, title) in rows.decode((Int, String?).self) {
            return Publication(id: id, appID: appID, slug: slug, title: title)
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
        let rows =
            if let appID {
                try await client.query("SELECT id, app_id, slug, title FROM publications WHERE app_id = \(appID) ORDER BY slug", logger: logger)
            } else {
                try await client.query("SELECT id, app_id, slug, title FROM publications ORDER BY app_id, slug", logger: logger)
            }
        var publications: [Publication] = []
        for try await (id, app, slug, title) in rows.decode((Int, Int, String, String?).self) {
            publications.append(Publication(id: id, appID: app, slug: slug, title: title))
        }
        return publications
    }
}
