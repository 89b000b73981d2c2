import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

/// A broadcast's counters at one instant, as the console's sampler stored them (`console_samples`, migration 0020).
public struct ConsoleSample: Sendable, Equatable {
    /// Sent and accepted through one provider.
    public struct ProviderCounts: Sendable, Equatable, Codable {
        public var sent: Int
        public var accepted: Int

        public init(sent: Int, accepted: Int) {
            self.sent = sent
            self.accepted = accepted
        }
    }

    public var at: Date
    /// The wave being sent (the highest present).
    public var wave: Int
    public var planned: Int
    public var sent: Int
    public var accepted: Int
    public var rejected: Int
    public var skipped: Int
    /// The edition's receipts by result.
    public var newData: Int
    public var noData: Int
    public var failed: Int
    /// By provider (`apns`, `fcm`).
    public var providers: [String: ProviderCounts]

    public init(
        at: Date,
        wave: Int,
        planned: Int,
        sent: Int,
        accepted: Int,
        rejected: Int,
        skipped: Int,
        newData: Int,
        noData: Int,
        failed: Int,
        providers: [String: ProviderCounts] = [:]
    ) {
        self.at = at
        self.wave = wave
        self.planned = planned
        self.sent = sent
        self.accepted = accepted
        self.rejected = rejected
        self.skipped = skipped
        self.newData = newData
        self.noData = noData
        self.failed = failed
        self.providers = providers
    }

    /// The sample of `progress` at `at`: its totals over every wave and the edition's receipts.
    public init(_ progress: BroadcastProgress, at: Date) {
        let totals = progress.totals
        self.init(
            at: at,
            wave: progress.currentWave?.wave ?? 0,
            planned: totals.planned,
            sent: totals.sent,
            accepted: totals.accepted,
            rejected: totals.rejected.values.reduce(0, +),
            skipped: totals.skipped.values.reduce(0, +),
            newData: progress.receipts["newData"] ?? 0,
            noData: progress.receipts["noData"] ?? 0,
            failed: progress.receipts["failed"] ?? 0,
            providers: totals.byProvider.mapValues { ProviderCounts(sent: $0.sent, accepted: $0.accepted) }
        )
    }

    /// Devices that have the edition.
    public var received: Int { newData + noData }
}

/// The latest progress of a broadcast that the sampler read (`console_snapshots`).
public struct ConsoleSnapshot: Sendable, Equatable {
    public var at: Date
    public var progress: BroadcastProgress
    /// Seconds the progress took to read.
    public var took: Double

    public init(at: Date, progress: BroadcastProgress, took: Double) {
        self.at = at
        self.progress = progress
        self.took = took
    }
}

/// A start or a cancel made in the console, with who made it (`console_actions`).
public struct ConsoleAction: Sendable, Equatable {
    public var id: Int64
    public var at: Date
    /// `operator` or `viewer`.
    public var role: String
    /// The name typed at sign-in, if any.
    public var name: String?
    /// `start`, `cancel`, …
    public var action: String
    public var broadcastID: UUID?
    public var editionID: UUID?
    /// What came of it, in words.
    public var detail: String

    public init(
        id: Int64 = 0,
        at: Date,
        role: String,
        name: String?,
        action: String,
        broadcastID: UUID?,
        editionID: UUID?,
        detail: String
    ) {
        self.id = id
        self.at = at
        self.role = role
        self.name = name
        self.action = action
        self.broadcastID = broadcastID
        self.editionID = editionID
        self.detail = detail
    }
}

/// A broadcast the sampler looks at: running, or ended since its last snapshot.
public struct SampledBroadcast: Sendable, Equatable {
    public var id: UUID
    /// When it was last sampled, and how long its progress took to read then.
    public var sampledAt: Date?
    public var took: Double

    public init(id: UUID, sampledAt: Date?, took: Double) {
        self.id = id
        self.sampledAt = sampledAt
        self.took = took
    }
}

