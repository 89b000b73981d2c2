import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PostgresNIO

/// `paperboy-bench history`: days of editions for a seeded fleet, as a real fleet leaves the ledger, pruned
/// by the real ``LedgerPruner`` at the end of each simulated day; the sizes of the big tables day by day.
///
/// Each day has a morning edition (05:00) and an evening one (17:00), each broadcast to the publication's
/// targets in three background waves 30 minutes apart (wave 1 over 30 minutes, later waves at wave 1's
/// rate): wave 1 to every target, 0.05 % of them answered 410 Unregistered (the device is deactivated);
/// receipts from two thirds of the targets after wave 1 and another sixth after wave 2; wave 2 to the third
/// without a receipt, wave 3 to the sixth still without one. Rows are written in bulk (`INSERT … SELECT FROM
/// devices`), with the broadcast's waves, cohorts and batches of `--batch-size` devices, all timestamps on the
/// simulated day. The simulated days end now; with `--running` a further morning edition is being broadcast
/// (wave 1 sent in the last 45 minutes, two thirds of its receipts in), as during a morning.
struct HistoryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Simulate days of two editions a day for the seeded fleet, prune each day with LedgerPruner, and print the sizes.",
        discussion: """
            Needs a migrated database with an app, its publications and devices (`paperboy devices seed`). It refuses \
            a database that has editions already unless --reset, which first removes every edition, broadcast, \
            delivery and receipt: for a benchmark database only.
            """
    )

    @OptionGroup var database: BenchDatabaseOptions

    @Option(help: "Simulated days, each with two editions.")
    var days = 14

    @Option(help: ArgumentHelp("The ledger's retention, as `paperboy prune --retention` (e.g. 7d).", valueName: "duration"))
    var retention = "7d"

    @Flag(help: "Simulate only the days the retention keeps (what is left after pruning), skipping the older ones.")
    var retainedOnly = false

    @Flag(inversion: .prefixedNo, help: "End with a morning edition whose broadcast is running (wave 1 sent).")
    var running = true

    @Flag(
        inversion: .prefixedNo,
        help: "VACUUM deliveries, receipts and devices after each day's prune (autovacuum would, in the hours between editions)."
    )
    var vacuum = true

    @Flag(help: "First remove every edition, broadcast, delivery and receipt of the database.")
    var reset = false

    @Option(help: "The app's id (default: the only app).")
    var app: Int?

    @Option(help: "The two publications: the morning edition's, then the evening's (repeat the flag).")
    var publication: [String] = ["morning", "evening"]

    @Option(name: .customLong("batch-size"), help: "Devices per broadcast batch row (the workers' --max-batch).")
    var batchSize = 1000

    @Flag(help: "Print the result as JSON.")
    var json = false

    @Option(name: .customLong("json-file"), help: ArgumentHelp("Also write the result as JSON to this file.", valueName: "path"))
    var jsonFile: String?

    func validate() throws {
        guard (1...366).contains(days) else { throw ValidationError("--days: 1 to 366, got \(days)") }
        _ = try retentionSeconds()
        guard publication.count == 2, publication[0] != publication[1] else {
            throw ValidationError("--publication: give two distinct publications (morning, then evening), got \(publication)")
        }
        guard (1...100_000).contains(batchSize) else { throw ValidationError("--batch-size: 1 to 100000, got \(batchSize)") }
        if let app, app < 1 { throw ValidationError("--app: an app id, got \(app)") }
    }

    func retentionSeconds() throws -> TimeInterval {
        // As `paperboy prune --retention` reads it: days, or a duration such as 36h.
        let seconds: TimeInterval
        let text = retention.trimmingCharacters(in: .whitespaces).lowercased()
        if text.hasSuffix("d"), let days = Double(text.dropLast()), days.isFinite, days > 0 {
            seconds = days * 86_400
        } else {
            do { seconds = try StaggerPlan.seconds(parsing: text) } catch {
                throw ValidationError("--retention: \(retention) is not a duration like 7d, 36h or 90m")
            }
        }
        guard seconds >= 2 * 3600 else { throw ValidationError("--retention: at least 2h, as `paperboy prune` requires") }
        return seconds
    }

    struct Sizes: Codable {
        var deliveriesBytes: Int64
        var receiptsBytes: Int64
        var devicesBytes: Int64
        var batchesBytes: Int64
        var databaseBytes: Int64

        var ledgerBytes: Int64 { deliveriesBytes + receiptsBytes }
    }

    struct Day: Codable {
        var day: Int
        var date: String
        var deliveriesInserted: Int
        var receiptsInserted: Int
        var devicesUnregistered: Int
        var deliveriesPruned: Int
        var receiptsPruned: Int
        /// Rows after the prune (counted: inserted minus pruned since the start).
        var deliveries: Int
        var receipts: Int
        var beforePrune: Sizes
        var afterPrune: Sizes
        var simulateSeconds: Double
        var pruneSeconds: Double
        var vacuumSeconds: Double
    }

    struct Result: Codable {
        var devices: Int
        var targets: Int
        var days: Int
        var simulatedDays: [Int]
        var retentionDays: Double
        var running: Bool
        var daysDetail: [Day]
        var final: Sizes
        var finalDeliveries: Int
        var finalReceipts: Int
        var bytesPerDevice: Double
        var bytesPerDelivery: Double?
        var bytesPerReceipt: Double?
        /// Deliveries and receipts bytes at the end over the days of ledger they hold (the retention, or fewer).
        var ledgerBytesPerDay: Double
        var ledgerBytesPerDevicePerDay: Double
        var seconds: Double
    }

    /// What one edition's broadcast is made of.
    struct EditionPlan {
        var ordinal: Int
        var publicationID: Int
        var issueDate: String
        var start: Date
        var running: Bool
    }

    static let window: TimeInterval = 1800
    static let waveInterval: TimeInterval = 1800

    func run() async throws {
        LoggingSystem.bootstrapBench()
        let logger = Logger(label: "paperboy-bench.history")
        let retentionSeconds = try retentionSeconds()
        let started = ContinuousClock.now
        let result = try await database.withClient(logger: logger) { client in
            try await simulate(client: client, retentionSeconds: retentionSeconds, started: started, logger: logger)
        }
        if let jsonFile { try writeJSON(result, to: jsonFile, flag: "--json-file") }
        if json { return try printJSON(result) }
        print(Self.report(result))
    }

    private func simulate(
        client: PostgresClient,
        retentionSeconds: TimeInterval,
        started: ContinuousClock.Instant,
        logger: Logger
    ) async throws -> Result {
        let appID = try await resolveApp(client: client, logger: logger)
        var publicationIDs: [Int] = []
        for slug in publication {
            guard
                let id = try await client.value(
                    "SELECT id FROM publications WHERE app_id = \(appID) AND slug = \(slug)",
                    as: Int.self,
                    logger: logger
                )
            else {
                throw BenchError("--publication: app \(appID) has no publication '\(slug)' (paperboy publications add \(slug) --app \(appID))")
            }
            publicationIDs.append(id)
        }
        let editions = try await client.value("SELECT count(*) FROM editions", as: Int.self, logger: logger) ?? 0
        if editions > 0 {
            guard reset else {
                throw BenchError(
                    "--reset: the database has \(editions) editions already; pass --reset to remove every edition, broadcast, delivery and receipt first"
                )
            }
            progress("history: --reset: removing every edition, broadcast, delivery and receipt")
            try await client.query(
                "TRUNCATE deliveries, receipts, broadcast_batches, broadcast_cohorts, broadcast_waves, broadcasts, schedules, editions",
                logger: logger
            )
        }
        let devices = try await client.value("SELECT count(*) FROM devices WHERE app_id = \(appID)", as: Int.self, logger: logger) ?? 0
        guard devices > 0 else { throw BenchError("--app: app \(appID) has no devices; seed them with `paperboy devices seed`") }
        let targets =
            try await client.value(
                """
                SELECT count(*) FROM devices d WHERE d.app_id = \(appID) AND d.environment = 0 AND d.active AND d.auto_download
                    AND \(publicationIDs[0]) = ANY (d.subscriptions)
                """,
                as: Int.self,
                logger: logger
            ) ?? 0
        guard targets > 0 else {
            throw BenchError("--publication: no active production device of app \(appID) subscribes to '\(publication[0])' with auto-download on")
        }

        let pruner = try LedgerPruner(client: client, configuration: .init(retention: .seconds(retentionSeconds)))
        let retentionDays = retentionSeconds / 86_400
        let end = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60)
        let first = retainedOnly ? max(1, days - Int(retentionDays.rounded(.down)) + 1) : 1
        let simulatedDays = Array(first...days)
        progress(
            "history: app \(appID), \(devices.formatted()) devices (\(targets.formatted()) targets of \(publication[0])), days \(first)–\(days) of \(days), retention \(retention)"
        )
        var deliveries = try await client.value("SELECT count(*) FROM deliveries", as: Int.self, logger: logger) ?? 0
        var receipts = try await client.value("SELECT count(*) FROM receipts", as: Int.self, logger: logger) ?? 0
        var detail: [Day] = []
        let dateFormat = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day()

        try await client.withConnection { connection in
            // The rows are valid by construction; skipping the foreign-key triggers (superuser only) halves the time.
            do {
                try await connection.query("SET session_replication_role = replica", logger: logger)
            } catch {
                progress("history: foreign-key checks stay on (not a superuser)")
            }
            for day in simulatedDays {
                let dayStart = end.addingTimeInterval(-Double(days - day + 1) * 86_400)
                let dayEnd = dayStart.addingTimeInterval(86_400)
                let date = dayStart.formatted(dateFormat)
                var row = Day(
                    day: day,
                    date: date,
                    deliveriesInserted: 0,
                    receiptsInserted: 0,
                    devicesUnregistered: 0,
                    deliveriesPruned: 0,
                    receiptsPruned: 0,
                    deliveries: 0,
                    receipts: 0,
                    beforePrune: try await Self.sizes(client, logger),
                    afterPrune: try await Self.sizes(client, logger),
                    simulateSeconds: 0,
                    pruneSeconds: 0,
                    vacuumSeconds: 0
                )
                let simulating = ContinuousClock.now
                for slot in 0..<2 {
                    let plan = EditionPlan(
                        ordinal: day * 2 + slot,
                        publicationID: publicationIDs[slot],
                        issueDate: date,
                        start: dayStart.addingTimeInterval(slot == 0 ? 5 * 3600 : 17 * 3600),
                        running: false
                    )
                    let counts = try await broadcast(plan, appID: appID, on: connection, logger: logger)
                    row.deliveriesInserted += counts.deliveries
                    row.receiptsInserted += counts.receipts
                    row.devicesUnregistered += counts.unregistered
                }
                row.simulateSeconds = (ContinuousClock.now - simulating).seconds
                deliveries += row.deliveriesInserted
                receipts += row.receiptsInserted
                row.beforePrune = try await Self.sizes(client, logger)

                let pruning = ContinuousClock.now
                let pruned = try await pruner.prune(now: dayEnd, logger: logger)
                row.pruneSeconds = (ContinuousClock.now - pruning).seconds
                row.deliveriesPruned = pruned.deliveries
                row.receiptsPruned = pruned.receipts
                deliveries -= pruned.deliveries
                receipts -= pruned.receipts
                if vacuum {
                    let vacuuming = ContinuousClock.now
                    try await connection.query("VACUUM deliveries, receipts, devices", logger: logger)
                    row.vacuumSeconds = (ContinuousClock.now - vacuuming).seconds
                }
                row.deliveries = deliveries
                row.receipts = receipts
                row.afterPrune = try await Self.sizes(client, logger)
                detail.append(row)
                progress(
                    "history: day \(day) (\(date)): +\(row.deliveriesInserted.formatted()) deliveries, +\(row.receiptsInserted.formatted()) receipts in "
                        + String(format: "%.1f s", row.simulateSeconds)
                        + "; pruned \(row.deliveriesPruned.formatted()) + \(row.receiptsPruned.formatted()) in "
                        + String(format: "%.1f s", row.pruneSeconds)
                        + "; ledger \(deliveries.formatted()) + \(receipts.formatted()) rows, "
                        + Self.megabytes(row.afterPrune.ledgerBytes)
                )
            }
            if running {
                let start = end.addingTimeInterval(-45 * 60)
                let plan = EditionPlan(
                    ordinal: (days + 1) * 2,
                    publicationID: publicationIDs[0],
                    issueDate: end.addingTimeInterval(86_400).formatted(dateFormat),
                    start: start,
                    running: true
                )
                let counts = try await broadcast(plan, appID: appID, on: connection, logger: logger)
                deliveries += counts.deliveries
                receipts += counts.receipts
                progress("history: a running broadcast: +\(counts.deliveries.formatted()) deliveries, +\(counts.receipts.formatted()) receipts")
            }
            try await connection.query("RESET session_replication_role", logger: logger)
        }

        let final = try await Self.sizes(client, logger)
        let heldDays = min(retentionDays, Double(simulatedDays.count))
        return Result(
            devices: devices,
            targets: targets,
            days: days,
            simulatedDays: simulatedDays,
            retentionDays: retentionDays,
            running: running,
            daysDetail: detail,
            final: final,
            finalDeliveries: deliveries,
            finalReceipts: receipts,
            bytesPerDevice: Double(final.devicesBytes) / Double(devices),
            bytesPerDelivery: deliveries > 0 ? Double(final.deliveriesBytes) / Double(deliveries) : nil,
            bytesPerReceipt: receipts > 0 ? Double(final.receiptsBytes) / Double(receipts) : nil,
            ledgerBytesPerDay: Double(final.ledgerBytes) / heldDays,
            ledgerBytesPerDevicePerDay: Double(final.ledgerBytes) / heldDays / Double(devices),
            seconds: (ContinuousClock.now - started).seconds
        )
    }

    private func resolveApp(client: PostgresClient, logger: Logger) async throws -> Int {
        var ids: [Int] = []
        for try await id in try await client.query("SELECT id FROM apps ORDER BY id", logger: logger).decode(Int.self) { ids.append(id) }
        if let app {
            guard ids.contains(app) else { throw BenchError("--app: no app \(app)") }
            return app
        }
        guard ids.count == 1 else { throw BenchError("--app: \(ids.count) apps are registered; choose one with --app") }
        return ids[0]
    }

    struct EditionCounts {
        var deliveries = 0
        var receipts = 0
        var unregistered = 0
    }

    /// One edition, its broadcast and the ledger its waves leave; a running one stops after wave 1.
    private func broadcast(_ plan: EditionPlan, appID: Int, on connection: PostgresConnection, logger: Logger) async throws -> EditionCounts {
        let editionID = UUID()
        let broadcastID = UUID()
        let t0 = plan.start
        let waves = plan.running ? 1 : 3
        let finished = t0.addingTimeInterval(2 * Self.waveInterval + Self.window / 6)
        let options = String(decoding: try JSONEncoder().encode(BroadcastOptions()), as: UTF8.self)
        let finishedAt: Date? = plan.running ? nil : finished
        let updatedAt = plan.running ? t0.addingTimeInterval(Self.window) : finished
        try await connection.query(
            """
            INSERT INTO editions (id, publication_id, issue_date, deadline, manifest, published_at)
            VALUES (\(editionID), \(plan.publicationID), \(plan.issueDate)::date, \(t0.addingTimeInterval(4 * 3600)), '{}', \(t0.addingTimeInterval(-600)))
            """,
            logger: logger
        )
        try await connection.query(
            """
            INSERT INTO broadcasts (id, edition_id, environment, state, plan, created_at, updated_at, finished_at)
            VALUES (\(broadcastID), \(editionID), 0, \(plan.running ? "running" : "completed"), \(options)::jsonb, \(t0),
                \(updatedAt), \(finishedAt))
            """,
            logger: logger
        )
        var counts = EditionCounts()
        var rate = 0.0
        for wave in 1...waves {
            // Who this wave reaches, by a draw v in 0..<1000 per device and edition: receipts after wave 1 for
            // v < 667, after wave 2 for v < 833; so wave 2 goes to v >= 667 and wave 3 to v >= 833.
            let (audience, receiptsFrom, receiptsTo, share): (String, Int, Int, Double) =
                switch wave {
                case 1: ("true", 0, 666, 1)
                case 2: ("v.v >= 667", 667, 832, 1.0 / 3)
                default: ("v.v >= 833", 1000, 999, 1.0 / 6)
                }
            let waveStart = t0.addingTimeInterval(Double(wave - 1) * Self.waveInterval)
            let waveWindow = Self.window * share
            try await connection.query(
                """
                INSERT INTO broadcast_waves (broadcast_id, wave, kind, starts_at, window_seconds, rate, planned, finished_at, next_slot)
                VALUES (\(broadcastID), \(Int16(wave)), 'background', \(waveStart), \(waveWindow), 1, 0,
                    \(waveStart.addingTimeInterval(waveWindow)), \(waveStart.addingTimeInterval(waveWindow)))
                """,
                logger: logger
            )
            let rows = try await connection.query(
                """
                WITH sent AS (
                    INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome, reason)
                    SELECT d.id, \(broadcastID), \(Int16(wave)), ((d.cohort_key::bigint + 2147483648) * 16 / 4294967296)::int, true,
                        \(waveStart) + make_interval(secs => (d.cohort_key::bigint + 2147483648) / 4294967296.0 * \(waveWindow)),
                        CASE WHEN u.u < 5 THEN 'rejected' ELSE 'accepted' END, CASE WHEN u.u < 5 THEN 'Unregistered' END
                    FROM devices d
                    CROSS JOIN LATERAL (SELECT (hashint8extended(d.id, \(plan.ordinal * 8)) & 9223372036854775807) % 1000 AS v) v
                    CROSS JOIN LATERAL (SELECT (hashint8extended(d.id, \(plan.ordinal * 8 + wave)) & 9223372036854775807) % 10000 AS u) u
                    WHERE d.app_id = \(appID) AND d.environment = 0 AND d.active AND d.auto_download
                        AND \(plan.publicationID) = ANY (d.subscriptions) AND \(unescaped: audience)
                    RETURNING device_id, cohort, sent_at, outcome
                ), gone AS (
                    UPDATE devices SET active = false, unregistered_at = s.sent_at, updated_at = s.sent_at
                    FROM sent s WHERE devices.id = s.device_id AND s.outcome = 'rejected'
                    RETURNING 1
                ), received AS (
                    INSERT INTO receipts (device_id, edition_id, result, bytes, seconds, received_at)
                    SELECT s.device_id, \(editionID), CASE WHEN v.v % 10 = 0 THEN 'noData' ELSE 'newData' END,
                        CASE WHEN v.v % 10 = 0 THEN 0 ELSE 52428800 END, 4.5, s.sent_at + make_interval(secs => 30 + v.v % 600)
                    FROM sent s
                    CROSS JOIN LATERAL (SELECT (hashint8extended(s.device_id, \(plan.ordinal * 8)) & 9223372036854775807) % 1000 AS v) v
                    WHERE s.outcome = 'accepted' AND v.v BETWEEN \(receiptsFrom) AND \(receiptsTo)
                    ON CONFLICT DO NOTHING
                    RETURNING 1
                ), cohorts AS (
                    INSERT INTO broadcast_cohorts (broadcast_id, wave, cohort, starts_at, ends_at, first_key, end_key, next_key, next_ordinal,
                        planned, sent, accepted, rejected)
                    SELECT \(broadcastID), \(Int16(wave)), c.cohort,
                        \(waveStart) + make_interval(secs => c.cohort * \(waveWindow) / 16),
                        \(waveStart) + make_interval(secs => (c.cohort + 1) * \(waveWindow) / 16),
                        -2147483648 + c.cohort * 268435456::bigint, -2147483648 + (c.cohort + 1) * 268435456::bigint,
                        -2147483648 + (c.cohort + 1) * 268435456::bigint, c.sent, c.sent, c.sent, c.accepted,
                        CASE WHEN c.sent > c.accepted THEN jsonb_build_object('Unregistered', c.sent - c.accepted) ELSE '{}' END
                    FROM (SELECT cohort, count(*)::int AS sent, (count(*) FILTER (WHERE outcome = 'accepted'))::int AS accepted
                          FROM sent GROUP BY cohort) c
                    RETURNING sent
                )
                SELECT (SELECT count(*) FROM sent), (SELECT count(*) FROM received), (SELECT count(*) FROM gone),
                    (SELECT count(*) FROM cohorts)
                """,
                logger: logger
            )
            var sent = 0
            for try await (wrote, received, gone, _) in rows.decode((Int, Int, Int, Int).self) {
                sent = wrote
                counts.deliveries += wrote
                counts.receipts += received
                counts.unregistered += gone
            }
            if wave == 1 { rate = Double(sent) / Self.window }
            try await connection.query(
                """
                UPDATE broadcast_waves SET planned = \(sent), rate = \(max(rate, 0.001))
                WHERE broadcast_id = \(broadcastID) AND wave = \(Int16(wave))
                """,
                logger: logger
            )
            // The batches the workers leased: each cohort cut into key ranges of about --batch-size devices.
            try await connection.query(
                """
                INSERT INTO broadcast_batches (broadcast_id, wave, cohort, first_key, last_key, first_ordinal, devices, lease_owner,
                    lease_expires_at, leases, done_at, slot_start)
                SELECT c.broadcast_id, c.wave, c.cohort,
                    c.first_key + (c.end_key - c.first_key) * j / m.n, c.first_key + (c.end_key - c.first_key) * (j + 1) / m.n - 1,
                    c.sent * j / m.n, c.sent * (j + 1) / m.n - c.sent * j / m.n, 'paperboy-bench',
                    c.starts_at + (c.ends_at - c.starts_at) * (j + 1) / m.n + interval '30 seconds', 1,
                    c.starts_at + (c.ends_at - c.starts_at) * (j + 1) / m.n, c.starts_at + (c.ends_at - c.starts_at) * j / m.n
                FROM broadcast_cohorts c
                CROSS JOIN LATERAL (SELECT greatest(1, ceil(c.sent / \(Double(batchSize))))::int AS n) m
                CROSS JOIN LATERAL generate_series(0, m.n - 1) j
                WHERE c.broadcast_id = \(broadcastID) AND c.wave = \(Int16(wave))
                """,
                logger: logger
            )
        }
        return counts
    }

    static func sizes(_ client: PostgresClient, _ logger: Logger) async throws -> Sizes {
        let rows = try await client.query(
            """
            SELECT pg_total_relation_size('deliveries'), pg_total_relation_size('receipts'), pg_total_relation_size('devices'),
                pg_total_relation_size('broadcast_batches'), pg_database_size(current_database())
            """,
            logger: logger
        )
        for try await (deliveries, receipts, devices, batches, database) in rows.decode((Int64, Int64, Int64, Int64, Int64).self) {
            return Sizes(deliveriesBytes: deliveries, receiptsBytes: receipts, devicesBytes: devices, batchesBytes: batches, databaseBytes: database)
        }
        throw BenchError("the table sizes query returned no row")
    }

    static func megabytes(_ bytes: Int64) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_048_576)
    }

    /// The per-day table, a chart of the ledger's size after each day's prune, and the per-device figures.
    static func report(_ result: Result) -> String {
        var lines = [
            "history: \(result.devices.formatted()) devices (\(result.targets.formatted()) targets), days \(result.simulatedDays.first ?? 0)–\(result.days), retention \(String(format: "%g", result.retentionDays)) d, two editions a day"
                + (result.running ? ", then a running broadcast" : ""),
            "",
            "day  date        +deliveries   +receipts  -deliveries   -receipts   deliveries     receipts  ledger MB before  after  devices MB  sim s  prune s",
        ]
        for day in result.daysDetail {
            lines.append(
                String(day.day).leftPadded(3) + "  " + day.date + day.deliveriesInserted.formatted().leftPadded(13)
                    + day.receiptsInserted.formatted().leftPadded(12) + day.deliveriesPruned.formatted().leftPadded(13)
                    + day.receiptsPruned.formatted().leftPadded(12) + day.deliveries.formatted().leftPadded(13)
                    + day.receipts.formatted().leftPadded(13)
                    + String(format: "%18.1f", Double(day.beforePrune.ledgerBytes) / 1_048_576)
                    + String(format: "%7.1f", Double(day.afterPrune.ledgerBytes) / 1_048_576)
                    + String(format: "%12.1f", Double(day.afterPrune.devicesBytes) / 1_048_576)
                    + String(format: "%7.1f", day.simulateSeconds) + String(format: "%9.1f", day.pruneSeconds)
            )
        }
        let largest = result.daysDetail.map { max($0.afterPrune.ledgerBytes, $0.beforePrune.ledgerBytes) }.max() ?? 1
        lines.append("")
        lines.append("ledger bytes (deliveries + receipts, tables and indexes) after each day's prune; | marks the size before it")
        for day in result.daysDetail {
            let width = 60
            let after = Int((Double(day.afterPrune.ledgerBytes) / Double(max(largest, 1)) * Double(width)).rounded())
            let before = Int((Double(day.beforePrune.ledgerBytes) / Double(max(largest, 1)) * Double(width)).rounded())
            var bar = String(repeating: "#", count: after) + String(repeating: " ", count: max(0, width - after))
            if before > after, before <= width {
                bar = String(bar.prefix(before - 1)) + "|" + String(bar.dropFirst(before))
            }
            lines.append("day " + String(day.day).leftPadded(3) + " " + bar + " " + megabytes(day.afterPrune.ledgerBytes))
        }
        lines.append("")
        lines.append(
            "at the end: deliveries \(result.finalDeliveries.formatted()) rows \(megabytes(result.final.deliveriesBytes)), receipts \(result.finalReceipts.formatted()) rows \(megabytes(result.final.receiptsBytes)), devices \(megabytes(result.final.devicesBytes)), batches \(megabytes(result.final.batchesBytes)), database \(megabytes(result.final.databaseBytes))"
        )
        lines.append(
            String(
                format: "per device: %.1f bytes (devices table and indexes); per delivery %.1f bytes, per receipt %.1f bytes",
                result.bytesPerDevice,
                result.bytesPerDelivery ?? 0,
                result.bytesPerReceipt ?? 0
            )
        )
        lines.append(
            String(
                format: "per day of ledger: %.1f MB, %.1f bytes per device (over the %g days the retention holds)",
                result.ledgerBytesPerDay / 1_048_576,
                result.ledgerBytesPerDevicePerDay,
                min(result.retentionDays, Double(result.simulatedDays.count))
            )
        )
        lines.append(String(format: "took %.1f s", result.seconds))
        return lines.joined(separator: "\n")
    }
}
