import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// Every statement of ``RequestStatements/catalogue``, explained on a database with a fleet and days of
/// history, reads the big tables through indexes: a sequential scan there costs a request tens of
/// milliseconds at a million devices and seconds at ten million.
@Suite("Request and batch statements stay off sequential scans")
struct RequestPlanTests {
    static let devices = 200_000
    static let seed: UInt64 = 11

    @Test(
        "no catalogued statement scans devices, deliveries, receipts or broadcasts sequentially, nor probes a device's receipts or deliveries without the device when the edition is newer than the statistics"
    )
    func noSequentialScans() async throws {
        try await TestDatabase.with { db in
            let clock = ContinuousClock()
            let started = clock.now
            let samples = try await Self.seed(db)
            let seeded = clock.now - started
            db.logger.info("seeded the plan test's database", metadata: ["took": "\(seeded)"])

            // The check sees a lookup no index serves (the token without the app, which leads every index
            // holding the token): the database is large enough for the planner to show a sequential scan.
            let unindexed: PostgresQuery = "SELECT id FROM devices WHERE token = \(ByteBuffer(bytes: samples.token.bytes))"
            #expect(try await Self.scans(unindexed, db).contains { $0.node == "Seq Scan" && $0.table == "devices" })

            for statement in RequestStatements.catalogue {
                var scans = try await Self.scans(statement.query(samples), db)
                if let types = statement.preparedTypes {
                    // Run prepared, the statement gets the generic plan after a few executions: it must hold too.
                    let generic = try await Self.genericScans(statement.query(samples), types: types, db)
                    // A generic plan's conditions or filters name the parameters ($1), a custom plan's the values
                    // (a statement that reads nothing by a value, an INSERT of its values, has neither).
                    if scans.contains(where: { !$0.condition.isEmpty || !$0.filter.isEmpty }) {
                        #expect(
                            generic.contains { $0.condition.contains("$") || $0.filter.contains("$") },
                            "\(statement.name): no generic plan explained: \(generic)"
                        )
                    }
                    scans += generic
                }
                let sequential = Set(scans.filter { $0.node == "Seq Scan" }.map(\.table))
                let offending = sequential.intersection(RequestStatements.bigTables).subtracting(statement.wholeTableReads)
                #expect(offending.isEmpty, "\(statement.name) reads \(offending.sorted()) sequentially")
                // A device's deliveries are looked up with the broadcast or the time, never all of them: the
                // ledger holds every push of the retention.
                let wholeHistory = scans.filter(\.readsWholeDeviceHistory)
                #expect(wholeHistory.isEmpty, "\(statement.name) reads a device's whole delivery history: \(wholeHistory)")
            }

            // A new batch late in its cohort, the devices left in the range (a twentieth of the fleet) a few batches'
            // worth: the carve takes the batch's devices from the index in key order and stops at its size. Had the
            // planner taken the range for hardly larger than the batch (a bigint publication against the integer
            // subscriptions: a fixed 5 % estimate), it read the whole range in a bitmap scan and sorted it, every batch.
            let carve = try await Self.scans(RequestStatements.carveLateInCohort(samples), db).filter { $0.table == "devices" }
            #expect(
                carve.contains { $0.node == "Index Scan" } && !carve.contains { $0.node.hasPrefix("Bitmap") },
                "the carve late in a cohort reads the range whole: \(carve)"
            )