/// A batch leased and not done yet.
public struct OpenBatch: Sendable, Equatable {
    public var worker: String
    public var broadcastID: UUID
    public var wave: Int
    public var cohort: Int
    public var devices: Int
    public var leaseExpiresAt: Date
    /// How many times it was leased: more than 1 after a worker died holding it.
    public var leases: Int
    /// Why a worker gave it back, if one did.
    public var givenBackFor: String?

    public init(
        worker: String,
        broadcastID: UUID,
        wave: Int,
        cohort: Int,
        devices: Int,
        leaseExpiresAt: Date,
        leases: Int,
        givenBackFor: String?
    ) {
        self.worker = worker
        self.broadcastID = broadcastID
        self.wave = wave
        self.cohort = cohort
        self.devices = devices
        self.leaseExpiresAt = leaseExpiresAt
        self.leases = leases
        self.givenBackFor = givenBackFor
    }
}

/// A device found by its token, with what the console shows of it.
public struct DeviceRecord: Sendable, Equatable {
    public var id: Int64
    public var appID: Int
    public var bundleID: String
    public var device: Device
    public var dormant: Bool
    /// Editions pushed in a row without a receipt before its last pushed one (`device_pushes`), nil when never counted.
    public var editionsUnanswered: Int?

    public init(
        id: Int64,
        appID: Int,
        bundleID: String,
        device: Device,
        dormant: Bool,
        editionsUnanswered: Int?
    ) {
        self.id = id
        self.appID = appID
        self.bundleID = bundleID
        self.device = device
        self.dormant = dormant
        self.editionsUnanswered = editionsUnanswered
    }
}

/// One push to a device, from the delivery ledger.
public struct DevicePush: Sendable, Equatable {
    public var broadcastID: UUID
    public var publication: String
    public var issueDate: String
    public var wave: Int
    public var background: Bool
    public var sentAt: Date
    /// `accepted`, `rejected`, `fateUnknown`, `notSent`.
    public var outcome: String
    public var reason: String?

    public init(
        broadcastID: UUID,
        publication: String,
        issueDate: String,
        wave: Int,
        background: Bool,
        sentAt: Date,
        outcome: String,
        reason: String?
    ) {
        self.broadcastID = broadcastID
        self.publication = publication
        self.issueDate = issueDate
        self.wave = wave
        self.background = background
        self.sentAt = sentAt
        self.outcome = outcome
        self.reason = reason
    }
}

/// One receipt of a device, with its edition.
public struct DeviceReceipt: Sendable, Equatable {
    public var editionID: UUID
    public var publication: String
    public var issueDate: String
    public var receipt: Receipt

    public init(editionID: UUID, publication: String, issueDate: String, receipt: Receipt) {
        self.editionID = editionID
        self.publication = publication
        self.issueDate = issueDate
        self.receipt = receipt
    }
}

