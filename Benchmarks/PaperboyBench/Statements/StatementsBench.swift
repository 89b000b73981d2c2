import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PostgresNIO

/// `paperboy-bench statements`: the latency of every statement in ``RequestStatements/catalogue`` (what API
/// requests, the scheduler and dispatch batches run) on the database as it stands, each execution with
/// sample values drawn at random from it, writes rolled back.
struct StatementsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "statements",
        abstract: "Time every catalogued request and batch statement with random samples from the database (p50, p99, max).",
        discussion: """
            Each execution draws its own samples: a random device of the app (its id and token), one of the --recent \
            newest broadcasts (by default the newest: the running one `history` leaves) with its edition and \
            publication, and one of that broadcast's batches (its id and key range). Every statement runs inside a transaction that is rolled back, on one connection, one at a time; \
            the time is the statement's alone, from sending it to its last row, as the client sees it. Needs a \
            database prepared by `paperboy devices seed` and `paperboy-bench history`. Compare two runs with \
            `paperboy-bench compare`.
            """
    )

    @OptionGroup var database: BenchDatabaseOptions

    @Option(help: "Executions per statement.")
    var samples = 200

    @Option(
        name: .customLong("whole-table-samples"),
        help: "Executions per statement that reads a table whole by design (an audience count): they take seconds at 10 M."
    )
    var wholeTableSamples = 5

    @Option(help: ArgumentHelp("Stop sampling a statement after this many seconds of it (at least 3 executions).", valueName: "seconds"))
    var budget = 120.0

    // The newest broadcast is the one being sent (`history --running`): what requests and batches meet during a
    // morning. A finished edition's later-wave audience is empty (every device had its pushes or its receipt),
    // so a batch boundary for it reads the whole key range: no worker ever leases such a batch.
    @Option(help: "Draw the broadcast (and its edition) from the app's newest this many broadcasts (1: the running one).")
    var recent = 1

    @Option(help: "The app's id (default: the only app).")
    var app: Int?

    @Option(help: "A label for the run, e.g. 100k; kept in the JSON.")
    var label: String?

    @Option(help: ArgumentHelp("Only the statements whose name contains this text.", valueName: "text"))
    var only: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    @Option(name: .customLong("json-file"), help: ArgumentHelp("Also write the result as JSON to this file.", valueName: "path"))
    var jsonFile: String?

    func validate() throws {
        guard samples >= 1 else { throw ValidationError("--samples: at least 1, got \(samples)") }
        guard wholeTableSamples >= 1 else { throw ValidationError("--whole-table-samples: at least 1, got \(wholeTableSamples)") }
        guard budget > 0 else { throw ValidationError("--budget: positive seconds, got \(budget)") }
        guard recent >= 1 else { throw ValidationError("--recent: at least 1, got \(recent)") }
        if let app, app < 1 { throw ValidationError("--app: an app id, got \(app)") }
    }

    struct Timing: Codable {
        var name: String
        var wholeTableReads: Bool
        var samples: Int
        var p50Ms: Double
        var p99Ms: Double
        var maxMs: Double
        var meanMs: Double
    }

    struct Table: Codable {
        var rows: Int64
        var bytes: Int64
    }

    struct Result: Codable {
        var label: String?
        var devices: Int
        /// Estimated rows (`pg_class.reltuples`, exact after VACUUM ANALYZE) and total bytes of the big tables.
        var tables: [String: Table]
        var loadAverage: String?
        var cores: Int
        var statements: [Timing]
        var seconds: Double
    }

    /// What samples are drawn from.
    struct Pool {
        struct Broadcast {
            var id: UUID
            var editionID: UUID
            var publicationID: Int
            var batches: [(id: Int64, keys: ClosedRange<Int64>)]
        }

        var appID: Int
        var deviceIDs: ClosedRange<Int64>
        var broadcasts: [Broadcast]
    }

    func run() async throws {
        LoggingSystem.bootstrapBench()
        let logger = Logger(label: "paperboy-bench.statements")
        let started = ContinuousClock.now
        let statements = RequestStatements.catalogue.filter { only == nil || $0.name.contains(only!) }
        guard !statements.isEmpty else { throw BenchError("--only: no catalogued statement's name contains '\(only ?? "")'") }
        let result = try await database.withClient(logger: logger) { client in
            let pool = try await Self.pool(client: client, app: app, recent: recent, logger: logger)
            let devices = try await client.value("SELECT count(*) FROM devices WHERE app_id = \(pool.appID)", as: Int.self, logger: logger) ?? 0
            var tables: [String: Table] = [:]
            let sizes = try await client.query(
                """
                SELECT relname::text, reltuples::bigint, pg_total_relation_size(oid) FROM pg_class
                WHERE relkind = 'r' AND relname IN ('devices', 'deliveries', 'receipts', 'broadcasts', 'broadcast_batches', 'editions')
                """,
                logger: logger
            )
            for try await (name, rows, bytes) in sizes.decode((String, Int64, Int64).self) { tables[name] = Table(rows: rows, bytes: bytes) }
            progress(
                "statements: \(statements.count) statements, \(samples) samples each (\(wholeTableSamples) for whole-table reads), "
                    + "\(devices.formatted()) devices, ≈\((tables["deliveries"]?.rows ?? 0).formatted()) deliveries, ≈\((tables["receipts"]?.rows ?? 0).formatted()) receipts"
            )
            var timings: [Timing] = []
            try await client.withConnection { connection in
                for statement in statements {
                    let whole = !statement.wholeTableReads.isEmpty
                    let wanted = whole ? wholeTableSamples : samples
                    var milliseconds: [Double] = []
                    var spent = 0.0
                    // One execution first, untimed: the first after connecting pays for catalog lookups.
                    if !whole {
                        _ = try await Self.execute(statement, Self.draw(pool, connection: connection, logger: logger), on: connection, logger: logger)
                    }
                    while milliseconds.count < wanted, spent < budget || milliseconds.count < 3 {
                        let samples = try await Self.draw(pool, connection: connection, logger: logger)
                        let elapsed = try await Self.execute(statement, samples, on: connection, logger: logger)
                        milliseconds.append(elapsed * 1000)
                        spent += elapsed
                    }
                    let sorted = milliseconds.sorted()
                    let timing = Timing(
                        name: statement.name,
                        wholeTableReads: whole,
                        samples: sorted.count,
                        p50Ms: percentile(sorted, 50),
                        p99Ms: percentile(sorted, 99),
                        maxMs: sorted.last ?? 0,
                        meanMs: sorted.reduce(0, +) / Double(sorted.count)
                    )
                    timings.append(timing)
                    progress(
                        "  " + statement.name + String(format: ": p50 %.2f ms, p99 %.2f ms (%d samples)", timing.p50Ms, timing.p99Ms, timing.samples)
                    )
                }
            }
            let load = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8).split(separator: " ").prefix(3).joined(separator: " ")
            return Result(
                label: label,
                devices: devices,
                tables: tables,
                loadAverage: load,
                cores: ProcessInfo.processInfo.activeProcessorCount,
                statements: timings,
                seconds: (ContinuousClock.now - started).seconds
            )
        }
        if let jsonFile { try writeJSON(result, to: jsonFile, flag: "--json-file") }
        if json { return try printJSON(result) }
        print(Self.report(result))
    }

    /// Runs the statement with the samples inside a transaction that is rolled back; its own time, in seconds.
    static func execute(
        _ statement: RequestStatements.Statement,
        _ samples: RequestStatements.Samples,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Double {
        try await connection.query("BEGIN", logger: logger)
        let start = ContinuousClock.now
        do {
            let rows = try await connection.query(statement.query(samples), logger: logger)
            for try await _ in rows {}
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw BenchError("statement '\(statement.name)' failed: \(String(reflecting: error))")
        }
        let elapsed = (ContinuousClock.now - start).seconds
        try await connection.query("ROLLBACK", logger: logger)
        return elapsed
    }

    static func pool(client: PostgresClient, app: Int?, recent: Int, logger: Logger) async throws -> Pool {
        var apps: [Int] = []
        for try await id in try await client.query("SELECT id FROM apps ORDER BY id", logger: logger).decode(Int.self) { apps.append(id) }
        let appID: Int
        if let app {
            guard apps.contains(app) else { throw BenchError("--app: no app \(app)") }
            appID = app
        } else {
            guard apps.count == 1 else { throw BenchError("--app: \(apps.count) apps are registered; choose one with --app") }
            appID = apps[0]
        }
        var ids: ClosedRange<Int64>?
        let range = try await client.query(
            "SELECT min(id), max(id) FROM devices WHERE app_id = \(appID) AND environment = 0",
            logger: logger
        )
        for try await (low, high) in range.decode((Int64?, Int64?).self) {
            if let low, let high { ids = low...high }
        }
        guard let ids else { throw BenchError("--app: app \(appID) has no production devices; seed them with `paperboy devices seed`") }
        var broadcasts: [Pool.Broadcast] = []
        let rows = try await client.query(
            """
            SELECT b.id, b.edition_id, e.publication_id FROM broadcasts b
            JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
            WHERE p.app_id = \(appID) AND b.environment = 0 ORDER BY b.created_at DESC LIMIT \(recent)
            """,
            logger: logger
        )
        for try await (id, edition, publication) in rows.decode((UUID, UUID, Int).self) {
            broadcasts.append(Pool.Broadcast(id: id, editionID: edition, publicationID: publication, batches: []))
        }
        guard !broadcasts.isEmpty else { throw BenchError("no broadcasts to sample: run `paperboy-bench history` first") }
        for index in broadcasts.indices {
            let batches = try await client.query(
                "SELECT id, first_key, last_key FROM broadcast_batches WHERE broadcast_id = \(broadcasts[index].id)",
                logger: logger
            )
            for try await (id, first, last) in batches.decode((Int64, Int64, Int64).self) {
                broadcasts[index].batches.append((id, first...max(first, last)))
            }
            guard !broadcasts[index].batches.isEmpty else {
                throw BenchError("broadcast \(broadcasts[index].id) has no batches to sample (was it made by `paperboy-bench history`?)")
            }
        }
        return Pool(appID: appID, deviceIDs: ids, broadcasts: broadcasts)
    }

    /// Fresh samples: a random existing device, broadcast and batch.
    static func draw(_ pool: Pool, connection: PostgresConnection, logger: Logger) async throws -> RequestStatements.Samples {
        var device: (Int64, ByteBuffer)?
        for _ in 0..<10 where device == nil {
            let id = Int64.random(in: pool.deviceIDs)
            let rows = try await connection.query(
                "SELECT id, token FROM devices WHERE id >= \(id) AND app_id = \(pool.appID) AND environment = 0 ORDER BY id LIMIT 1",
                logger: logger
            )
            for try await row in rows.decode((Int64, ByteBuffer).self) { device = row }
        }
        guard let (deviceID, token) = device else { throw BenchError("could not draw a device of app \(pool.appID)") }
        let broadcast = pool.broadcasts.randomElement()!
        let batch = broadcast.batches.randomElement()!
        return RequestStatements.Samples(
            appID: pool.appID,
            publicationID: broadcast.publicationID,
            environment: .production,
            token: DeviceToken(bytes: Array(token.readableBytesView)),
            deviceID: deviceID,
            editionID: broadcast.editionID,
            broadcastID: broadcast.id,
            batchID: batch.id,
            now: Date(),
            batchKeys: batch.keys
        )
    }

    static func report(_ result: Result) -> String {
        var lines = [
            "statements: \((result.label.map { $0 + ": " }) ?? "")\(result.devices.formatted()) devices, ≈\((result.tables["deliveries"]?.rows ?? 0).formatted()) deliveries, ≈\((result.tables["receipts"]?.rows ?? 0).formatted()) receipts; load average \(result.loadAverage ?? "?") on \(result.cores) cores",
            "",
            "statement".rightPadded(66) + "samples    p50 ms    p99 ms    max ms",
        ]
        func row(_ timing: Timing) -> String {
            timing.name.rightPadded(66) + String(timing.samples).leftPadded(7)
                + String(format: "%10.2f%10.2f%10.2f", timing.p50Ms, timing.p99Ms, timing.maxMs)
        }
        lines += result.statements.filter { !$0.wholeTableReads }.map(row)
        lines.append("")
        lines.append("reading a table whole by design (grow with the fleet; not in the 1.5x goal):")
        lines += result.statements.filter(\.wholeTableReads).map(row)
        lines.append(String(format: "\ntook %.1f s", result.seconds))
        return lines.joined(separator: "\n")
    }
}

