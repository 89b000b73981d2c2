import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Broadcasts in PostgreSQL: starting (or attaching to) one, its waves, progress and cancellation.
///
/// The dispatch side (leasing batches, recording outcomes, making waves) is in
/// `BroadcastRepository+Dispatch.swift`. Every time is passed in (`now`), so tests and the demo can run a
/// broadcast on their own clock; lease expiry alone is the database's (``LeaseClock``).
public struct BroadcastRepository: Sendable {
    /// Whose clock writes and compares lease expiry.
    public enum LeaseClock: Sendable {
        /// PostgreSQL's `now()`: every worker agrees whatever its own clock says, so a worker whose clock
        /// runs ahead never takes over a batch early. Production.
        case database
        /// The `now` the caller passes: tests on a virtual clock.
        case caller
    }

    public let client: PostgresClient
    /// The shortest wave interval accepted; 20 minutes except where time is compressed (demo, tests).
    public var minimumWaveInterval: TimeInterval
    public var leaseClock: LeaseClock = .database
    /// Whether a broadcast with FCM targets starts 2 minutes away from :00, :15, :30 and :45, as Firebase asks of
    /// senders (``StaggerPlan/avoidingQuarterHours(_:margin:)``): always in production; off only where a test on the
    /// wall clock starts an FCM broadcast at once instead of waiting up to 4 minutes for a start the rule leaves alone.
    public var avoidsQuarterHoursForFCM = true

    /// `now` when leases follow the caller's clock; nil (the statements then use `now()`) for the database's.
    func leaseNow(_ now: Date) -> Date? {
        leaseClock == .caller ? now : nil
    }

    public init(client: PostgresClient, minimumWaveInterval: TimeInterval = BroadcastOptions.minimumWaveInterval) {
        self.client = client
        self.minimumWaveInterval = minimumWaveInterval
    }

    /// The edition facts a broadcast needs.
    struct EditionFacts {
        var publication: Publication
        var deadline: Date
        var issueDate: String
    }

    /// Wave 1's plan for an edition, without storing anything: `paperboy broadcast --dry-run`.
    public func plan(editionID: UUID, environment: APNsEnvironment, options: BroadcastOptions, now: Date, logger: Logger) async throws -> StaggerPlan
    {
        try validate(options)
        let edition = try await editionFacts(editionID, logger: logger)
        return try await firstWavePlan(edition: edition, editionID: editionID, environment: environment, options: options, now: now, logger: logger)
    }

    /// Starts a broadcast of an edition to one environment, or attaches to the one it already has.
    ///
    /// Starting twice never sends twice: when the edition has a broadcast in the environment that was not
    /// cancelled (running, completed or expired), that one is returned with `created` false. Two callers
    /// racing are settled by the unique index on live broadcasts.
    ///
    /// - Throws: `StoreError` naming `edition` when it does not exist or its deadline has passed, or the
    ///   options' field when they are invalid. Nothing is stored then.
    public func start(
        editionID: UUID,
        environment: APNsEnvironment,
        options: BroadcastOptions,
        origin: String,
        now: Date,
        audit: AuditEntry? = nil,
        logger: Logger
    ) async throws -> BroadcastStart {
        try validate(options)
        let edition = try await editionFacts(editionID, logger: logger)
        if let existing = try await existing(editionID: editionID, environment: environment, logger: logger) {
            return BroadcastStart(broadcast: existing, created: false, plan: nil)
        }
        guard edition.deadline > now else {
            throw StoreError(
                code: .invalid,
                field: "edition",
                message: "the edition's deadline \(Self.timestamp(edition.deadline)) has passed; nothing may be sent"
            )
        }
        let plan = try await firstWavePlan(
            edition: edition,
            editionID: editionID,
            environment: environment,
            options: options,
            now: now,
            logger: logger
        )
        let id = UUID()
        let optionsJSON = String(decoding: try JSONEncoder().encode(options), as: UTF8.self)
        let created = try await client.transaction(logger: logger) { connection -> Bool in
            let rows = try await connection.query(
                """
                INSERT INTO broadcasts (id, edition_id, environment, state, plan, origin, plan_note)
                VALUES (\(id), \(editionID), \(environment.storageCode), 'running', \(optionsJSON)::jsonb, \(origin), \(plan.note))
                ON CONFLICT (edition_id, environment) WHERE state IN ('planned', 'running') DO NOTHING
                RETURNING id
                """,
                logger: logger
            )
            guard try await rows.collect().count == 1 else { return false }
            try await Self.insertWave(1, kind: .background, plan: plan, cohorts: options.cohorts, broadcastID: id, on: connection, logger: logger)
            // Who started it, in the same transaction (issue 35): a broadcast is never without its audit entry.
            if var audit {
                audit.broadcastID = id
                audit.editionID = editionID
                try await AuditRepository.insert(audit, on: connection, logger: logger)
            }
            return true
        }
        guard created, let broadcast = try await find(id: id, logger: logger) else {
            // Another caller started it a moment ago.
            guard let existing = try await existing(editionID: editionID, environment: environment, logger: logger) else {
                throw StoreError(code: .conflict, field: "edition", message: "the broadcast could not be started; try again")
            }
            return BroadcastStart(broadcast: existing, created: false, plan: nil)
        }
        return BroadcastStart(broadcast: broadcast, created: true, plan: plan)
    }

