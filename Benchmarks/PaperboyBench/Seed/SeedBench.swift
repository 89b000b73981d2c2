import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PostgresNIO

/// `paperboy-bench seed`: how fast `DeviceSeeder` (what `paperboy devices seed` runs) inserts a fleet, and
/// whether the rate holds as the table grows. It migrates the database and seeds into an app of its own.
struct SeedBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed",
        abstract: "Seed N devices with DeviceSeeder into a new app and print rows/s, overall and per tenth of the run (at least 40,000 rows).",
        discussion: """
            Run it on a scratch database: scripts/with-postgres.sh .build-release/release/paperboy-bench seed --count 1000000
            It applies pending migrations and registers an app named com.example.bench-<random> with publications \
            morning and evening; the devices are left in place.
            """
    )

    @OptionGroup var database: BenchDatabaseOptions

    @Option(help: "How many devices to seed.")
    var count = 1_000_000

    @Option(help: "Makes the tokens repeatable (the same seed in the same app inserts nothing the second time).")
    var seed: UInt64 = 1

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        guard (1...DeviceSeeder.maximumCount).contains(count) else {
            throw ValidationError("--count: between 1 and \(DeviceSeeder.maximumCount), got \(count)")
        }
    }

    struct Tenth: Codable {
        var upTo: Int
        var seconds: Double
        var rowsPerSecond: Double
    }

    struct Result: Codable {
        var count: Int
        var inserted: Int
        var seconds: Double
        var rowsPerSecond: Double
        var tenths: [Tenth]
    }

    func run() async throws {
        LoggingSystem.bootstrapBench()
        let logger = Logger(label: "paperboy-bench.seed")
        let count = count
        let result = try await database.withClient(logger: logger) { client in
            _ = try await Migrator().migrate(client: client, logger: logger)
            let app = try await AppRepository(client: client).create(
                try NewApp(
                    bundleID: "com.example.bench-\(UInt32.random(in: 0...UInt32.max))",
                    teamID: "BENCHTEAM1",
                    keyID: "BENCHKEY01",
                    keyReference: "/nonexistent/bench.p8"
                ),
                logger: logger
            ).app
            let publications = PublicationRepository(client: client)
            _ = try await publications.add(appID: app.id, slug: "morning", title: nil, logger: logger)
            _ = try await publications.add(appID: app.id, slug: "evening", title: nil, logger: logger)

            let start = ContinuousClock.now
            var tenths: [Tenth] = []
            // Chunks finish two at a time (DeviceSeeder.concurrency): a segment spans at least four of them.
            let segment = max(count / 10, 4 * DeviceSeeder.chunkSize)
            var lastDone = 0
            var lastTime = start
            let inserted = try await DeviceSeeder(client: client).seed(
                appID: app.id,
                publicationSlugs: ["morning", "evening"],
                count: count,
                environment: .production,
                seed: seed,
                alertsShare: 0.3,
                autoDownloadShare: 1,
                progress: { done in
                    guard done / segment > lastDone / segment || done == count else { return }
                    let now = ContinuousClock.now
                    let seconds = (now - lastTime).seconds
                    tenths.append(Tenth(upTo: done, seconds: seconds, rowsPerSecond: Double(done - lastDone) / max(seconds, 1e-9)))
                    progress("seed: \(done.formatted()) of \(count.formatted()) after \(String(format: "%.1f", (now - start).seconds)) s")
                    lastDone = done
                    lastTime = now
                },
                logger: logger
            )
            let seconds = (ContinuousClock.now - start).seconds
            return Result(count: count, inserted: inserted, seconds: seconds, rowsPerSecond: Double(count) / seconds, tenths: tenths)
        }
        if json { return try printJSON(result) }
        print(
            "seeded \(result.inserted.formatted()) of \(result.count.formatted()) devices in \(String(format: "%.1f", result.seconds)) s: \(Int(result.rowsPerSecond).formatted()) rows/s"
        )
        print("up to devices   seconds    rows/s")
        for tenth in result.tenths {
            print(
                tenth.upTo.formatted().leftPadded(13) + String(format: "%10.1f", tenth.seconds) + Int(tenth.rowsPerSecond).formatted().leftPadded(10)
            )
        }
    }
}