/// `paperboy-bench compare`: two `statements --json` runs side by side, with the growth of p50 and p99.
struct CompareBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare two `paperboy-bench statements --json` results: p50 and p99 ratios (large / small), flagging growth over --goal."
    )

    @Argument(help: ArgumentHelp("The smaller database's result (JSON).", valueName: "small.json"))
    var small: String

    @Argument(help: ArgumentHelp("The larger database's result (JSON).", valueName: "large.json"))
    var large: String

    @Option(help: "The largest acceptable ratio.")
    var goal = 1.5

    @Flag(help: "Print the comparison as JSON.")
    var json = false

    struct Row: Codable {
        var name: String
        var wholeTableReads: Bool
        var smallP50Ms: Double
        var largeP50Ms: Double
        var p50Ratio: Double
        var smallP99Ms: Double
        var largeP99Ms: Double
        var p99Ratio: Double
        var withinGoal: Bool
    }

    struct Comparison: Codable {
        var small: String
        var large: String
        var smallDevices: Int
        var largeDevices: Int
        var goal: Double
        var rows: [Row]
        var overGoal: [String]
    }

    func run() throws {
        func load(_ path: String, _ name: String) throws -> StatementsBench.Result {
            do {
                return try JSONDecoder().decode(StatementsBench.Result.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw BenchError("\(name): \(path) is not a `paperboy-bench statements --json` result (\(error))")
            }
        }
        let smallRun = try load(small, "small.json")
        let largeRun = try load(large, "large.json")
        let largeByName = Dictionary(largeRun.statements.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var rows: [Row] = []
        for before in smallRun.statements {
            guard let after = largeByName[before.name] else { continue }
            let p50 = after.p50Ms / max(before.p50Ms, 1e-6)
            let p99 = after.p99Ms / max(before.p99Ms, 1e-6)
            rows.append(
                Row(
                    name: before.name,
                    wholeTableReads: before.wholeTableReads,
                    smallP50Ms: before.p50Ms,
                    largeP50Ms: after.p50Ms,
                    p50Ratio: p50,
                    smallP99Ms: before.p99Ms,
                    largeP99Ms: after.p99Ms,
                    p99Ratio: p99,
                    withinGoal: p50 <= goal && p99 <= goal
                )
            )
        }
        let over = rows.filter { !$0.wholeTableReads && !$0.withinGoal }.map(\.name)
        let comparison = Comparison(
            small: smallRun.label ?? small,
            large: largeRun.label ?? large,
            smallDevices: smallRun.devices,
            largeDevices: largeRun.devices,
            goal: goal,
            rows: rows,
            overGoal: over
        )
        if json { return try printJSON(comparison) }
        var lines = [
            "statements at \(comparison.smallDevices.formatted()) devices (\(comparison.small)) and \(comparison.largeDevices.formatted()) (\(comparison.large)); goal: neither ratio over \(goal)",
            "",
            "statement".rightPadded(66) + "  p50 ms small    large  ratio   p99 ms small    large  ratio",
        ]
        func line(_ row: Row) -> String {
            row.name.rightPadded(66)
                + String(
                    format: "%14.2f %8.2f %6.2f %14.2f %8.2f %6.2f",
                    row.smallP50Ms,
                    row.largeP50Ms,
                    row.p50Ratio,
                    row.smallP99Ms,
                    row.largeP99Ms,
                    row.p99Ratio
                )
                + (row.wholeTableReads ? "" : (row.withinGoal ? "  ok" : "  OVER \(goal)x"))
        }
        lines += rows.filter { !$0.wholeTableReads }.map(line)
        lines.append("")
        lines.append("reading a table whole by design (not in the goal):")
        lines += rows.filter(\.wholeTableReads).map(line)
        lines.append("")
        let perRequest = rows.filter { !$0.wholeTableReads }.count
        lines.append(
            "\(perRequest - over.count) of \(perRequest) statements within \(goal)x at p50 and p99"
                + (over.isEmpty ? "" : "; over: " + over.joined(separator: "; "))
        )
        print(lines.joined(separator: "\n"))
    }
}
