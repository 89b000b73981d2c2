import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real `paperboy serve` on a test database, with an app (its device API key), the publications `morning`
/// (titled) and `evening`, and a morning edition whose deadline is ahead: what an app team has when it tests
/// against `paperboy serve` on a laptop.
struct LiveServe {
    var base: URL
    var key: String
    var appID: Int
    var edition: Edition
    var database: TestDatabase

    /// The edition's tiers: small and large, no medium (so that a medium device falls back).
    static func manifest(issueDate: String, deadline: String) -> PaperboyCore.EditionManifest {
        EditionManifest(
            publication: "morning",
            issueDate: issueDate,
            deadline: deadline,
            tiers: [
                "small": .init(bundles: [
                    .init(
                        url: "https://cdn.example.com/\(issueDate)/morning/small-1.zip",
                        bytes: 8_388_608,
                        sha256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
                    )
                ]),
                "large": .init(bundles: [
                    .init(
                        url: "https://cdn.example.com/\(issueDate)/morning/large-1.zip",
                        bytes: 52_428_800,
                        sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
                    )
                ]),
            ],
            pages: [.init(number: 1, title: "Front page"), .init(number: 2)]
        )
    }

    /// An issue date `days` ahead and a deadline at 09:00 in Tokyo that day: always ahead.
    static func ahead(days: Int = 2) -> (issueDate: String, deadline: String) {
        let day = Date().addingTimeInterval(Double(days) * 86_400)
        let date = day.formatted(Date.ISO8601FormatStyle().year().month().day())
        return (date, "\(date)T09:00:00+09:00")
    }

    /// Runs `body` with a fresh database and `serve` (extra `arguments`, e.g. a rate limit), and stops serve.
    static func with(arguments: [String] = ["--rate-limit", "off"], _ body: (LiveServe) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            let created = try await AppRepository(client: db.client).create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "none (test)"),
                logger: db.logger
            )
            let publications = PublicationRepository(client: db.client)
            _ = try await publications.add(appID: created.app.id, slug: "morning", title: "Morning edition", logger: db.logger)
            _ = try await publications.add(appID: created.app.id, slug: "evening", title: nil, logger: db.logger)
            let (issueDate, deadline) = ahead()
            let edition = try await EditionRepository(client: db.client).publish(
                manifest(issueDate: issueDate, deadline: deadline),
                appID: created.app.id,
                logger: db.logger
            )
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-serve-\(UUID().uuidString).log")
            let serve = try PaperboyBinary.start(
                ["serve", "--port", "0", "--no-dispatch", "--no-scheduler"] + arguments,
                environment: ["DATABASE_URL": db.configuration.testURL],
                log: log
            )
            defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
            let port = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            let live = LiveServe(
                base: URL(string: "http://127.0.0.1:\(port)")!,
                key: created.apiKey.secret,
                appID: created.app.id,
                edition: edition,
                database: db
            )
            try await body(live)
            kill(serve.processIdentifier, SIGTERM)
            #expect(await serve.exited(within: .seconds(20)))
        }
    }
}