    /// The broadcast with this id, if any.
    public func find(id: UUID, logger: Logger) async throws -> Broadcast? {
        try await select(Self.selectBroadcasts("WHERE b.id = \(id)"), logger: logger).first
    }

    /// Broadcasts, newest first.
    public func list(limit: Int = 50, logger: Logger) async throws -> [Broadcast] {
        try await select(Self.selectBroadcasts("ORDER BY b.created_at DESC LIMIT \(limit)"), logger: logger)
    }

    /// Stops a running broadcast: no batch is leased any more; batches in flight finish.
    ///
    /// - Parameter audit: who cancelled it, written in the same transaction when it was running (issue 35).
    /// - Throws: `StoreError` not found, or a conflict naming `state` when it has finished already.
    public func cancel(id: UUID, now: Date, audit: AuditEntry? = nil, logger: Logger) async throws -> Broadcast {
        let changed = try await client.audited(audit, logger: logger) { runner in
            let rows = try await runner.run(
                """
                UPDATE broadcasts SET state = 'cancelled', finished_at = \(now), updated_at = \(now)
                WHERE id = \(id) AND state IN ('planned', 'running') RETURNING id
                """,
                logger: logger
            )
            return try await rows.collect().count == 1
        } entry: { entry, changed in
            guard changed else { return nil }
            var entry = entry
            entry.broadcastID = id
            return entry
        }
        guard let broadcast = try await find(id: id, logger: logger) else {
            throw StoreError(code: .notFound, field: "id", message: "there is no broadcast \(id.uuidString.lowercased())")
        }
        guard changed else {
            throw StoreError(code: .conflict, field: "state", message: "the broadcast is \(broadcast.state.rawValue) already")
        }
        return broadcast
    }

    /// Ends a running broadcast as `failed` with `reason`, when nothing can be sent (its app's key unreadable,
    /// a push that cannot be built): every batch would fail until the deadline otherwise.
    /// - Returns: false when it was not running any more.
    @discardableResult
    public func fail(id: UUID, reason: String, now: Date, logger: Logger) async throws -> Bool {
        let rows = try await client.query(Self.failQuery(id: id, reason: reason, now: now), logger: logger)
        return try await rows.collect().count == 1
    }

    static func failQuery(id: UUID, reason: String, now: Date) -> PostgresQuery {
        """
        UPDATE broadcasts SET state = 'failed', failure = \(reason), finished_at = \(now), updated_at = \(now)
        WHERE id = \(id) AND state IN ('planned', 'running') RETURNING id
        """
    }

    /// Progress per wave and cohort, with receipts; nil when there is no such broadcast.
    ///
    /// The receipts come from the tallies (``ReceiptTallies``), a few hundred rows whatever the fleet: the
    /// receipts counted through ``BroadcastProgress/receiptsCountedThrough``. With `exact`, the broadcast is
    /// recounted from every receipt first (``ReceiptTallies/recount(broadcastID:now:logger:)``: seconds at
    /// millions of devices), `now` being the recount's time. Everything else is one prepared statement
    /// (``BroadcastStatus``).
    public func progress(id: UUID, exact: Bool = false, now: Date = Date(), logger: Logger) async throws -> BroadcastProgress? {
        if exact { try await ReceiptTallies(client: client).recount(broadcastID: id, now: now, logger: logger) }
        guard let read = try await client.executePrepared(BroadcastStatus(broadcastID: id), logger: logger).first else { return nil }
        return try Self.progress(read)
    }