            // This morning's edition and its broadcast, newer than the statistics (autovacuum analyzes a big
            // receipts table after a tenth of it changed: hours, or never, in a morning). The planner then
            // thinks the edition has about one receipt, and a probe for one device's receipt may read all of
            // the edition's instead (at 10 M devices: 70 ms a duplicate receipt, and a later wave's audience
            // that never finishes). The per-device probes must stay on the primary keys.
            let fresh = try await Self.addTodaysEdition(samples, db)
            try await Self.expectProbesKeyedByDevice(fresh, db)
        }
    }

    /// Every scan of receipts or deliveries in the per-device probes has the device in its index condition.
    static func expectProbesKeyedByDevice(_ samples: RequestStatements.Samples, _ db: TestDatabase) async throws {
        for statement in RequestStatements.catalogue {
            let name = statement.name
            guard probesPerDevice.contains(where: { name.contains($0) }) else { continue }
            let scans = try await scans(statement.query(samples), db)
            // "receipts per wave and cohort" reads the edition's receipts on purpose; its probes are the deliveries.
            let drivenByReceipts = name.contains("receipts per wave and cohort")
            // The wake rates read the window's broadcasts' deliveries on purpose (by broadcast: an index scan, or a
            // bitmap scan, whose heap node names no index condition); their per-device probes are the receipts.
            // A sampled report reads only the sampled devices' deliveries: every scan has the device.
            let drivenByDeliveries = name.contains("wake rates") && !name.contains("sampled")
            var unkeyed: [Scan] = []
            for scan in scans where !scan.condition.contains("device_id") {
                if drivenByDeliveries, scan.table == "deliveries" { continue }
                if scan.table == "deliveries" || (scan.table == "receipts" && !drivenByReceipts) { unkeyed.append(scan) }
            }
            #expect(unkeyed.isEmpty, "\(name), for an edition newer than the statistics, probes without the device: \(unkeyed)")
        }
    }

    /// The statements that look up one device's receipt or deliveries of an edition or broadcast.
    static let probesPerDevice = [
        "read the stored one", "receipts per wave and cohort", "wave 2", "alert wave", "a later wave's audience", "wake rates",
    ]

    /// An edition published now, its running broadcast, and as many deliveries and receipts as an older
    /// edition has, without ANALYZE: the samples for it.
    static func addTodaysEdition(_ samples: RequestStatements.Samples, _ db: TestDatabase) async throws -> RequestStatements.Samples {
        let now = samples.now
        let statements: [PostgresQuery] = [
            """
            INSERT INTO editions (id, publication_id, issue_date, deadline, manifest, published_at)
            VALUES (md5('today')::uuid, \(samples.publicationID), date '2030-01-02', \(now) + interval '6 hours', '{}', \(now))
            """,
            """
            INSERT INTO broadcasts (id, edition_id, environment, state, plan, created_at)
            VALUES (md5('today-b')::uuid, md5('today')::uuid, 0, 'running', '{"cohorts":16}', \(now))
            """,
            """
            INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
            SELECT d.id, md5('today-b')::uuid, 1, d.id % 16, true, \(now), 'accepted'
            FROM devices d WHERE d.auto_download AND d.id % 10 = 0
            """,
            """
            INSERT INTO receipts (device_id, edition_id, result, received_at)
            SELECT d.id, md5('today')::uuid, 'newData', \(now) FROM devices d WHERE d.auto_download AND d.id % 10 = 0 AND d.id % 4 <> 0
            """,
        ]
        for statement in statements { try await db.client.query(statement, logger: db.logger) }
        var fresh = samples
        let ids = try await db.client.query("SELECT md5('today')::uuid, md5('today-b')::uuid", logger: db.logger)
        for try await (edition, broadcast) in ids.decode((UUID, UUID).self) { (fresh.editionID, fresh.broadcastID) = (edition, broadcast) }
        return fresh
    }

    /// A scan in a plan: node type, table, and index condition (empty for none).
    struct Scan: CustomStringConvertible {
        var node: String
        var table: String
        var condition: String
        /// The scan's filter (rows read, then tested).
        var filter = ""

        /// Deliveries found by device alone: every push of the device in the retention.
        var readsWholeDeviceHistory: Bool {
            guard table == "deliveries", condition.contains("device_id") else { return false }
            return !condition.contains("broadcast_id") && !condition.contains("sent_at")
        }

        var description: String { "\(node) on \(table) \(condition)" }
    }

    /// The scans of the generic plan PostgreSQL gives a prepared statement (`plan_cache_mode =
    /// force_generic_plan`): the plan made without the parameters' values, which a connection keeps reusing.
    static func genericScans(_ query: PostgresQuery, types: [PostgresDataType], _ db: TestDatabase) async throws -> [Scan] {
        let names = try types.map { try #require($0.knownSQLName) }
        do {
            return try await genericScans(query, names: names, db)
        } catch {
            // PSQLError's description hides the server's message.
            Issue.record("explaining the generic plan failed: \(String(reflecting: error))")
            throw error
        }
    }

    private static func genericScans(_ query: PostgresQuery, names: [String], _ db: TestDatabase) async throws -> [Scan] {
        try await db.client.withConnection { connection in
            let prepare = "PREPARE plan_test (\(names.joined(separator: ", "))) AS " + query.sql
            _ = try await connection.query(PostgresQuery(unsafeSQL: prepare), logger: db.logger)
            _ = try await connection.query("SET plan_cache_mode = force_generic_plan", logger: db.logger)
            // A generic plan is made without the parameters' values: NULLs do.
            let parameters = Array(repeating: "NULL", count: names.count).joined(separator: ", ")
            // VERBOSE: a function scan shows its call, where a statement whose parameters are arrays names them.
            let explain = PostgresQuery(unsafeSQL: "EXPLAIN (FORMAT JSON, VERBOSE) EXECUTE plan_test (\(parameters))")
            let scans = try await Self.scans(of: connection.query(explain, logger: db.logger))
            _ = try await connection.query("DEALLOCATE plan_test", logger: db.logger)
            _ = try await connection.query("RESET plan_cache_mode", logger: db.logger)
            return scans
        }
    }

    /// The scans of a statement's plan.
    static func scans(_ query: PostgresQuery, _ db: TestDatabase) async throws -> [Scan] {
        let explain = PostgresQuery(unsafeSQL: "EXPLAIN (FORMAT JSON) " + query.sql, binds: query.binds)
        return try await scans(of: db.client.query(explain, logger: db.logger))
    }

    /// The scans of the plan an `EXPLAIN (FORMAT JSON)` returned.
    static func scans(of rows: PostgresRowSequence) async throws -> [Scan] {
        var text = ""
        for try await plan in rows.decode(ByteBuffer.self) {
            text += String(buffer: plan)
        }
        let plans = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        var scans: [Scan] = []
        func walk(_ node: [String: Any]) {
            if let type = node["Node Type"] as? String, let table = node["Relation Name"] as? String {
                scans.append(
                    Scan(node: type, table: table, condition: node["Index Cond"] as? String ?? "", filter: node["Filter"] as? String ?? "")
                )
            } else if let type = node["Node Type"] as? String, let call = node["Function Call"] as? String {
                // `unnest($1, …)`: the rows of arrays bound as parameters (RecordReceipts).
                scans.append(Scan(node: type, table: "", condition: "", filter: call))
            } else if let type = node["Node Type"] as? String {
                // A join's or a result's own condition: where a generic plan compares with a parameter that no scan
                // reads (the due cohort's `<= $1`).
                let conditions = ["Join Filter", "Filter", "One-Time Filter"].compactMap { node[$0] as? String }
                if !conditions.isEmpty { scans.append(Scan(node: type, table: "", condition: "", filter: conditions.joined(separator: " AND "))) }
            }
            for child in node["Plans"] as? [[String: Any]] ?? [] { walk(child) }
        }
        for plan in plans { if let root = plan["Plan"] as? [String: Any] { walk(root) } }
        return scans
    }

    /// A fleet of 200,000 devices (a tenth of them Android devices registered with FCM) with five hundred days of editions and broadcasts (the newest running,
    /// with a leased batch), and four days of deliveries and receipts for a tenth of the devices, analyzed:
    /// each edition holds an eighth of the ledger, and each device with a history eight pushes, as at a
    /// week's retention they hold a fourteenth and fourteen.
    static func seed(_ db: TestDatabase) async throws -> RequestStatements.Samples {
        let app = try await AppRepository(client: db.client).create(
            try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
            logger: db.logger
        ).app
        let publications = PublicationRepository(client: db.client)
        let morning = try await publications.add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
        _ = try await publications.add(appID: app.id, slug: "evening", title: nil, logger: db.logger)
        _ = try await DeviceSeeder(client: db.client).seed(
            appID: app.id,
            publicationSlugs: ["morning", "evening"],
            count: devices,
            environment: .production,
            seed: seed,
            alertsShare: 0.3,
            autoDownloadShare: 0.8,
            fcmShare: Self.fcmShare,
            logger: db.logger
        )
        let now = Date()
        // Edition i was published i half-days ago; broadcast i sent it. Only the newest still runs.
        let history: [PostgresQuery] = [
            """
            INSERT INTO editions (id, publication_id, issue_date, deadline, manifest, published_at)
            SELECT md5('e' || i)::uuid, \(morning.id), date '2030-01-01' - i, \(now) - make_interval(hours => 12 * i) + interval '6 hours',
                '{}', \(now) - make_interval(hours => 12 * i)
            FROM generate_series(0, 999) i
            """,
            """
            INSERT INTO broadcasts (id, edition_id, environment, state, plan, created_at, finished_at)
            SELECT md5('b' || i)::uuid, md5('e' || i)::uuid, 0, CASE WHEN i = 0 THEN 'running' ELSE 'completed' END, '{"cohorts":16}',
                \(now) - make_interval(hours => 12 * i), CASE WHEN i > 0 THEN \(now) - make_interval(hours => 12 * i - 1) END
            FROM generate_series(0, 999) i
            """,
            """
            INSERT INTO broadcast_waves (broadcast_id, wave, kind, starts_at, window_seconds, rate, planned)
            SELECT md5('b' || i)::uuid, 1, 'background', \(now) - make_interval(hours => 12 * i), 3600, 200, 160000
            FROM generate_series(0, 999) i
            """,
            """
            INSERT INTO broadcast_cohorts (broadcast_id, wave, cohort, starts_at, ends_at, first_key, end_key, next_key, planned)
            SELECT md5('b' || i)::uuid, 1, c, \(now) - make_interval(hours => 12 * i), \(now) - make_interval(hours => 12 * i - 1),
                -2147483648 + c * 268435456::bigint, -2147483648 + (c + 1) * 268435456::bigint,
                CASE WHEN i = 0 THEN -2147483648 + c * 268435456::bigint + 1000 ELSE -2147483648 + (c + 1) * 268435456::bigint END, 10000
            FROM generate_series(0, 999) i, generate_series(0, 15) c
            """,
            """
            INSERT INTO broadcast_batches (broadcast_id, wave, cohort, first_key, last_key, first_ordinal, devices, lease_owner, lease_expires_at)
            VALUES (md5('b0')::uuid, 1, 0, -2147483648, -2147482649, 0, 50, 'worker', \(now) + interval '1 minute')
            """,
            """
            INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome, reason)
            SELECT d.id, md5('b' || i)::uuid, 1, d.id % 16, true, \(now) - make_interval(hours => 12 * i) + make_interval(secs => d.id % 3600),
                CASE WHEN d.id % 100 = 0 THEN 'rejected' ELSE 'accepted' END, CASE WHEN d.id % 100 = 0 THEN 'Unregistered' END
            FROM devices d, generate_series(0, 7) i WHERE d.auto_download AND d.id % 10 = 0
            """,
            """
            INSERT INTO receipts (device_id, edition_id, result, received_at)
            SELECT d.id, md5('e' || i)::uuid, CASE WHEN d.id % 7 = 0 THEN 'failed' ELSE 'newData' END,
                \(now) - make_interval(hours => 12 * i) + make_interval(secs => d.id % 3600 + 30)
            FROM devices d, generate_series(0, 7) i WHERE d.auto_download AND d.id % 10 = 0 AND d.id % 4 <> 0
            """,
            // Dormancy counts (migration 0011): every device pushed in a wave 1 has one.
            """
            INSERT INTO device_pushes (device_id, pushed_edition, editions_unanswered)
            SELECT id, md5('e0')::uuid, id % 4 FROM devices WHERE auto_download
            """,
            // Reading habits (migration 0025): half the devices have one, and a week of broadcasts counted first opens.
            """
            INSERT INTO device_habits (device_id, weekday_minute, weekday_spread, weekday_mornings, last_day, cohort_key)
            SELECT id, 200 + id % 120, 10, 6, 20000, cohort_key FROM devices WHERE id % 2 = 0
            """,
            """
            INSERT INTO broadcast_opens (broadcast_id, device_id, waiting_since)
            SELECT md5('b' || i)::uuid, d.id, CASE WHEN d.id % 5 = 0 THEN \(now) - make_interval(hours => 12 * i) END
            FROM devices d, generate_series(0, 7) i WHERE d.auto_download AND d.id % 3 = 0
            """,
            "ANALYZE",
        ]
        for statement in history { try await db.client.query(statement, logger: db.logger) }

        // A stored device of each provider, from index 4242 on.
        var token: DeviceToken?
        var fcmToken: FCMToken?
        var index = 4242
        while token == nil || fcmToken == nil {
            switch try DeviceSeeder.pushToken(index: index, seed: seed, fcmShare: Self.fcmShare) {
            case .apns(let apns): token = token ?? apns
            case .fcm(let fcm): fcmToken = fcmToken ?? fcm
            }
            index += 1
        }
        guard let token, let fcmToken else { throw CancellationError() }
        var deviceID: Int64 = 0
        let rows = try await db.client.query("SELECT id FROM devices WHERE token = \(ByteBuffer(bytes: token.bytes))", logger: db.logger)
        for try await id in rows.decode(Int64.self) { deviceID = id }
        var batchID: Int64 = 0
        for try await id in try await db.client.query("SELECT max(id) FROM broadcast_batches", logger: db.logger).decode(Int64.self) {
            batchID = id
        }
        var editionID = UUID()
        var broadcastID = UUID()
        let running = try await db.client.query("SELECT md5('e0')::uuid, md5('b0')::uuid", logger: db.logger)
        for try await (edition, broadcast) in running.decode((UUID, UUID).self) { (editionID, broadcastID) = (edition, broadcast) }
        return RequestStatements.Samples(
            appID: app.id,
            publicationID: morning.id,
            environment: .production,
            token: token,
            deviceID: deviceID,
            editionID: editionID,
            broadcastID: broadcastID,
            batchID: batchID,
            now: now,
            fcmToken: fcmToken
        )
    }

    static let fcmShare = 0.1
}
