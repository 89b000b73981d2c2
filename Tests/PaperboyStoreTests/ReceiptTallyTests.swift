import Foundation
import Logging
import PaperboyCore
import PaperboyTesting
import PostgresNIO
import Testing

@testable import PaperboyStore

/// The receipt tallies against the full count they replace: the status's old queries over every receipt of the
/// edition, run here as the reference.
@Suite("Receipt tallies")
struct ReceiptTallyTests {
    /// Steps without the lag or the interval: the tests' receipts are committed before each step.
    static let immediate = ReceiptTallies.Configuration(lag: .zero, interval: .zero)

    /// Twelve devices (a third FCM) of one app, an edition, and two broadcasts of it: `cancelled` (wave 1 to the
    /// first four devices) and `running` (wave 1 to the first ten, in cohorts 0 and 1); devices 10 and 11 are
    /// reached by neither.
    struct Fleet {
        var appID: Int
        var edition: UUID
        var cancelled: UUID
        var running: UUID
        /// Device ids and tokens, in id order.
        var devices: [(id: Int64, token: PushToken)]
        var db: TestDatabase

        func receipt(_ device: Int, _ result: ReceiptResult) async throws {
            _ = try await ReceiptRepository(client: db.client).record(
                appID: appID,
                candidates: [devices[device].token],
                ReceiptReport(editionID: edition, result: result),
                logger: db.logger
            )
        }

        func deliver(_ devices: [Int], broadcast: UUID, wave: Int) async throws {
            let ids = devices.map { self.devices[$0].id }
            try await db.client.query(
                """
                INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
                SELECT id, \(broadcast), \(Int16(wave)), (id % 2)::int, true, now(), 'accepted' FROM unnest(\(ids)::bigint[]) AS u(id)
                """,
                logger: db.logger
            )
        }

        var tallies: ReceiptTallies { ReceiptTallies(client: db.client, configuration: ReceiptTallyTests.immediate) }
    }

    static func seed(_ db: TestDatabase) async throws -> Fleet {
        let app = try await AppRepository(client: db.client).create(
            try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
            logger: db.logger
        ).app
        let morning = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
        _ = try await DeviceSeeder(client: db.client).seed(
            appID: app.id,
            publicationSlugs: ["morning"],
            count: 12,
            environment: .production,
            seed: 26,
            alertsShare: 0,
            autoDownloadShare: 1,
            fcmShare: 0.35,
            logger: db.logger
        )
        var devices: [(id: Int64, token: PushToken)] = []
        let rows = try await db.client.query("SELECT id, provider, token FROM devices ORDER BY id", logger: db.logger)
        for try await (id, provider, token) in rows.decode((Int64, Int16, ByteBuffer).self) {
            let bytes = Array(token.readableBytesView)
            devices.append((id, provider == 0 ? .apns(DeviceToken(bytes: bytes)) : .fcm(FCMToken(bytes: bytes))))
        }
        let edition = UUID()
        let cancelled = UUID()
        let running = UUID()
        try await db.client.query(
            """
            INSERT INTO editions (id, publication_id, issue_date, deadline, manifest)
            VALUES (\(edition), \(morning.id), date '2026-11-24', now() + interval '6 hours', '{}')
            """,
            logger: db.logger
        )
        try await db.client.query(
            """
            INSERT INTO broadcasts (id, edition_id, environment, state, plan, finished_at) VALUES
                (\(cancelled), \(edition), 0, 'cancelled', '{}', now()),
                (\(running), \(edition), 0, 'running', '{}', NULL)
            """,
            logger: db.logger
        )
        let fleet = Fleet(appID: app.id, edition: edition, cancelled: cancelled, running: running, devices: devices, db: db)
        try await fleet.deliver(Array(0..<4), broadcast: cancelled, wave: 1)
        try await fleet.deliver(Array(0..<10), broadcast: running, wave: 1)
        return fleet
    }