    /// The status's row assembled.
    /// - Throws: ``UnreadableRow`` naming the broadcast, or the cohort whose counts are not JSON objects of whole numbers.
    static func progress(_ read: BroadcastStatus.Read) throws -> BroadcastProgress {
        let broadcast = try Self.broadcast(read.broadcast)
        let id = broadcast.id

        var receipts: [Int: [Int: [String: Int]]] = [:]
        var providerReceipts: [Int: [Int: [String: [String: Int]]]] = [:]
        for cell in read.tallied.cells {
            receipts[cell.wave, default: [:]][cell.cohort, default: [:]][cell.result.rawValue, default: 0] += cell.count
            providerReceipts[cell.wave, default: [:]][cell.cohort, default: [:]][cell.provider.rawValue, default: [:]][
                cell.result.rawValue,
                default: 0
            ] += cell.count
        }

        // A cohort's `rejected`, `skipped` and `providers`, flattened by the statement: one key and value a row.
        var stored: [Int16: [Int: [[String: Int]]]] = [:]
        for count in read.counts {
            guard let value = Int(count.value) else {
                throw UnreadableRow(
                    table: "broadcast_cohorts",
                    key: "\(id.uuidString.lowercased()) wave \(count.wave) cohort \(count.cohort)",
                    column: Self.countColumns[Int(count.column)],
                    message: "not a JSON object of counts: \(count.key) is \(count.value.prefix(200))"
                )
            }
            stored[count.wave, default: [:]][count.cohort, default: [[:], [:], [:]]][Int(count.column)][count.key, default: 0] += value
        }

        var cohortsByWave: [Int: [BroadcastProgress.Cohort]] = [:]
        for row in read.cohorts {
            let wave = Int(row.wave)
            guard row.readable else {
                throw UnreadableRow(
                    table: "broadcast_cohorts",
                    key: "\(id.uuidString.lowercased()) wave \(wave) cohort \(row.cohort)",
                    column: Self.countColumns.joined(separator: ", "),
                    message: "not a JSON object of counts"
                )
            }
            let objects = stored[row.wave]?[row.cohort] ?? [[:], [:], [:]]
            let counts = BroadcastProgress.Counts(
                planned: row.planned,
                sent: row.sent,
                accepted: row.accepted,
                rejected: objects[0],
                skipped: objects[1],
                receipts: receipts[wave]?[row.cohort] ?? [:],
                byProvider: Self.byProvider(objects[2], receipts: providerReceipts[wave]?[row.cohort] ?? [:]),
                dormant: row.dormant
            )
            cohortsByWave[wave, default: []].append(
                BroadcastProgress.Cohort(cohort: row.cohort, startsAt: row.startsAt, endsAt: row.endsAt, counts: counts)
            )
        }

        let waves = read.waves.map { row in
            BroadcastProgress.Wave(
                wave: Int(row.wave),
                kind: .init(rawValue: row.kind) ?? .background,
                startsAt: row.startsAt,
                rate: row.rate,
                window: row.window,
                finishedAt: row.finishedAt,
                behindSeconds: row.behindSeconds > 0 ? row.behindSeconds : nil,
                cohorts: cohortsByWave[Int(row.wave)] ?? []
            )
        }

        var progress = BroadcastProgress(
            id: id,
            editionID: broadcast.editionID,
            publication: broadcast.publication,
            issueDate: broadcast.issueDate,
            environment: broadcast.environment,
            state: broadcast.state,
            origin: broadcast.origin,
            options: broadcast.options,
            createdAt: broadcast.createdAt,
            deadline: broadcast.deadline,
            finishedAt: broadcast.finishedAt,
            failure: broadcast.failure,
            note: broadcast.note,
            waves: waves,
            receipts: Dictionary(uniqueKeysWithValues: read.tallied.edition.map { ($0.key.rawValue, $0.value) }),
            receiptsCountedThrough: read.tallied.countedThrough
        )
        // Both are read only while the broadcast runs (the statement's `b.state = 'running'`).
        if !read.holds.isEmpty {
            progress.held = read.holds.map {
                BroadcastProgress.Hold(
                    provider: PushProvider(storageCode: $0.provider),
                    reason: $0.reason,
                    since: $0.since,
                    heldDeactivations: $0.heldDeactivations
                )
            }
        }
        if !read.pauses.isEmpty { progress.paused = read.pauses }
        progress.readyAtOpen = read.readyAtOpen
        return progress
    }

    /// The cohort columns ``BroadcastStatus`` flattens, by the number it gives each.
    static let countColumns = ["rejected", "skipped", "providers"]

    /// A cohort's counts per provider: what was sent (the stored flat counts) and the receipts tallied.
    static func byProvider(_ flat: [String: Int], receipts: [String: [String: Int]]) -> [String: BroadcastProgress.ProviderCounts] {
        var split = BroadcastProgress.ProviderCounts.split(flat)
        for (provider, counts) in receipts { split[provider, default: .init()].receipts = counts }
        return split
    }

