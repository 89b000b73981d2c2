import Foundation
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// What workers say of themselves and of the apps they cannot send for, as the console and the rule that fails
/// unsendable broadcasts read it.
@Suite("Workers and sender status")
struct WorkerRepositoryTests {
    @Test("a worker's heartbeat replaces its row; only recently seen workers are listed; a day's silence prunes it and its sender statuses")
    func heartbeats() async throws {
        try await TestDatabase.with { db in
            let workers = WorkerRepository(client: db.client)
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app
            try await workers.report(WorkerStatus(name: "a", startedAt: now, seenAt: now), logger: db.logger)
            try await workers.report(
                WorkerStatus(
                    name: "a",
                    startedAt: now,
                    seenAt: now.addingTimeInterval(10),
                    batches: 3,
                    problems: ["app 1 FCM: no file"],
                    lastError: "could not lease a batch: timeout",
                    lastErrorAt: now.addingTimeInterval(5)
                ),
                logger: db.logger
            )
            try await workers.report(
                WorkerStatus(name: "old", startedAt: now.addingTimeInterval(-2 * 86400), seenAt: now.addingTimeInterval(-2 * 86400)),
                logger: db.logger
            )
            let statuses = SenderStatusRepository(client: db.client)
            try await statuses.reportProblem(
                appID: app.id,
                provider: .fcm,
                worker: "old",
                problem: "no file",
                now: now.addingTimeInterval(-2 * 86400),
                logger: db.logger
            )

            let listed = try await workers.list(seenSince: now.addingTimeInterval(-60), logger: db.logger)
            #expect(listed.map(\.name) == ["a"])
            #expect(listed.first?.batches == 3 && listed.first?.problems == ["app 1 FCM: no file"])
            #expect(listed.first?.lastError == "could not lease a batch: timeout")

            #expect(try await workers.prune(before: now.addingTimeInterval(-86400), logger: db.logger) == 1)
            #expect(try await workers.list(seenSince: .distantPast, logger: db.logger).map(\.name) == ["a"])
            let rows = try await db.client.query("SELECT count(*) FROM sender_status", logger: db.logger).collect()
            #expect(try rows.first?.decode(Int.self) == 0)
        }
    }

    @Test(
        "a worker's paused providers are stored with its heartbeat and read per app and environment: the earliest start, how many of the live workers, never a silent worker's"
    )
    func pauses() async throws {
        try await TestDatabase.with { db in
            let workers = WorkerRepository(client: db.client)
            // Heartbeats on the database's clock: `pauses` counts the workers seen in the last minute by it.
            let now = Date()
            let apns = ProviderPause(key: .init(appID: 7, environment: .production, provider: .apns), since: now.addingTimeInterval(-40.125))
            let later = ProviderPause(key: apns.key, since: now.addingTimeInterval(-12))
            let sandbox = ProviderPause(key: .init(appID: 7, environment: .sandbox, provider: .fcm), since: now.addingTimeInterval(-5))
            let other = ProviderPause(key: .init(appID: 8, environment: .production, provider: .fcm), since: now.addingTimeInterval(-5))
            try await workers.report(WorkerStatus(name: "a", startedAt: now, seenAt: now, pauses: [later, sandbox]), logger: db.logger)
            try await workers.report(WorkerStatus(name: "b", startedAt: now, seenAt: now, pauses: [apns, other]), logger: db.logger)
            try await workers.report(WorkerStatus(name: "c", startedAt: now, seenAt: now), logger: db.logger)
            // Silent for two minutes: its pause is not believed any more.
            let stale = ProviderPause(key: .init(appID: 7, environment: .production, provider: .fcm), since: now.addingTimeInterval(-300))
            try await workers.report(
                WorkerStatus(name: "gone", startedAt: now, seenAt: now.addingTimeInterval(-120), pauses: [stale]),
                logger: db.logger
            )

            let production = try await workers.pauses(appID: 7, environment: .production, logger: db.logger)
            #expect(production.count == 1)
            #expect(production.first?.provider == .apns)
            #expect(production.first?.workers == 2 && production.first?.ofWorkers == 3, "2 of the 3 live workers: \(production)")
            let since = try #require(production.first?.since)
            #expect(abs(since.timeIntervalSince(apns.since)) < 0.001, "the earliest start, to the millisecond")
            #expect(try await workers.pauses(appID: 7, environment: .sandbox, logger: db.logger).map(\.provider) == [.fcm])
            #expect(try await workers.pauses(appID: 9, environment: .production, logger: db.logger).isEmpty)

            // The list carries them back as they were said; the next heartbeat without them ends them.
            let listed = try await workers.list(seenSince: now.addingTimeInterval(-60), logger: db.logger)
            #expect(listed.first { $0.name == "a" }?.pauses.map(\.key) == [later.key, sandbox.key])
            #expect(listed.first { $0.name == "a" }?.cannotSend == [later.description, sandbox.description], "the Workers page's lines")
            try await workers.report(WorkerStatus(name: "b", startedAt: now, seenAt: now), logger: db.logger)
            try await workers.report(WorkerStatus(name: "a", startedAt: now, seenAt: now, pauses: [sandbox]), logger: db.logger)
            #expect(try await workers.pauses(appID: 7, environment: .production, logger: db.logger).isEmpty)
        }
    }

    @Test("a problem keeps its start while it lasts; a send clears it")
    func senderStatus() async throws {
        try await TestDatabase.with { db in
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let app = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            ).app
            let statuses = SenderStatusRepository(client: db.client)
            try await statuses.reportProblem(appID: app.id, provider: .apns, worker: "w", problem: "no key", now: now, logger: db.logger)
            try await statuses.reportProblem(
                appID: app.id,
                provider: .apns,
                worker: "w",
                problem: "no key",
                now: now.addingTimeInterval(30),
                logger: db.logger
            )
            var row = try await db.client.query(
                "SELECT problem, problem_since, updated_at, last_sent_at FROM sender_status WHERE worker = 'w'",
                logger: db.logger
            ).collect()
            var (problem, since, updated, sent) = try #require(row.first).decode((String?, Date?, Date, Date?).self)
            #expect(problem == "no key" && since == now && updated == now.addingTimeInterval(30) && sent == nil)
            try await statuses.reportSent(appID: app.id, provider: .apns, worker: "w", now: now.addingTimeInterval(60), logger: db.logger)
            row = try await db.client.query(
                "SELECT problem, problem_since, updated_at, last_sent_at FROM sender_status WHERE worker = 'w'",
                logger: db.logger
            ).collect()
            (problem, since, updated, sent) = try #require(row.first).decode((String?, Date?, Date, Date?).self)
            #expect(problem == nil && since == nil && sent == now.addingTimeInterval(60))
        }
    }
}
