import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// A content API (or CDN origin) that woken devices download from, with the wake-ups per second it serves: every
/// broadcast of a publication pointing at it shares that capacity (migration 0018).
public struct ContentOrigin: Sendable, Codable, Equatable {
    public var id: Int
    /// How operators name it, e.g. `content-api`.
    public var name: String
    /// Wake-ups per second, across every broadcast of its publications.
    public var capacity: Double
    public var createdAt: Date
    /// The publications that point at it, as `app/slug`.
    public var publications: [String]

    public init(id: Int, name: String, capacity: Double, createdAt: Date, publications: [String] = []) {
        self.id = id
        self.name = name
        self.capacity = capacity
        self.createdAt = createdAt
        self.publications = publications
    }
}

/// Content origins in PostgreSQL.
public struct OriginRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Checks a name and a capacity the way the database does.
    /// - Throws: ``StoreError`` naming `name` or `capacity`.
    public static func validate(name: String?, capacity: Double?) throws(StoreError) {
        if let name, name.range(of: #"^[a-z0-9][a-z0-9_-]{0,62}$"#, options: .regularExpression) == nil {
            throw StoreError(code: .invalid, field: "name", message: "an origin's name is lower-case letters, digits, '-' and '_', like content-api")
        }
        // The bounds of a broadcast's own capacity: a plan over 5e-324 wake-ups a second is infinitely long, and
        // building it trapped `serve` (schemathesis, issue 48).
        if let capacity, !(capacity.isFinite && BroadcastOptions.capacityRange.contains(capacity)) {
            throw StoreError(code: .invalid, field: "capacity", message: "the capacity is from 0.01 to 10,000,000 wake-ups per second")
        }
    }

    /// Declares an origin.
    /// - Throws: ``StoreError`` invalid (`name`, `capacity`), or a conflict naming `name` when it exists.
    public func add(name: String, capacity: Double, audit: AuditEntry? = nil, logger: Logger) async throws -> ContentOrigin {
        try Self.validate(name: name, capacity: capacity)
        do {
            let added = try await client.audited(audit, logger: logger) { runner -> ContentOrigin? in
                let rows = try await runner.run(
                    "INSERT INTO origins (name, capacity) VALUES (\(name), \(capacity)) RETURNING id, created_at",
                    logger: logger
                )
                for try await (id, created) in rows.decode((Int, Date).self) {
                    return ContentOrigin(id: id, name: name, capacity: capacity, createdAt: created)
                }
                return nil
            } entry: { entry, added in
                added == nil ? nil : entry
            }
            if let added { return added }
        } catch let error as PSQLError where error.isUniqueViolation() {
            throw StoreError(code: .conflict, field: "name", message: "an origin named \(name) exists already")
        }
        throw StoreError(code: .conflict, field: "name", message: "the origin was not created")
    }

    /// Changes an origin's capacity; broadcasts running against it pace at the new capacity from their next batch.
    /// - Throws: ``StoreError`` not found naming `name`, or invalid naming `capacity`.
    public func setCapacity(name: String, capacity: Double, audit: AuditEntry? = nil, logger: Logger) async throws -> ContentOrigin {
        try Self.validate(name: name, capacity: capacity)
        let changed = try await client.audited(audit, logger: logger) { runner in
            let rows = try await runner.run("UPDATE origins SET capacity = \(capacity) WHERE name = \(name) RETURNING id", logger: logger)
            return try await rows.collect().count == 1
        } entry: { entry, changed in
            changed ? entry : nil
        }
        guard changed, let origin = try await find(name: name, logger: logger) else {
            throw StoreError(code: .notFound, field: "name", message: "there is no origin \(name)")
        }
        return origin
    }

    /// The origin with this name, if any, with its publications.
    public func find(name: String, logger: Logger) async throws -> ContentOrigin? {
        try await list(logger: logger).first { $0.name == name }
    }

    /// Every origin, by name, with its publications.
    public func list(logger: Logger) async throws -> [ContentOrigin] {
        let rows = try await client.query(
            """
            SELECT o.id, o.name, o.capacity, o.created_at,
                coalesce(array_agg(p.app_id::text || '/' || p.slug ORDER BY p.app_id, p.slug) FILTER (WHERE p.id IS NOT NULL), '{}')
            FROM origins o LEFT JOIN publications p ON p.origin_id = o.id
            GROUP BY o.id ORDER BY o.name
            """,
            logger: logger
        )
        var origins: [ContentOrigin] = []
        for try await (id, name, capacity, created, publications) in rows.decode((Int, String, Double, Date, [String]).self) {
            origins.append(ContentOrigin(id: id, name: name, capacity: capacity, createdAt: created, publications: publications))
        }
        return origins
    }

    /// The origin a broadcast of `publicationID` shares and what running waves of other broadcasts hold of it from
    /// `now` on; nil when the publication has no origin.
    public func capacity(publicationID: Int, excluding broadcastID: UUID?, now: Date, logger: Logger) async throws -> OriginCapacity? {
        let found = try await client.query(
            "SELECT o.id, o.name, o.capacity FROM origins o JOIN publications p ON p.origin_id = o.id WHERE p.id = \(publicationID)",
            logger: logger
        )
        var origin: (id: Int, name: String, capacity: Double)?
        for try await row in found.decode((Int, String, Double).self) { origin = row }
        guard let origin else { return nil }
        let rows = try await client.query(Self.commitmentsQuery(originID: origin.id, excluding: broadcastID, now: now), logger: logger)
        var commitments: [OriginCapacity.Commitment] = []
        for try await (id, wave, slug, issue, app, start, end, rate) in rows.decode((UUID, Int16, String, String, Int, Date, Date, Double).self)
        where end > now {
            commitments.append(
                OriginCapacity.Commitment(
                    broadcastID: id,
                    wave: Int(wave),
                    label: "\(slug) \(issue) (app \(app), broadcast \(id.uuidString.prefix(8).lowercased()))",
                    start: start,
                    end: end,
                    rate: rate
                )
            )
        }
        return OriginCapacity(name: origin.name, capacity: origin.capacity, commitments: commitments)
    }

    /// The unfinished waves of running broadcasts of the origin's publications: from their start (or now) until
    /// their last cohort's end or the wave's claimed timeline, whichever is later, at their rate.
    static func commitmentsQuery(originID: Int, excluding broadcastID: UUID?, now: Date) -> PostgresQuery {
        """
        SELECT b.id, w.wave, p.slug, e.issue_date::text, p.app_id, greatest(w.starts_at, \(now)),
            greatest((SELECT max(c.ends_at) FROM broadcast_cohorts c WHERE c.broadcast_id = w.broadcast_id AND c.wave = w.wave),
                coalesce(w.next_slot, '-infinity')),
            w.rate
        FROM broadcasts b JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
        JOIN broadcast_waves w ON w.broadcast_id = b.id
        WHERE p.origin_id = \(originID) AND b.state = 'running' AND w.finished_at IS NULL AND w.rate > 0
            AND b.id IS DISTINCT FROM \(broadcastID)
        ORDER BY 6
        """
    }
}