    // MARK: - Internals shared with dispatch

    func validate(_ options: BroadcastOptions) throws {
        do {
            try options.validate(minimumWaveInterval: minimumWaveInterval)
        } catch {
            throw StoreError(code: .invalid, field: error.field, message: error.message)
        }
    }

    func editionFacts(_ editionID: UUID, logger: Logger) async throws -> EditionFacts {
        let rows = try await client.query(
            """
            SELECT p.id, p.app_id, p.slug, p.title, e.deadline, e.issue_date::text
            FROM editions e JOIN publications p ON p.id = e.publication_id WHERE e.id = \(editionID)
            """,
            logger: logger
        )
        for try await row in rows.decode((Int, Int, String, String?, Date, String).self) {
            return EditionFacts(publication: Publication(id: row.0, appID: row.1, slug: row.2, title: row.3), deadline: row.4, issueDate: row.5)
        }
        throw StoreError(code: .notFound, field: "edition", message: "there is no edition \(editionID.uuidString.lowercased())")
    }

    private func firstWavePlan(
        edition: EditionFacts,
        editionID: UUID,
        environment: APNsEnvironment,
        options: BroadcastOptions,
        now: Date,
        logger: Logger
    ) async throws -> StaggerPlan {
        let (counts, fcm) = try await CohortRepository(client: client).targetCountsAndFCM(
            publication: edition.publication,
            environment: environment,
            cohorts: options.cohorts,
            logger: logger
        )
        let plan = try StaggerPlan(
            cohortCounts: counts,
            pace: options.pace,
            requestedStart: now,
            jitter: options.jitter,
            seed: StaggerPlan.seed(for: editionID.uuidString.lowercased()),
            avoidingQuarterHours: fcm > 0 && avoidsQuarterHoursForFCM
        )
        return try await placed(plan, cohortCounts: counts, publicationID: edition.publication.id, now: now, logger: logger)
    }

    /// `plan` moved into what its publication's content origin has left, first come first served: later when running
    /// waves of other broadcasts hold the capacity, slower when it asks more than the capacity; unchanged without an
    /// origin. The plan's ``StaggerPlan/note`` says why.
    private func placed(_ plan: StaggerPlan, cohortCounts: [Int], publicationID: Int, now: Date, logger: Logger) async throws -> StaggerPlan {
        guard plan.rate > 0,
            let origin = try await OriginRepository(client: client).capacity(publicationID: publicationID, excluding: nil, now: now, logger: logger)
        else { return plan }
        let placement = origin.place(devices: cohortCounts.reduce(0, +), rate: plan.rate, notBefore: plan.start)
        guard placement.start != plan.start || placement.rateLowered else { return plan }
        var moved = try StaggerPlan(cohortCounts: cohortCounts, pace: .capacity(perSecond: placement.rate), start: placement.start)
        moved.note = origin.note(for: placement, asked: plan.start, askedRate: plan.rate)
        return moved
    }

    private func existing(editionID: UUID, environment: APNsEnvironment, logger: Logger) async throws -> Broadcast? {
        try await select(RequestStatements.existingBroadcast(editionID: editionID, environment: environment), logger: logger).first
    }

    /// Stores a wave and its cohorts. A cohort with nothing planned is stored done (`next_key = end_key`).
    static func insertWave(
        _ wave: Int,
        kind: BroadcastProgress.Wave.Kind,
        plan: StaggerPlan,
        cohorts: Int,
        broadcastID: UUID,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        let planned = plan.cohorts.reduce(0) { $0 + $1.devices }
        try await connection.query(
            """
            INSERT INTO broadcast_waves (broadcast_id, wave, kind, starts_at, window_seconds, rate, planned, members)
            VALUES (\(broadcastID), \(Int16(wave)), \(kind.rawValue), \(plan.start), \(plan.window), \(plan.rate), \(planned),
                \(wave) > 1 AND EXISTS (SELECT 1 FROM wave_members WHERE broadcast_id = \(broadcastID) AND wave = \(Int16(wave))))
            """,
            logger: logger
        )
        let ranges = (0..<cohorts).map { DeviceToken.cohortKeyRange(index: $0, count: cohorts) }
        let firstKeys = ranges.map { StoredCohortKey.stored(bound: $0.lowerBound) }
        let endKeys = ranges.map { StoredCohortKey.stored(bound: $0.upperBound) }
        try await connection.query(
            """
            INSERT INTO broadcast_cohorts (broadcast_id, wave, cohort, starts_at, ends_at, first_key, end_key, next_key, planned)
            SELECT \(broadcastID), \(Int16(wave)), c, s, e, fk, ek, CASE WHEN p = 0 THEN ek ELSE fk END, p
            FROM unnest(\(plan.cohorts.map(\.index))::int[], \(plan.cohorts.map(\.start))::timestamptz[], \(plan.cohorts.map(\.end))::timestamptz[],
                        \(firstKeys)::bigint[], \(endKeys)::bigint[], \(plan.cohorts.map(\.devices))::int[]) AS u(c, s, e, fk, ek, p)
            """,
            logger: logger
        )
    }