    /// What the status used to count on every request, from every receipt: a broadcast's receipts per wave, cohort,
    /// provider and result (each in the last wave that reached the device), and the edition's by result.
    static func fullCount(
        _ fleet: Fleet,
        broadcast: UUID
    ) async throws -> (cells: Set<ReceiptTallies.BroadcastCounts.Cell>, edition: [ReceiptResult: Int]) {
        var cells: Set<ReceiptTallies.BroadcastCounts.Cell> = []
        let rows = try await fleet.db.client.query(
            """
            SELECT last.wave, last.cohort, d.provider, r.result, count(*)
            FROM receipts r JOIN devices d ON d.id = r.device_id
            JOIN LATERAL (
                SELECT x.wave, x.cohort FROM deliveries x WHERE x.device_id = r.device_id AND x.broadcast_id = \(broadcast)
                ORDER BY x.wave DESC LIMIT 1
            ) last ON true
            WHERE r.edition_id = \(fleet.edition)
            GROUP BY 1, 2, 3, 4
            """,
            logger: fleet.db.logger
        )
        for try await (wave, cohort, provider, result, count) in rows.decode((Int16, Int, Int16, String, Int).self) {
            cells.insert(
                .init(wave: Int(wave), cohort: cohort, provider: provider == 0 ? .apns : .fcm, result: ReceiptResult(rawValue: result)!, count: count)
            )
        }
        var edition: [ReceiptResult: Int] = [:]
        let totals = try await fleet.db.client.query(
            "SELECT result, count(*) FROM receipts WHERE edition_id = \(fleet.edition) GROUP BY result",
            logger: fleet.db.logger
        )
        for try await (result, count) in totals.decode((String, Int).self) { edition[ReceiptResult(rawValue: result)!] = count }
        return (cells, edition)
    }

    /// The tallies equal the full count for both broadcasts and the edition.
    static func expectEqualToFullCount(_ fleet: Fleet, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for broadcast in [fleet.cancelled, fleet.running] {
            let tallied = try await fleet.tallies.counts(broadcastID: broadcast, editionID: fleet.edition, logger: fleet.db.logger)
            let full = try await fullCount(fleet, broadcast: broadcast)
            #expect(Set(tallied.cells) == full.cells, comment, sourceLocation: sourceLocation)
            #expect(tallied.edition == full.edition, comment, sourceLocation: sourceLocation)
        }
    }

    @Test(
        "after receipts arrive in several steps, with upgrades, unreached devices and two broadcasts of the edition, the tallies equal the full count"
    )
    func equalToFullCount() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            try await Self.expectEqualToFullCount(fleet, "before any receipt")

            // Step 1: devices of both broadcasts, of one, of none; two failures.
            try await fleet.receipt(0, .newData)
            try await fleet.receipt(1, .failed)
            try await fleet.receipt(2, .noData)
            try await fleet.receipt(4, .failed)
            try await fleet.receipt(10, .newData)
            let first = try #require(try await fleet.tallies.step(logger: db.logger))
            #expect(first.receipts == 5 && first.upgrades == 0)
            try await Self.expectEqualToFullCount(fleet, "step 1")

            // Step 2: device 1's failure (reached by both broadcasts) upgraded, an unreached device fails.
            try await fleet.receipt(1, .newData)
            try await fleet.receipt(5, .newData)
            try await fleet.receipt(11, .failed)
            let second = try #require(try await fleet.tallies.step(logger: db.logger))
            #expect(second.receipts == 3 && second.upgrades == 1)
            try await Self.expectEqualToFullCount(fleet, "step 2: an upgrade moves device 1's count in both broadcasts")

            // Wave 2 goes to the running broadcast's devices without a success; device 4's failure, counted in
            // wave 1, is upgraded after it: its count leaves wave 1 and noData counts in wave 2. Device 7 fails and
            // succeeds before a step sees the failure; the unreached device 11 succeeds.
            try await fleet.deliver([4, 6, 7, 8, 9], broadcast: fleet.running, wave: 2)
            try await fleet.receipt(4, .noData)
            try await fleet.receipt(6, .newData)
            try await fleet.receipt(7, .failed)
            try await fleet.receipt(7, .newData)
            try await fleet.receipt(11, .noData)
            let third = try #require(try await fleet.tallies.step(logger: db.logger))
            #expect(third.receipts == 4 && third.upgrades == 2)
            try await Self.expectEqualToFullCount(fleet, "step 3: upgrades after a later wave, a failure never seen")

            // A repeated receipt changes nothing, and a step with nothing new counts nothing.
            try await fleet.receipt(0, .failed)
            let fourth = try #require(try await fleet.tallies.step(logger: db.logger))
            #expect(fourth.receipts == 0)
            try await Self.expectEqualToFullCount(fleet, "step 4: nothing new")

