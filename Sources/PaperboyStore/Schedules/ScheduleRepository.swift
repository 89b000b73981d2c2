import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Broadcast schedules in PostgreSQL, for `paperboy schedules` and the scheduler.
public struct ScheduleRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Validates and stores a schedule.
    ///
    /// The instants up to `now` count as handled, so a new schedule does not fire a past instant at once.
    ///
    /// - Parameters:
    ///   - publication: the publication's slug.
    ///   - appID: the app whose publication it is; may be nil when only one app has a publication by that slug.
    /// - Throws: `StoreError` naming `cron`, `timeZone` or `options` (or an option's field) when invalid,
    ///   `publication` when it is not known, `app` when it is ambiguous; a conflict when the same schedule
    ///   exists already.
    public func add(
        publication: String,
        appID: Int?,
        environment: APNsEnvironment,
        cron: String,
        timeZone: String,
        options: BroadcastOptions,
        now: Date = Date(),
        audit: AuditEntry? = nil,
        logger: Logger
    ) async throws -> Schedule {
        let schedule: CronSchedule
        do {
            schedule = try CronSchedule(parsing: cron)
        } catch {
            throw StoreError(code: .invalid, field: "cron", message: error.description)
        }
        let zone: TimeZone
        do {
            zone = try CronSchedule.timeZone(identifier: timeZone)
        } catch {
            throw StoreError(code: .invalid, field: "timeZone", message: error.description)
        }
        do {
            try options.validate()
        } catch {
            throw StoreError(code: .invalid, field: error.field, message: error.message)
        }
        let found = try await PublicationRepository(client: client).resolve(slug: publication, appID: appID, logger: logger)
        let lastInstant = schedule.previous(atOrBefore: now, in: zone)
        let json = String(decoding: try Self.encoder.encode(options), as: UTF8.self)
        do {
            let stored = try await client.audited(audit, logger: logger) { runner -> (Int, Date)? in
                let rows = try await runner.run(
                    """
                    INSERT INTO schedules (publication_id, environment, cron, time_zone, options, last_instant)
                    VALUES (\(found.id), \(environment.storageCode), \(schedule.expression), \(timeZone), \(json)::jsonb, \(lastInstant))
                    RETURNING id, created_at
                    """,
                    logger: logger
                )
                for try await row in rows.decode((Int, Date).self) { return row }
                return nil
            } entry: { entry, stored in
                var entry = entry
                entry.appID = found.appID
                entry.detail =
                    "schedule \(stored.map { String($0.0) } ?? "?"): \(found.slug) at '\(schedule.expression)' in \(timeZone), \(environment.rawValue)"
                return entry
            }
            if let (id, createdAt) = stored {
                return Schedule(
                    id: id,
                    appID: found.appID,
                    publication: found.slug,
                    publicationID: found.id,
                    environment: environment,
                    cron: schedule.expression,
                    timeZone: timeZone,
                    options: options,
                    createdAt: createdAt,
                    lastInstant: lastInstant
                )
            }
        } catch let error as PSQLError where error.isUniqueViolation() {
            throw StoreError(
                code: .conflict,
                message:
                    "\(found.slug) of app \(found.appID) is scheduled at '\(schedule.expression)' in \(timeZone) for \(environment.rawValue) already"
            )
        }
        throw StoreError(code: .conflict, message: "the schedule was not stored")
    }

    /// All schedules, by id.
    public func list(logger: Logger) async throws -> [Schedule] {
        try await select(
            """
            SELECT s.id, p.app_id, p.slug, s.publication_id, s.environment, s.cron, s.time_zone, s.options::text, s.created_at, s.last_instant
            FROM schedules s JOIN publications p ON p.id = s.publication_id
            ORDER BY s.id
            """,
            logger: logger
        )
    }

    /// Removes a schedule.
    /// - Throws: `StoreError` (not found, naming `id`) when there is no such schedule.
    public func remove(id: Int, audit: AuditEntry? = nil, logger: Logger) async throws {
        let removed = try await client.audited(audit, logger: logger) { runner -> Bool in
            let rows = try await runner.run("DELETE FROM schedules WHERE id = \(id) RETURNING id", logger: logger)
            for try await _ in rows.decode(Int.self) { return true }
            return false
        } entry: { entry, removed in
            removed ? entry : nil
        }
        if removed { return }
        throw StoreError(code: .notFound, field: "id", message: "there is no schedule \(id)")
    }

    /// The schedules whose latest instant at or before `now` has not been handled, with that instant.
    ///
    /// Only the latest instant counts: a process that was down over several firings fires once, late.
    public func due(now: Date, logger: Logger) async throws -> [DueSchedule] {
        var due: [DueSchedule] = []
        for schedule in try await list(logger: logger) {
            guard schedule.cronSchedule != nil else {
                logger.warning(
                    "a schedule cannot be read; it never fires",
                    metadata: [LogKey.schedule: "\(schedule.id)", LogKey.cron: "\(schedule.cron)", LogKey.timeZone: "\(schedule.timeZone)"]
                )
                continue
            }
            guard let instant = schedule.latestInstant(atOrBefore: now) else { continue }
            if let last = schedule.lastInstant, last >= instant { continue }
            due.append(DueSchedule(schedule: schedule, instant: instant))
        }
        return due
    }

    /// Records that a schedule's instant was handled (fired, or skipped for a logged reason).
    /// - Returns: false when the schedule is gone or a later (or the same) instant was handled already.
    @discardableResult
    public func markHandled(id: Int, instant: Date, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            UPDATE schedules SET last_instant = \(instant)
            WHERE id = \(id) AND (last_instant IS NULL OR last_instant < \(instant))
            RETURNING id
            """,
            logger: logger
        )
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// The most recently published edition of a publication, and whether it has a broadcast (in any
    /// state but `cancelled`) in the environment.
    public func newestEdition(publicationID: Int, environment: APNsEnvironment, logger: Logger) async throws -> NewestEdition? {
        let rows = try await client.query(RequestStatements.newestEdition(publicationID: publicationID, environment: environment), logger: logger)
        for try await (id, issueDate, deadline, publishedAt, broadcast) in rows.decode((UUID, String, Date, Date, Bool).self) {
            return NewestEdition(id: id, issueDate: issueDate, deadline: deadline, publishedAt: publishedAt, broadcast: broadcast)
        }
        return nil
    }

    private func select(_ query: PostgresQuery, logger: Logger) async throws -> [Schedule] {
        let rows = try await client.query(query, logger: logger)
        var schedules: [Schedule] = []
        for try await row in rows.decode((Int, Int, String, Int, Int16, String, String, String, Date, Date?).self) {
            let options = try JSONDecoder().decode(BroadcastOptions.self, from: Data(row.7.utf8))
            schedules.append(
                Schedule(
                    id: row.0,
                    appID: row.1,
                    publication: row.2,
                    publicationID: row.3,
                    environment: APNsEnvironment(storageCode: row.4),
                    cron: row.5,
                    timeZone: row.6,
                    options: options,
                    createdAt: row.8,
                    lastInstant: row.9
                )
            )
        }
        return schedules
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