    /// Broadcasts with their edition's facts, filtered and ordered by `tail` (which may bind values).
    static func selectBroadcasts(_ tail: PostgresQuery) -> PostgresQuery {
        PostgresQuery(unsafeSQL: selectBroadcastsHead + " " + tail.sql, binds: tail.binds)
    }

    private static let selectBroadcastsHead = "SELECT \(broadcastColumns) FROM \(broadcastTables)"

    /// A broadcast's columns as ``BroadcastRow`` reads them, from ``broadcastTables``.
    static let broadcastColumns = """
        b.id, b.edition_id, p.app_id, p.id, b.environment, b.state, b.plan::text, b.origin,
            coalesce((SELECT w.starts_at FROM broadcast_waves w WHERE w.broadcast_id = b.id AND w.wave = 1), b.created_at),
            e.deadline, b.created_at, b.finished_at, p.slug, e.issue_date::text, b.failure, b.plan_note
        """

    /// A broadcast `b` with its edition `e` and publication `p`.
    static let broadcastTables = "broadcasts b JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id"

    func select(_ query: PostgresQuery, logger: Logger) async throws -> [Broadcast] {
        let rows = try await client.query(query, logger: logger)
        var broadcasts: [Broadcast] = []
        for try await row in rows.decode(BroadcastRow.self) { broadcasts.append(try Self.broadcast(row)) }
        return broadcasts
    }

    typealias BroadcastRow = (UUID, UUID, Int, Int, Int16, String, String, String, Date, Date, Date, Date?, String, String, String?, String?)

    /// - Throws: ``UnreadableRow`` when its options cannot be read.
    static func broadcast(_ row: BroadcastRow) throws -> Broadcast {
        try Broadcast(
            id: row.0,
            editionID: row.1,
            appID: row.2,
            publicationID: row.3,
            environment: APNsEnvironment(storageCode: row.4),
            state: BroadcastProgress.State(storedState: row.5),
            options: options(row.6, broadcast: row.0),
            origin: row.7,
            start: row.8,
            deadline: row.9,
            createdAt: row.10,
            finishedAt: row.11,
            failure: row.14,
            note: row.15,
            publication: row.12,
            issueDate: row.13
        )
    }

    /// A broadcast's stored options (`broadcasts.plan`).
    /// - Throws: ``UnreadableRow`` naming the broadcast: never the defaults in their place.
    static func options(_ json: String, broadcast id: UUID) throws -> BroadcastOptions {
        do {
            return try JSONDecoder().decode(BroadcastOptions.self, from: Data(json.utf8))
        } catch {
            throw UnreadableRow(table: "broadcasts", key: id.uuidString.lowercased(), column: "options", message: "\(error)")
        }
    }

    /// Counts stored as a JSON object of whole numbers (a cohort's `rejected`, `skipped`, `providers`).
    /// - Throws: ``UnreadableRow`` naming `table`, `key` and `column` when they are not: never `[:]` in their place,
    ///   which would show a broadcast's rejections as none.
    static func counts(json: String, table: String, key: String, column: String) throws -> [String: Int] {
        do {
            return try JSONDecoder().decode([String: Int].self, from: Data(json.utf8))
        } catch {
            throw UnreadableRow(table: table, key: key, column: column, message: "not a JSON object of counts: \(json.prefix(200))")
        }
    }

    /// Counts as the JSON object a cohort's counters merge (`rejected`, `skipped`, `providers`).
    /// - Throws: when they cannot be encoded: never `{}` in their place, which would lose them from the counters.
    static func json(_ counts: [String: Int]) throws -> String {
        String(decoding: try JSONEncoder().encode(counts), as: UTF8.self)
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

extension BroadcastProgress.State {
    /// `planned` is stored for a broadcast not yet started by any worker; it shows as running.
    init(storedState: String) {
        self = Self(rawValue: storedState) ?? .running
    }
}