            // The status shows the tallies: per wave and cohort, per provider, and the edition's.
            let progress = try #require(try await BroadcastRepository(client: db.client).progress(id: fleet.running, logger: db.logger))
            let full = try await Self.fullCount(fleet, broadcast: fleet.running)
            #expect(progress.receipts == Dictionary(uniqueKeysWithValues: full.edition.map { ($0.key.rawValue, $0.value) }))
            #expect(progress.receiptsCountedThrough == fourth.countedThrough)
        }
    }

    @Test(
        "a receipt keeps its device's provider, alone or in a batch; the step counts it by that provider without reading the device, and by the device's for a receipt stored before migration 0038"
    )
    func receiptsKeepTheirProvider() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            let apns = try #require(fleet.devices.firstIndex { $0.token.provider == .apns })
            let fcm = try #require(fleet.devices.firstIndex { $0.token.provider == .fcm })
            let others = (0..<10).filter { $0 != apns && $0 != fcm }.prefix(3)
            // Alone (RecordReceipt) and in one batch (RecordReceipts).
            try await fleet.receipt(apns, .newData)
            try await fleet.receipt(fcm, .noData)
            let batch = others.map {
                RecordReceipt(appID: fleet.appID, candidates: [fleet.devices[$0].token], ReceiptReport(editionID: fleet.edition, result: .newData))
            }
            _ = try await db.client.query(RequestStatements.recordReceipts(batch), logger: db.logger).collect()
            var kept: [Int64: Int16?] = [:]
            let rows = try await db.client.query("SELECT device_id, provider FROM receipts", logger: db.logger)
            for try await (device, provider) in rows.decode((Int64, Int16?).self) { kept[device] = provider }
            #expect(kept.count == 5)
            for index in [apns, fcm] + others {
                let device = fleet.devices[index]
                #expect(kept[device.id] == .some(device.token.provider.storageCode), "device \(index)")
            }

            // The step reads the receipt's provider: one receipt made to say the other provider is counted as it says,
            // which a step reading the device would not do.
            let flipped = fleet.devices[apns]
            try await db.client.query("UPDATE receipts SET provider = 1 WHERE device_id = \(flipped.id)", logger: db.logger)
            // A receipt stored before migration 0038 has none: its device's is read.
            let older = fleet.devices[fcm]
            try await db.client.query("UPDATE receipts SET provider = NULL WHERE device_id = \(older.id)", logger: db.logger)
            let step = try #require(try await fleet.tallies.step(logger: db.logger))
            #expect(step.receipts == 5)
            let tallied = try await fleet.tallies.counts(broadcastID: fleet.running, editionID: fleet.edition, logger: db.logger)
            let full = try await Self.fullCount(fleet, broadcast: fleet.running)
            let fcmNewData = { (cells: [ReceiptTallies.BroadcastCounts.Cell]) in
                cells.filter { $0.provider == .fcm && $0.result == .newData }.map(\.count).reduce(0, +)
            }
            #expect(fcmNewData(tallied.cells) == fcmNewData(Array(full.cells)) + 1, "the flipped receipt counts as FCM")
            #expect(tallied.cells.contains { $0.provider == .fcm && $0.result == .noData && $0.count == 1 }, "the older receipt by its device")
        }
    }

    @Test("a cohort's counters that are not counts fail the status naming the row and column, instead of showing none")
    func unreadableCountersFail() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            let now = Date()
            try await db.client.query(
                """
                INSERT INTO broadcast_waves (broadcast_id, wave, kind, starts_at, window_seconds, rate, planned)
                VALUES (\(fleet.running), 1, 'background', \(now), 60, 1, 10)
                """,
                logger: db.logger
            )
            try await db.client.query(
                """
                INSERT INTO broadcast_cohorts (broadcast_id, wave, cohort, starts_at, ends_at, first_key, end_key, next_key, planned, rejected)
                VALUES (\(fleet.running), 1, 0, \(now), \(now.addingTimeInterval(60)), 0, 10, 10, 10, '{"BadDeviceToken": 2}')
                """,
                logger: db.logger
            )
            let progress = try #require(try await BroadcastRepository(client: db.client).progress(id: fleet.running, logger: db.logger))
            #expect(progress.waves.first?.cohorts.first?.counts.rejected == ["BadDeviceToken": 2])
            try await db.client.query(
                "UPDATE broadcast_cohorts SET rejected = '{\"BadDeviceToken\": \"two\"}' WHERE broadcast_id = \(fleet.running)",
                logger: db.logger
            )
            let error = await #expect(throws: UnreadableRow.self) {
                try await BroadcastRepository(client: db.client).progress(id: fleet.running, logger: db.logger)
            }
            #expect(error?.table == "broadcast_cohorts" && error?.column == "rejected")
            #expect(error?.key == "\(fleet.running.uuidString.lowercased()) wave 1 cohort 0")
        }
    }

    @Test("a failed receipt stays in the wave it was counted in when its device gets a later wave, until the broadcast is recounted")
    func recountMovesAFailureToTheLastWave() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            try await fleet.receipt(8, .failed)
            try await fleet.receipt(3, .newData)
            try await fleet.tallies.step(logger: db.logger)
            try await fleet.deliver([8], broadcast: fleet.running, wave: 2)
            try await fleet.tallies.step(logger: db.logger)

            let failed = { (counts: ReceiptTallies.BroadcastCounts) in counts.cells.filter { $0.result == .failed }.map(\.wave) }
            let before = try await fleet.tallies.counts(broadcastID: fleet.running, editionID: fleet.edition, logger: db.logger)
            #expect(failed(before) == [1], "counted where the device's last delivery was when the receipt was counted")
            #expect(try await Self.fullCount(fleet, broadcast: fleet.running).cells.filter { $0.result == .failed }.map(\.wave) == [2])

            let recount = try await fleet.tallies.recount(broadcastID: fleet.running, now: Date(), logger: db.logger)
            #expect(recount.receipts == 2)
            try await Self.expectEqualToFullCount(fleet, "after the recount")

            // The recount moved the remembered failure too: its upgrade leaves wave 2, not wave 1.
            try await fleet.receipt(8, .newData)
            let step = try #require(try await fleet.tallies.step(logger: db.logger))
            #expect(step.upgrades == 1)
            try await Self.expectEqualToFullCount(fleet, "an upgrade after the recount")
            let after = try await fleet.tallies.counts(broadcastID: fleet.running, editionID: fleet.edition, logger: db.logger)
            #expect(after.cells.allSatisfy { $0.count > 0 })

            // The status's --exact path recounts too.
            // The status's --exact path recounts too: a receipt stored behind the watermark (as before migration
            // 0019) is counted only by a recount.
            try await db.client.query(
                """
                INSERT INTO receipts (device_id, edition_id, result, received_at)
                SELECT \(fleet.devices[9].id), \(fleet.edition), 'noData', counted_through - interval '1 second' FROM receipt_tally_state
                """,
                logger: db.logger
            )
            let repository = BroadcastRepository(client: db.client)
            #expect(try await repository.progress(id: fleet.running, logger: db.logger)?.receipts == ["newData": 2])
            let exact = try #require(try await repository.progress(id: fleet.running, exact: true, logger: db.logger))
            #expect(exact.receipts == ["newData": 2, "noData": 1])
        }
    }

    @Test("a receipt whose transaction is still open when a step runs is counted by a later step, not skipped")
    func openWriterHoldsTheWatermark() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            try await db.client.withConnection { writer in
                try await writer.query("BEGIN", logger: db.logger)
                try await writer.query(
                    "INSERT INTO receipts (device_id, edition_id, result) VALUES (\(fleet.devices[0].id), \(fleet.edition), 'newData')",
                    logger: db.logger
                )
                // The receipt's received_at is its transaction's start, already in the past; the step must stop
                // before it while it is not committed.
                try await fleet.receipt(1, .noData)
                let during = try #require(try await fleet.tallies.step(logger: db.logger))
                #expect(during.receipts == 0, "the step counts nothing after the open transaction's start")
                try await writer.query("COMMIT", logger: db.logger)
            }
            let after = try #require(try await fleet.tallies.step(logger: db.logger))
            #expect(after.receipts == 2)
            try await Self.expectEqualToFullCount(fleet, "both receipts, once")
        }
    }

    @Test(
        "two steps never count the same receipts: a step while another holds the watermark counts nothing; concurrent steps count each receipt once"
    )
    func concurrentSteps() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            try await fleet.receipt(0, .newData)
            // Another worker's step in progress: it holds the watermark row.
            try await db.client.withConnection { other in
                try await other.query("BEGIN", logger: db.logger)
                try await other.query("SELECT 1 FROM receipt_tally_state FOR UPDATE", logger: db.logger)
                let skipped = try await fleet.tallies.step(logger: db.logger)
                #expect(skipped == nil)
                try await other.query("ROLLBACK", logger: db.logger)
            }
            #expect(try await fleet.tallies.counts(editionID: fleet.edition, logger: db.logger).isEmpty)

            // Four workers step in a race while receipts (and upgrades) arrive; then one last step. The racing steps
            // keep a lag, as workers do: a receipt's statement starts (its received_at) a moment before it writes
            // and shows as a writer; a step without a lag may pass it in that moment (docs/receipt-tallies.md).
            let tallies = ReceiptTallies(client: db.client, configuration: .init(lag: .milliseconds(500), interval: .zero))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask { for _ in 0..<25 { try await tallies.step(logger: db.logger) } }
                }
                group.addTask {
                    for device in 1..<12 { try await fleet.receipt(device, device % 3 == 0 ? .failed : .newData) }
                    for device in stride(from: 3, to: 12, by: 3) { try await fleet.receipt(device, .noData) }
                }
                try await group.waitForAll()
            }
            // Everything is committed now: the last step needs no lag.
            try await fleet.tallies.step(logger: db.logger)
            try await Self.expectEqualToFullCount(fleet, "after the race")
        }
    }

    @Test("the status reads no receipts and no deliveries: only the tallies")
    func statusReadsNoReceipts() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            for statement in [
                ReceiptTallies.broadcastCountsQuery(broadcastID: fleet.running, editionID: fleet.edition),
                ReceiptTallies.editionCountsQuery(editionID: fleet.edition),
                BroadcastRepository.gaugesQuery(now: Date(), endedSince: Date().addingTimeInterval(-3600)),
            ] {
                let scans = try await RequestPlanTests.scans(statement, db)
                #expect(!scans.isEmpty)
                #expect(scans.allSatisfy { $0.table != "receipts" && $0.table != "deliveries" }, "\(scans)")
            }
        }
    }

    @Test("the metrics' gauges carry each running broadcast's receipts")
    func runningTotals() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            try await fleet.receipt(0, .newData)
            try await fleet.receipt(1, .failed)
            try await fleet.receipt(10, .newData)
            try await fleet.tallies.step(logger: db.logger)
            let now = Date()
            let gauges = try await BroadcastRepository(client: db.client).gauges(
                now: now,
                endedSince: now.addingTimeInterval(-3600),
                logger: db.logger
            )
            #expect(gauges.filter { $0.state == .running }.map(\.id) == [fleet.running])
            #expect(gauges.first { $0.id == fleet.running }?.receipts == [.newData: 1, .failed: 1])
        }
    }

    @Test("receipts stored before the watermark are counted when their broadcast is recounted; pruning an edition's receipts takes its tallies")
    func olderReceiptsAndPruning() async throws {
        try await TestDatabase.with { db in
            let fleet = try await Self.seed(db)
            let now = Date()
            // Receipts from before the tallies existed (received long before the watermark), and the edition's
            // deadline long past.
            try await db.client.query(
                """
                INSERT INTO receipts (device_id, edition_id, result, received_at)
                SELECT id, \(fleet.edition), 'newData', \(now.addingTimeInterval(-9 * 86_400)) FROM unnest(\(fleet.devices.prefix(6).map(\.id))::bigint[]) AS u(id)
                """,
                logger: db.logger
            )
            try await db.client.query("UPDATE editions SET deadline = \(now.addingTimeInterval(-8 * 86_400))", logger: db.logger)
            try await fleet.tallies.step(logger: db.logger)
            #expect(try await fleet.tallies.counts(editionID: fleet.edition, logger: db.logger).isEmpty)
            for broadcast in [fleet.cancelled, fleet.running] { try await fleet.tallies.recount(broadcastID: broadcast, now: now, logger: db.logger) }
            #expect(try await fleet.tallies.counts(editionID: fleet.edition, logger: db.logger) == [.newData: 6])
            try await Self.expectEqualToFullCount(fleet, "recounted")

            let pruned = try await LedgerPruner(client: db.client).prune(now: now, logger: db.logger)
            #expect(pruned.receipts == 6)
            #expect(try await fleet.tallies.counts(editionID: fleet.edition, logger: db.logger).isEmpty)
            let left = try await db.client.query("SELECT count(*) FROM receipt_tallies", logger: db.logger)
            for try await count in left.decode(Int.self) { #expect(count == 0) }
        }
    }
}
