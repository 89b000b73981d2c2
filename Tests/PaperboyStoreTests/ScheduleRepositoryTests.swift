import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@Suite("Schedule repository")
struct ScheduleRepositoryTests {
    /// 2026-11-23 04:00 in Tokyo.
    static let now = ISO8601DateFormatter().date(from: "2026-11-22T19:00:00Z")!

    static func date(_ text: String) throws -> Date {
        try #require(ISO8601DateFormatter().date(from: text))
    }

    static func add(_ db: TestDatabase, cron: String = "0 5 * * *", environment: APNsEnvironment = .production) async throws -> Schedule {
        try await ScheduleRepository(client: db.client).add(
            publication: "morning",
            appID: nil,
            environment: environment,
            cron: cron,
            timeZone: "Asia/Tokyo",
            options: BroadcastOptions(pace: .capacity(perSecond: 2000), cohorts: 4),
            now: now,
            logger: db.logger
        )
    }

    @Test("add stores a schedule with its options; list reads it back; remove deletes it")
    func addListRemove() async throws {
        try await TestDatabase.with { db in
            let app = try await EditionRepositoryTests.app(db)
            let schedules = ScheduleRepository(client: db.client)
            let added = try await Self.add(db, cron: "0  5 * * *")
            #expect(added.cron == "0 5 * * *")
            #expect(added.appID == app.id)
            #expect(added.publication == "morning")
            // The latest instant before now counts as handled: yesterday's 05:00 in Tokyo.
            #expect(added.lastInstant == (try Self.date("2026-11-21T20:00:00Z")))
            #expect(added.next(after: Self.now) == (try Self.date("2026-11-22T20:00:00Z")))

            let sandbox = try await Self.add(db, environment: .sandbox)
            let listed = try await schedules.list(logger: db.logger)
            #expect(listed == [added, sandbox])
            #expect(listed.first?.options == BroadcastOptions(pace: .capacity(perSecond: 2000), cohorts: 4))

            try await schedules.remove(id: added.id, logger: db.logger)
            #expect(try await schedules.list(logger: db.logger).map(\.id) == [sandbox.id])
            await #expect(throws: StoreError(code: .notFound, field: "id", message: "there is no schedule \(added.id)")) {
                try await schedules.remove(id: added.id, logger: db.logger)
            }
        }
    }

    @Test("an invalid cron, time zone, options or publication, and a duplicate, are refused by field")
    func refusals() async throws {
        try await TestDatabase.with { db in
            let app = try await EditionRepositoryTests.app(db)
            let schedules = ScheduleRepository(client: db.client)
            func add(
                publication: String = "morning",
                cron: String = "0 5 * * *",
                timeZone: String = "Asia/Tokyo",
                options: BroadcastOptions = .init()
            )
                async throws -> Schedule
            {
                try await schedules.add(
                    publication: publication,
                    appID: app.id,
                    environment: .production,
                    cron: cron,
                    timeZone: timeZone,
                    options: options,
                    now: Self.now,
                    logger: db.logger
                )
            }
            await #expect(throws: StoreError(code: .invalid, field: "cron", message: "minute field '61': values run 0-59")) {
                try await add(cron: "61 5 * * *")
            }
            await #expect(
                throws: StoreError(
                    code: .invalid,
                    field: "timeZone",
                    message: "'Asia/Tokio': not an IANA time zone, e.g. Asia/Tokyo or Europe/Berlin"
                )
            ) {
                try await add(timeZone: "Asia/Tokio")
            }
            do {
                _ = try await add(options: BroadcastOptions(cohorts: 0))
                Issue.record("invalid options were accepted")
            } catch let error as StoreError {
                #expect(error.field == "cohorts")
            }
            await #expect(throws: StoreError(code: .notFound, field: "publication", message: "there is no publication weekly of app \(app.id)")) {
                try await add(publication: "weekly")
            }
            _ = try await add()
            do {
                _ = try await add(cron: "0 5 * * *")
                Issue.record("a duplicate was accepted")
            } catch let error as StoreError {
                #expect(error.code == .conflict)
            }
            #expect(try await schedules.list(logger: db.logger).count == 1)
        }
    }

    @Test("a schedule is due once its latest instant was not handled; markHandled settles it")
    func due() async throws {
        try await TestDatabase.with { db in
            _ = try await EditionRepositoryTests.app(db)
            let schedules = ScheduleRepository(client: db.client)
            let schedule = try await Self.add(db)
            #expect(try await schedules.due(now: Self.now, logger: db.logger).isEmpty)

            // 05:40 in Tokyo: the 05:00 instant is due, even 40 minutes late.
            let instant = try Self.date("2026-11-22T20:00:00Z")
            let late = try Self.date("2026-11-22T20:40:00Z")
            let due = try await schedules.due(now: late, logger: db.logger)
            #expect(due.map(\.schedule.id) == [schedule.id])
            #expect(due.map(\.instant) == [instant])

            #expect(try await schedules.markHandled(id: schedule.id, instant: instant, logger: db.logger))
            #expect(try await schedules.markHandled(id: schedule.id, instant: instant, logger: db.logger) == false)
            #expect(try await schedules.due(now: late, logger: db.logger).isEmpty)

            // Days later, only the latest instant is due.
            let days = try await schedules.due(now: try Self.date("2026-11-25T21:00:00Z"), logger: db.logger)
            #expect(days.map(\.instant) == [try Self.date("2026-11-25T20:00:00Z")])
        }
    }

    @Test("the newest edition of a publication, and whether it was broadcast in an environment")
    func newestEdition() async throws {
        try await TestDatabase.with { db in
            let app = try await EditionRepositoryTests.app(db)
            let schedules = ScheduleRepository(client: db.client)
            let schedule = try await Self.add(db)
            #expect(try await schedules.newestEdition(publicationID: schedule.publicationID, environment: .production, logger: db.logger) == nil)

            let editions = EditionRepository(client: db.client)
            _ = try await editions.publish(EditionRepositoryTests.manifest(issueDate: "2026-11-22"), appID: app.id, now: Self.now, logger: db.logger)
            let edition = try await editions.publish(
                EditionRepositoryTests.manifest(issueDate: "2026-11-23"),
                appID: app.id,
                now: Self.now,
                logger: db.logger
            )
            _ = try await editions.publish(
                EditionRepositoryTests.manifest("evening", issueDate: "2026-11-24"),
                appID: app.id,
                now: Self.now,
                logger: db.logger
            )
            let newest = try #require(
                try await schedules.newestEdition(publicationID: schedule.publicationID, environment: .production, logger: db.logger)
            )
            #expect(newest.id == edition.id)
            #expect(newest.issueDate == "2026-11-23")
            #expect(newest.deadline == edition.deadline)
            #expect(newest.broadcast == false)

            try await Self.insertBroadcast(db, edition: edition.id, environment: 1, state: "running")
            try await Self.insertBroadcast(db, edition: edition.id, environment: 0, state: "cancelled")
            #expect(
                try await schedules.newestEdition(publicationID: schedule.publicationID, environment: .production, logger: db.logger)?.broadcast
                    == false
            )
            #expect(
                try await schedules.newestEdition(publicationID: schedule.publicationID, environment: .sandbox, logger: db.logger)?.broadcast == true
            )
            try await Self.insertBroadcast(db, edition: edition.id, environment: 0, state: "completed")
            #expect(
                try await schedules.newestEdition(publicationID: schedule.publicationID, environment: .production, logger: db.logger)?.broadcast
                    == true
            )
        }
    }

    /// A broadcast row as the starter would leave it (environment 0 production, 1 sandbox).
    static func insertBroadcast(_ db: TestDatabase, edition: UUID, environment: Int16, state: String) async throws {
        try await db.client.query(
            "INSERT INTO broadcasts (id, edition_id, environment, state, plan) VALUES (\(UUID()), \(edition), \(environment), \(state), '{}'::jsonb)",
            logger: db.logger
        )
    }
}