/// What the operator's web console stores and reads beyond the other repositories: the sampler's samples and
/// snapshots, the actions taken in it, and a device's history. Every read here is by an index: a page view never
/// counts deliveries or receipts.
public struct ConsoleRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The advisory lock key whose holder samples, for one transaction: `console` in ASCII.
    public static let samplerLockKey: Int64 = 0x636F_6E73_6F6C_65

    // MARK: - Sampling

    /// Runs `body` when no other process is sampling (a transaction-level advisory lock, released at its end), and
    /// returns its result; nil when another process holds the lock.
    public func whileSampling<T: Sendable>(logger: Logger, _ body: @Sendable @escaping () async throws -> T) async throws -> T? {
        try await client.transaction(logger: logger) { connection -> T? in
            let rows = try await connection.query("SELECT pg_try_advisory_xact_lock(\(Self.samplerLockKey))", logger: logger)
            var locked = false
            for try await value in rows.decode(Bool.self) { locked = value }
            guard locked else { return nil }
            return try await body()
        }
    }

    /// The broadcasts to sample: those running, and those that ended in the last `endedWithin` seconds whose latest
    /// snapshot still shows them running (or that have none), so that their final counts are kept.
    public func broadcastsToSample(now: Date, endedWithin: TimeInterval = 600, logger: Logger) async throws -> [SampledBroadcast] {
        let rows = try await client.query(
            """
            SELECT b.id, s.at, coalesce(s.took, 0)
            FROM broadcasts b LEFT JOIN console_snapshots s ON s.broadcast_id = b.id
            WHERE b.state IN ('planned', 'running')
               OR (b.finished_at > \(now.addingTimeInterval(-endedWithin)) AND (s.state IS NULL OR s.state IN ('planned', 'running')))
            ORDER BY b.created_at
            """,
            logger: logger
        )
        var found: [SampledBroadcast] = []
        for try await (id, at, took) in rows.decode((UUID, Date?, Double).self) {
            found.append(SampledBroadcast(id: id, sampledAt: at, took: took))
        }
        return found
    }

    /// Stores a sample of `progress` and makes it the broadcast's snapshot.
    public func record(_ progress: BroadcastProgress, at: Date, took: Double, logger: Logger) async throws {
        let sample = ConsoleSample(progress, at: at)
        let providers = String(decoding: try JSONEncoder().encode(sample.providers), as: UTF8.self)
        let json = String(decoding: try Self.progressEncoder.encode(progress), as: UTF8.self)
        try await client.transaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO console_samples (broadcast_id, at, wave, planned, sent, accepted, rejected, skipped, new_data, no_data, failed, providers)
                VALUES (\(progress.id), \(at), \(Int16(clamping: sample.wave)), \(sample.planned), \(sample.sent), \(sample.accepted),
                    \(sample.rejected), \(sample.skipped), \(sample.newData), \(sample.noData), \(sample.failed), \(providers)::jsonb)
                ON CONFLICT (broadcast_id, at) DO NOTHING
                """,
                logger: logger
            )
            try await connection.query(
                """
                INSERT INTO console_snapshots (broadcast_id, at, state, progress, took)
                VALUES (\(progress.id), \(at), \(progress.state.rawValue), \(json)::jsonb, \(took))
                ON CONFLICT (broadcast_id) DO UPDATE SET at = excluded.at, state = excluded.state, progress = excluded.progress,
                    took = excluded.took
                """,
                logger: logger
            )
        }
    }

    /// The samples of a broadcast after `since` (all when nil), oldest first, at most `limit` (the newest ones).
    public func samples(broadcastID: UUID, since: Date? = nil, limit: Int = 5000, logger: Logger) async throws -> [ConsoleSample] {
        let rows = try await client.query(
            """
            SELECT at, wave, planned, sent, accepted, rejected, skipped, new_data, no_data, failed, providers::text FROM (
                SELECT * FROM console_samples WHERE broadcast_id = \(broadcastID) AND (\(since)::timestamptz IS NULL OR at > \(since))
                ORDER BY at DESC LIMIT \(limit)
            ) s ORDER BY at
            """,
            logger: logger
        )
        var samples: [ConsoleSample] = []
        typealias Row = (Date, Int16, Int, Int, Int, Int, Int, Int, Int, Int, String)
        for try await row in rows.decode(Row.self) {
            let providers = (try? JSONDecoder().decode([String: ConsoleSample.ProviderCounts].self, from: Data(row.10.utf8))) ?? [:]
            samples.append(
                ConsoleSample(
                    at: row.0,
                    wave: Int(row.1),
                    planned: row.2,
                    sent: row.3,
                    accepted: row.4,
                    rejected: row.5,
                    skipped: row.6,
                    newData: row.7,
                    noData: row.8,
                    failed: row.9,
                    providers: providers
                )
            )
        }
        return samples
    }

    /// When the broadcast was last sampled: one primary-key probe, what a live page asks every few seconds.
    public func snapshotTime(broadcastID: UUID, logger: Logger) async throws -> Date? {
        let rows = try await client.query("SELECT at FROM console_snapshots WHERE broadcast_id = \(broadcastID)", logger: logger)
        for try await at in rows.decode(Date.self) { return at }
        return nil
    }

    /// The latest snapshots of these broadcasts, by id.
    /// - Throws: ``UnreadableRow`` when a stored progress cannot be read.
    public func snapshots(broadcastIDs: [UUID], logger: Logger) async throws -> [UUID: ConsoleSnapshot] {
        guard !broadcastIDs.isEmpty else { return [:] }
        let rows = try await client.query(
            "SELECT broadcast_id, at, progress::text, took FROM console_snapshots WHERE broadcast_id = ANY(\(broadcastIDs))",
            logger: logger
        )
        var found: [UUID: ConsoleSnapshot] = [:]
        for try await (id, at, json, took) in rows.decode((UUID, Date, String, Double).self) {
            let progress: BroadcastProgress
            do {
                progress = try Self.progressDecoder.decode(BroadcastProgress.self, from: Data(json.utf8))
            } catch {
                throw UnreadableRow(table: "console_snapshots", key: id.uuidString.lowercased(), column: "progress", message: "\(error)")
            }
            found[id] = ConsoleSnapshot(at: at, progress: progress, took: took)
        }
        return found
    }

    /// Deletes samples older than `cutoff`.
    @discardableResult
    public func pruneSamples(before cutoff: Date, logger: Logger) async throws -> Int {
        let rows = try await client.query("DELETE FROM console_samples WHERE at < \(cutoff) RETURNING 1", logger: logger)
        return try await rows.collect().count
    }

    private static let progressEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return encoder
    }()

    private static let progressDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }()

    // MARK: - Actions

    /// Records an action taken in the console.
    public func record(_ action: ConsoleAction, logger: Logger) async throws {
        try await client.query(
            """
            INSERT INTO console_actions (at, role, name, action, broadcast_id, edition_id, detail)
            VALUES (\(action.at), \(action.role), \(action.name), \(action.action), \(action.broadcastID), \(action.editionID), \(action.detail))
            """,
            logger: logger
        )
    }

    /// The actions taken on a broadcast, oldest first.
    public func actions(broadcastID: UUID, logger: Logger) async throws -> [ConsoleAction] {
        try await actions(
            query: """
                SELECT id, at, role, name, action, broadcast_id, edition_id, detail FROM console_actions
                WHERE broadcast_id = \(broadcastID) ORDER BY at, id
                """,
            logger: logger
        )
    }

    /// The most recent actions, newest first.
    public func recentActions(limit: Int = 20, logger: Logger) async throws -> [ConsoleAction] {
        try await actions(
            query: """
                SELECT id, at, role, name, action, broadcast_id, edition_id, detail FROM console_actions
                ORDER BY at DESC, id DESC LIMIT \(limit)
                """,
            logger: logger
        )
    }

    private func actions(query: PostgresQuery, logger: Logger) async throws -> [ConsoleAction] {
        let rows = try await client.query(query, logger: logger)
        var found: [ConsoleAction] = []
        for try await (id, at, role, name, action, broadcast, edition, detail) in rows.decode(
            (Int64, Date, String, String?, String, UUID?, UUID?, String).self
        ) {
            found.append(
                ConsoleAction(id: id, at: at, role: role, name: name, action: action, broadcastID: broadcast, editionID: edition, detail: detail)
            )
        }
        return found
    }

    // MARK: - Broadcast lists

    /// The totals of these broadcasts over every wave and cohort, from `broadcast_cohorts` (their primary key; no
    /// receipts): planned, sent, accepted, rejected and skipped by reason.
    public func totals(broadcastIDs: [UUID], logger: Logger) async throws -> [UUID: BroadcastProgress.Counts] {
        guard !broadcastIDs.isEmpty else { return [:] }
        let rows = try await client.query(
            """
            SELECT broadcast_id, planned, sent, accepted, rejected::text, skipped::text FROM broadcast_cohorts
            WHERE broadcast_id = ANY(\(broadcastIDs))
            """,
            logger: logger
        )
        var totals: [UUID: BroadcastProgress.Counts] = [:]
        for try await (id, planned, sent, accepted, rejected, skipped) in rows.decode((UUID, Int, Int, Int, String, String).self) {
            let key = id.uuidString.lowercased()
            let counts = BroadcastProgress.Counts(
                planned: planned,
                sent: sent,
                accepted: accepted,
                rejected: try BroadcastRepository.counts(json: rejected, table: "broadcast_cohorts", key: key, column: "rejected"),
                skipped: try BroadcastRepository.counts(json: skipped, table: "broadcast_cohorts", key: key, column: "skipped")
            )
            totals[id] = (totals[id] ?? BroadcastProgress.Counts()) + counts
        }
        return totals
    }

    // MARK: - Workers

    /// What every worker says of every app's providers (`sender_status`: a row per app, provider and worker).
    public func senderStatuses(logger: Logger) async throws -> [SenderStatus] {
        let rows = try await client.query(
            """
            SELECT app_id, provider, worker, last_sent_at, problem, problem_since, updated_at FROM sender_status
            ORDER BY app_id, provider, worker
            """,
            logger: logger
        )
        var found: [SenderStatus] = []
        for try await (app, provider, worker, lastSent, problem, since, updated) in rows.decode(
            (Int, Int16, String, Date?, String?, Date?, Date).self
        ) {
            found.append(
                SenderStatus(
                    appID: app,
                    provider: PushProvider(storageCode: provider),
                    worker: worker,
                    lastSentAt: lastSent,
                    problem: problem,
                    problemSince: since,
                    updatedAt: updated
                )
            )
        }
        return found
    }

    /// The batches leased and not done (the partial index `broadcast_batches_open`), by worker.
    public func openBatches(logger: Logger) async throws -> [OpenBatch] {
        let rows = try await client.query(
            """
            SELECT lease_owner, broadcast_id, wave, cohort, devices, lease_expires_at, leases, given_back_for
            FROM broadcast_batches WHERE done_at IS NULL ORDER BY lease_owner, broadcast_id, wave, cohort LIMIT 1000
            """,
            logger: logger
        )
        var found: [OpenBatch] = []
        for try await row in rows.decode((String, UUID, Int16, Int, Int, Date, Int16, String?).self) {
            found.append(
                OpenBatch(
                    worker: row.0,
                    broadcastID: row.1,
                    wave: Int(row.2),
                    cohort: row.3,
                    devices: row.4,
                    leaseExpiresAt: row.5,
                    leases: Int(row.6),
                    givenBackFor: row.7
                )
            )
        }
        return found
    }

    // MARK: - Devices

    /// The devices with this token in any app, the most recently updated first: one probe of `devices_by_token` per app
    /// and provider (a branch of the lateral union each). Written as one `OR` over the two providers' tokens, the
    /// planner scanned the whole table instead (a parallel sequential scan: 29 ms at 150,000 devices, seconds at
    /// 10 million, for any viewer's look-up; docs/request-costs.md).
    public func devices(candidates: [PushToken], logger: Logger) async throws -> [DeviceRecord] {
        let lookup = RequestStatements.TokenLookup(candidates)
        let rows = try await client.query(
            """
            SELECT d.id, d.app_id, a.bundle_id, d.provider, d.token, d.platform, d.environment,
                array(SELECT slug FROM publications p WHERE p.id = ANY(d.subscriptions) ORDER BY slug),
                d.time_zone, d.tier, d.auto_download, d.alerts_authorized, d.app_version, d.os_version, d.model, d.locale,
                d.active, d.registered_at, d.updated_at, d.deleted_at, d.unregistered_at, d.notify_when_ready, d.dormant,
                (SELECT x.editions_unanswered FROM device_pushes x WHERE x.device_id = d.id), d.edition_alerts
            FROM apps a CROSS JOIN LATERAL (
                SELECT * FROM devices x WHERE x.app_id = a.id AND x.token = \(lookup.apns) AND x.provider = 0
                UNION ALL
                SELECT * FROM devices x WHERE x.app_id = a.id AND x.token = \(lookup.fcm) AND x.provider = 1
            ) d
            ORDER BY d.updated_at DESC LIMIT 20
            """,
            logger: logger
        )
        typealias Row = (
            Int64, Int, String, Int16, ByteBuffer, Int16, Int16, [String], String, Int16, Bool, Bool, String?, String?, String?, String?,
            Bool, Date, Date, Date?, Date?, Bool, Bool, Int16?, Bool
        )
        var found: [DeviceRecord] = []
        for try await row in rows.decode(Row.self) {
            let provider = PushProvider(storageCode: row.3)
            let registration = DeviceRegistration(
                provider: provider,
                platform: DevicePlatform(storageCode: row.5),
                environment: APNsEnvironment(storageCode: row.6),
                subscriptions: row.7,
                timeZone: row.8,
                tier: ImageTier(storageCode: row.9),
                autoDownload: row.10,
                alertsAuthorized: row.11,
                notifyWhenReady: row.21,
                editionAlerts: row.24,
                appVersion: row.12,
                osVersion: row.13,
                model: row.14,
                locale: row.15
            )
            let device = Device(
                token: PushToken(provider: provider, bytes: Array(buffer: row.4)).text,
                registration: registration,
                active: row.16,
                registeredAt: row.17,
                updatedAt: row.18,
                deletedAt: row.19,
                unregisteredAt: row.20
            )
            found.append(
                DeviceRecord(
                    id: row.0,
                    appID: row.1,
                    bundleID: row.2,
                    device: device,
                    dormant: row.22,
                    editionsUnanswered: row.23.map(Int.init)
                )
            )
        }
        return found
    }

    /// The device's pushes sent since `since`, newest first (the deliveries' primary key leads with the device).
    public func pushes(deviceID: Int64, since: Date, limit: Int = 100, logger: Logger) async throws -> [DevicePush] {
        let rows = try await client.query(
            """
            SELECT x.broadcast_id, p.slug, e.issue_date::text, x.wave, x.background, x.sent_at, x.outcome, x.reason
            FROM deliveries x JOIN broadcasts b ON b.id = x.broadcast_id JOIN editions e ON e.id = b.edition_id
                JOIN publications p ON p.id = e.publication_id
            WHERE x.device_id = \(deviceID) AND x.sent_at >= \(since)
            ORDER BY x.sent_at DESC LIMIT \(limit)
            """,
            logger: logger
        )
        var found: [DevicePush] = []
        for try await row in rows.decode((UUID, String, String, Int16, Bool, Date, String, String?).self) {
            found.append(
                DevicePush(
                    broadcastID: row.0,
                    publication: row.1,
                    issueDate: row.2,
                    wave: Int(row.3),
                    background: row.4,
                    sentAt: row.5,
                    outcome: row.6,
                    reason: row.7
                )
            )
        }
        return found
    }

    /// The device's receipts received since `since`, newest first (the receipts' primary key leads with the device).
    public func receipts(deviceID: Int64, since: Date, limit: Int = 100, logger: Logger) async throws -> [DeviceReceipt] {
        let rows = try await client.query(
            """
            SELECT r.edition_id, p.slug, e.issue_date::text, r.result, r.bytes, r.seconds, r.received_at,
                r.network, r.charging, r.low_power_mode, r.background_refresh, r.wave, r.seconds_from_push
            FROM receipts r JOIN editions e ON e.id = r.edition_id JOIN publications p ON p.id = e.publication_id
            WHERE r.device_id = \(deviceID) AND r.received_at >= \(since)
            ORDER BY r.received_at DESC LIMIT \(limit)
            """,
            logger: logger
        )
        var found: [DeviceReceipt] = []
        typealias Row = (UUID, String, String, String, Int64, Double, Date, Int16?, Bool?, Bool?, Bool?, Int16?, Int32?)
        for try await row in rows.decode(Row.self) {
            guard let result = ReceiptResult(rawValue: row.3) else { continue }
            let context = ReceiptRepository.context(
                network: row.7,
                charging: row.8,
                lowPowerMode: row.9,
                backgroundRefresh: row.10,
                wave: row.11,
                secondsFromPush: row.12
            )
            found.append(
                DeviceReceipt(
                    editionID: row.0,
                    publication: row.1,
                    issueDate: row.2,
                    receipt: Receipt(editionID: row.0, result: result, bytes: row.4, seconds: row.5, receivedAt: row.6, context: context)
                )
            )
        }
        return found
    }
}
