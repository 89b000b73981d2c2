import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

extension BroadcastRepository {
    // MARK: Leases

    /// Leases the next batch that is due by `now + lookahead`: first a batch whose lease expired (its worker
    /// died), else a new one carved from the cohort due soonest.
    ///
    /// - Parameters:
    ///   - owner: the worker's name, e.g. `host:pid:random`.
    ///   - duration: how long the lease holds unless renewed (``renew(_:owner:duration:now:logger:)``), by
    ///     the database's clock (``LeaseClock``).
    ///   - batchDuration: a new batch holds the devices due in this many seconds of the wave's rate,
    ///   - maxBatchSize: but no more than this many (more only when devices share a cohort key). The
    ///     batch is what a worker that dies may have sent without recording it.
    /// - Returns: nil when nothing is due.
    ///   - excluding: batches this worker holds already (it may still be sending one whose lease ran out).
    ///   - excludingApps: apps this worker cannot send for now through any of their providers: their new batches are
    ///     left to the other workers.
    ///   - excludingProviders: apps' providers this worker cannot send through now: batches given back for them (and
    ///     only them) are left to the other workers. Batches given back for providers held for a suspected
    ///     misconfiguration (`provider_holds`) wait for every worker, and so do new batches of an app whose every
    ///     provider is held.
    public func lease(
        owner: String,
        now: Date,
        lookahead: TimeInterval,
        duration: TimeInterval,
        batchDuration: TimeInterval,
        maxBatchSize: Int,
        excluding held: [Int64] = [],
        excludingApps apps: [Int] = [],
        excludingProviders providers: [(appID: Int, provider: PushProvider)] = [],
        takeOver: Bool = true,
        takeOverGrace: TimeInterval = 0,
        logger: Logger
    ) async throws -> LeasedBatch? {
        try await leaseReading(
            owner: owner,
            now: now,
            lookahead: lookahead,
            duration: duration,
            batchDuration: batchDuration,
            maxBatchSize: maxBatchSize,
            excluding: held,
            excludingApps: apps,
            excludingProviders: providers,
            takeOver: takeOver,
            takeOverGrace: takeOverGrace,
            logger: logger
        )?.batch
    }

    /// A leased batch, with its targets when the lease read them (``lease(owner:now:lookahead:duration:batchDuration:maxBatchSize:excluding:excludingApps:excludingProviders:takeOver:takeOverGrace:logger:)``).
    public struct Lease: Sendable {
        public var batch: LeasedBatch
        /// The batch's devices as ``targets(of:now:logger:)`` reads them, at the lease's `now`, when the lease carved
        /// the batch from a wave's condition (read in the statement that found its extent); nil for a batch taken over,
        /// or carved from recorded members: read them with ``targets(of:now:logger:)``.
        public var targets: [BatchTarget]?
    }

    /// ``lease(owner:now:lookahead:duration:batchDuration:maxBatchSize:excluding:excludingApps:excludingProviders:takeOver:takeOverGrace:logger:)``,
    /// returning the targets the carve read with the batch: one read of its devices instead of two.
    public func leaseReading(
        owner: String,
        now: Date,
        lookahead: TimeInterval,
        duration: TimeInterval,
        batchDuration: TimeInterval,
        maxBatchSize: Int,
        excluding held: [Int64] = [],
        excludingApps apps: [Int] = [],
        excludingProviders providers: [(appID: Int, provider: PushProvider)] = [],
        takeOver: Bool = true,
        takeOverGrace: TimeInterval = 0,
        logger: Logger
    ) async throws -> Lease? {
        precondition(maxBatchSize > 0, "a batch holds at least one device")
        let leaseNow = leaseNow(now)
        // Batches of dead workers first: their devices were due earliest. They go out in the wave's next free
        // slot, after the work already claimed, so taking one over never doubles the rate.
        let taken = try await client.transaction(logger: logger) { connection -> LeasedBatch? in
            let rows = try await connection.run(
                TakeOverText.self,
                Self.takeOverQuery(
                    owner: owner,
                    duration: duration,
                    now: leaseNow,
                    excluding: held,
                    excludingApps: apps,
                    excludingProviders: providers,
                    expired: takeOver,
                    grace: takeOverGrace
                ),
                logger: logger
            )
            var id: Int64?
            for row in rows { id = try row.decode(Int64.self) }
            guard let id, var batch = try await self.batch(id: id, on: connection, logger: logger) else { return nil }
            batch.slotStart = try await Self.claimSlot(
                broadcastID: batch.broadcastID,
                wave: batch.wave,
                planned: batch.plannedTime(index: 0),
                devices: batch.devices,
                now: leaseNow,
                on: connection,
                logger: logger
            )
            try await connection.query("UPDATE broadcast_batches SET slot_start = \(batch.slotStart) WHERE id = \(id)", logger: logger)
            return batch
        }
        if let taken {
            logger.notice(
                "took over an expired batch",
                metadata: [
                    LogKey.batch: "\(taken.id)", LogKey.broadcast: "\(taken.broadcastID.uuidString.lowercased())", LogKey.leases: "\(taken.leases)",
                    LogKey.slot: "\(taken.slotStart)",
                ]
            )
            return Lease(batch: taken, targets: nil)
        }
        // Carve a new batch; a cohort found empty is closed and the next one tried.
        for _ in 0..<64 {
            let carved = try await client.transaction(logger: logger) { connection -> (id: Int64?, again: Bool, targets: [BatchTarget]?) in
                let due = try await connection.run(
                    DueCohortText.self,
                    Self.dueCohortQuery(dueBy: now.addingTimeInterval(lookahead), excludingApps: apps),
                    logger: logger
                )
                var found: (UUID, Int16, Int, Int64, Int64, Int, String, Double, Date, Bool)?
                for row in due { found = try row.decode((UUID, Int16, Int, Int64, Int64, Int, String, Double, Date, Bool).self) }
                guard let (broadcastID, wave, cohort, nextKey, endKey, nextOrdinal, kind, rate, planned, members) = found else {
                    return (nil, false, nil)
                }
                let batchSize = max(1, min(maxBatchSize, Int((rate * batchDuration).rounded(.up))))
                // The key of the batch's last device and how many devices it holds (every device up to and including
                // that key), in one statement: from the members recorded when a later wave was counted; else by
                // evaluating the audience along the keys (wave 1, whose condition reads the device's row alone, and a
                // wave counted by an older worker), reading the batch's targets with it.
                var lastKey = endKey - 1
                var devices = 0
                var targets: [BatchTarget]?
                if members {
                    let extentQuery = WaveAudience.memberExtentQuery(
                        broadcastID: broadcastID,
                        wave: Int(wave),
                        from: nextKey,
                        before: endKey,
                        size: batchSize
                    )
                    for try await (last, count) in try await connection.query(extentQuery, logger: logger).decode((Int64, Int).self) {
                        (lastKey, devices) = (last, count)
                    }
                } else {
                    let rows = try await connection.run(BroadcastByIDText.self, Self.broadcastByIDQuery(broadcastID), logger: logger)
                    guard let row = rows.first else { return (nil, false, nil) }
                    let broadcast = try Self.broadcast(row.decode(BroadcastRow.self))
                    let audience = WaveAudience(broadcast, wave: Int(wave), kind: .init(rawValue: kind) ?? .background)
                    let read = try await Self.targets(
                        connection.query(
                            audience.batchTargetsQuery(broadcastID: broadcastID, from: nextKey, before: endKey, size: batchSize, now: now),
                            logger: logger
                        )
                    )
                    devices = read.targets.count
                    if devices >= batchSize, let last = read.keys.last { lastKey = last }
                    targets = read.targets
                }
                try await connection.query(
                    """
                    UPDATE broadcast_cohorts SET next_key = \(lastKey + 1), next_ordinal = next_ordinal + \(devices)
                    WHERE broadcast_id = \(broadcastID) AND wave = \(wave) AND cohort = \(cohort)
                    """,
                    logger: logger
                )
                guard devices > 0 else { return (nil, true, nil) }
                let slot = try await Self.claimSlot(
                    broadcastID: broadcastID,
                    wave: Int(wave),
                    planned: planned,
                    devices: devices,
                    now: leaseNow,
                    on: connection,
                    logger: logger
                )
                let inserted = try await connection.query(
                    """
                    INSERT INTO broadcast_batches (broadcast_id, wave, cohort, first_key, last_key, first_ordinal, devices, lease_owner, lease_expires_at, slot_start)
                    VALUES (\(broadcastID), \(wave), \(cohort), \(nextKey), \(lastKey), \(nextOrdinal), \(devices), \(owner),
                        coalesce(\(leaseNow)::timestamptz, now()) + make_interval(secs => \(duration)), \(slot))
                    RETURNING id
                    """,
                    logger: logger
                )
                var id: Int64?
                for try await value in inserted.decode(Int64.self) { id = value }
                return (id, false, targets)
            }
            if let id = carved.id {
                guard let batch = try await batch(id: id, logger: logger) else { return nil }
                return Lease(batch: batch, targets: carved.targets)
            }
            if !carved.again { return nil }
        }
        return nil
    }

    /// Takes over the oldest batch whose lease expired (its worker died) or that was given back, for `owner` for
    /// `duration` seconds; never one of `held` nor one of `apps`' broadcasts, nor one given back for providers that
    /// are all either among `providers` (this worker cannot send through them) or held for the app. `now`: the lease
    /// clock's instant, nil for the database's. An expired lease is taken over `grace` seconds after its expiry: time for
    /// its holder to renew it once the database answers again (a database away for longer than a lease expires every
    /// lease it held; without the grace, the first worker to poll after it took over batches whose holders were alive
    /// and done, and sent them again: found by the simulation, `paperboy-sim` seed 857). Without `expired`, only batches
    /// given back (a worker just back from database errors leaves expired leases to their holders for a while).
    static func takeOverQuery(
        owner: String,
        duration: TimeInterval,
        now: Date?,
        excluding held: [Int64],
        excludingApps apps: [Int] = [],
        excludingProviders providers: [(appID: Int, provider: PushProvider)] = [],
        expired: Bool = true,
        grace: TimeInterval = 0
    ) -> PostgresQuery {
        """
        UPDATE broadcast_batches
        SET lease_owner = \(owner), lease_expires_at = coalesce(\(now)::timestamptz, now()) + make_interval(secs => \(duration)),
            leases = leases + 1
        WHERE id = (
            SELECT bb.id FROM broadcast_batches bb JOIN broadcasts b ON b.id = bb.broadcast_id
                JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
            WHERE bb.done_at IS NULL AND b.state = 'running'
                AND (bb.lease_owner = '' OR (\(expired) AND bb.lease_expires_at < coalesce(\(now)::timestamptz, now()) - make_interval(secs => \(grace))))
                AND bb.id <> ALL (\(held)::bigint[])
                AND p.app_id <> ALL (\(apps)::integer[])
                AND NOT (cardinality(bb.given_back_providers) > 0 AND NOT EXISTS (
                    SELECT 1 FROM unnest(bb.given_back_providers) AS gp(provider)
                    WHERE NOT EXISTS (SELECT 1 FROM provider_holds h
                        WHERE h.app_id = p.app_id AND h.environment = b.environment AND h.provider = gp.provider)
                        AND NOT EXISTS (SELECT 1 FROM unnest(\(providers.map(\.appID))::integer[], \(providers.map { $0.provider.storageCode })::smallint[])
                            AS x(app_id, provider) WHERE x.app_id = p.app_id AND x.provider = gp.provider)))
            ORDER BY bb.id LIMIT 1 FOR UPDATE OF bb SKIP LOCKED)
        RETURNING id
        """
    }

    /// True of an app (`a`) in a broadcast's environment (`b`) when none of its providers can send: each is either not
    /// configured or held for a suspected misconfiguration. Written from ``PushProvider``'s cases, so that a provider
    /// is added in one place.
    static let noProviderCanSend = PushProvider.allCases.map { provider in
        "(a.\(provider.configuredColumn) IS NULL OR EXISTS (SELECT 1 FROM provider_holds h "
            + "WHERE h.app_id = a.id AND h.environment = b.environment AND h.provider = \(provider.storageCode)))"
    }.joined(separator: " AND ")

    /// The cohort whose next device is due soonest, if that is by `dueBy` (its planned instant, or the wave's
    /// next free slot when the wave is behind), locked for carving a batch; never one of `apps`' broadcasts.
    static func dueCohortQuery(dueBy: Date, excludingApps apps: [Int] = []) -> PostgresQuery {
        """
        SELECT c.broadcast_id, c.wave, c.cohort, c.next_key, c.end_key, c.next_ordinal, w.kind, w.rate,
            c.starts_at + make_interval(secs => c.next_ordinal / w.rate), w.members
        FROM broadcast_cohorts c
        JOIN broadcast_waves w ON w.broadcast_id = c.broadcast_id AND w.wave = c.wave
        JOIN broadcasts b ON b.id = c.broadcast_id
        WHERE b.state = 'running' AND w.finished_at IS NULL AND c.next_key < c.end_key AND w.rate > 0
            AND greatest(c.starts_at + make_interval(secs => c.next_ordinal / w.rate), coalesce(w.next_slot, '-infinity'),
                coalesce((SELECT o.next_slot FROM editions e JOIN publications p ON p.id = e.publication_id JOIN origins o ON o.id = p.origin_id
                    WHERE e.id = b.edition_id), '-infinity')) <= \(dueBy)
            AND NOT EXISTS (SELECT 1 FROM editions e JOIN publications p ON p.id = e.publication_id JOIN apps a ON a.id = p.app_id
                WHERE e.id = b.edition_id AND (p.app_id = ANY (\(apps)::integer[]) OR (\(unescaped: noProviderCanSend))))
        ORDER BY c.starts_at + make_interval(secs => c.next_ordinal / w.rate), c.cohort
        LIMIT 1 FOR UPDATE OF c SKIP LOCKED
        """
    }

    /// When a worker should next look for work: `lookahead` before the next batch of a running wave comes due (its
    /// planned instant or the wave's next free slot, whichever is later), or when an unfinished batch's expired lease
    /// may be taken over, after `now`; nil when neither exists.
    public func nextDue(now: Date, lookahead: TimeInterval = 0, takeOverGrace: TimeInterval = 0, logger: Logger) async throws -> Date? {
        let rows = try await client.query(
            """
            SELECT min(due) FROM (
                SELECT min(greatest(c.starts_at + make_interval(secs => c.next_ordinal / w.rate), coalesce(w.next_slot, '-infinity'),
                    coalesce((SELECT o.next_slot FROM editions e JOIN publications p ON p.id = e.publication_id JOIN origins o ON o.id = p.origin_id
                        WHERE e.id = b.edition_id), '-infinity'))) - make_interval(secs => \(lookahead)) AS due
                FROM broadcast_cohorts c
                JOIN broadcast_waves w ON w.broadcast_id = c.broadcast_id AND w.wave = c.wave
                JOIN broadcasts b ON b.id = c.broadcast_id
                WHERE b.state = 'running' AND w.finished_at IS NULL AND c.next_key < c.end_key AND w.rate > 0
                UNION ALL
                SELECT min(bb.lease_expires_at + make_interval(secs => \(takeOverGrace))) FROM broadcast_batches bb JOIN broadcasts b ON b.id = bb.broadcast_id
                WHERE bb.done_at IS NULL AND b.state = 'running' AND bb.lease_owner <> ''
                    AND bb.lease_expires_at + make_interval(secs => \(takeOverGrace)) >= coalesce(\(leaseNow(now))::timestamptz, now())
            ) next
            """,
            logger: logger
        )
        var due: Date?
        for try await value in rows.decode(Date?.self) { due = value }
        return due
    }

    /// Claims the wave's next free slot for `devices` devices whose first is planned at `planned`: it starts
    /// at the latest of the end of the slots already claimed, `planned` and `now`, and lasts `devices / rate`.
    /// Every worker claims from the same row, so the wave's sends never exceed its rate in total, and work
    /// that fell behind (a stall, a batch taken over) goes out after the work already claimed, at the rate.
    ///
    /// When the broadcast's publication shares a content origin (migration 0018), the slot is also claimed on the
    /// origin's timeline, exclusively: it starts no earlier than the end of every slot any broadcast of the origin
    /// claimed, and holds the origin for `devices / capacity` (the batch sends at the capacity within it), so the
    /// origin never sees more than its capacity in total. The origin's row is locked before the wave's, always.
    ///
    /// `now` is the lease clock's: nil for the database's, so that a worker whose clock runs ahead cannot start its
    /// slot inside the one before (workers pace on the database's clock, measured at each heartbeat).
    /// - Returns: when the slot starts.
    static func claimSlot(
        broadcastID: UUID,
        wave: Int,
        planned: Date,
        devices: Int,
        now: Date?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Date {
        let origins = try await connection.run(OriginText.self, Self.originQuery(broadcastID: broadcastID), logger: logger)
        var origin: (id: Int, capacity: Double, next: Date?)?
        for row in origins { origin = try row.decode((Int, Double, Date?).self) }
        let rows = try await connection.query(
            """
            UPDATE broadcast_waves
            SET next_slot = greatest(coalesce(next_slot, '-infinity'), \(planned), coalesce(\(now)::timestamptz, now()), \(origin?.next)::timestamptz)
                    + make_interval(secs => \(Double(devices)) / rate),
                behind_seconds = extract(epoch FROM greatest(coalesce(next_slot, '-infinity'), \(planned), coalesce(\(now)::timestamptz, now()),
                    \(origin?.next)::timestamptz) - \(planned))
            WHERE broadcast_id = \(broadcastID) AND wave = \(Int16(wave)) AND rate > 0
            RETURNING next_slot - make_interval(secs => \(Double(devices)) / rate)
            """,
            logger: logger
        )
        var slot = max(planned, now ?? planned)
        for try await start in rows.decode(Date.self) { slot = start }
        if let origin {
            try await connection.query(
                "UPDATE origins SET next_slot = \(slot) + make_interval(secs => \(Double(devices)) / capacity) WHERE id = \(origin.id)",
                logger: logger
            )
        }
        return slot
    }

    /// The content origin of a broadcast's publication, locked for a slot claim: its id, capacity and timeline's end.
    static func originQuery(broadcastID: UUID) -> PostgresQuery {
        """
        SELECT o.id, o.capacity, o.next_slot FROM origins o
        WHERE o.id = (SELECT p.origin_id FROM broadcasts b JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
            WHERE b.id = \(broadcastID))
        FOR UPDATE
        """
    }

    /// A new slot for the devices of a batch from its `index`-th on, when the worker fell behind the batch's
    /// slot (it was paused, starved, or could not send): they go out after the work claimed meanwhile, and no
    /// earlier than `notBefore` (a silence limit after a provider came back).
    /// - Returns: when the `index`-th device goes out; nil when `owner` no longer holds this lease of the
    ///   batch (its new holder sends it).
    public func reclaimSlot(
        _ batch: LeasedBatch,
        from index: Int,
        remaining: Int,
        owner: String,
        now: Date,
        notBefore: Date? = nil,
        logger: Logger
    ) async throws -> Date? {
        try await client.transaction(logger: logger) { connection -> Date? in
            let held = try await connection.query(
                """
                SELECT id FROM broadcast_batches
                WHERE id = \(batch.id) AND lease_owner = \(owner) AND leases = \(Int16(batch.leases)) AND done_at IS NULL FOR UPDATE
                """,
                logger: logger
            )
            guard try await held.collect().count == 1 else { return nil }
            return try await Self.claimSlot(
                broadcastID: batch.broadcastID,
                wave: batch.wave,
                planned: max(batch.plannedTime(index: index), notBefore ?? .distantPast),
                devices: max(1, remaining),
                now: self.leaseNow(now),
                on: connection,
                logger: logger
            )
        }
    }

    /// Extends the leases `owner` holds on `batches` by `duration` seconds from now (the lease clock's). A lease is identified by the batch and its
    /// lease number (``LeasedBatch/leases``), so a lease that expired and was taken over, even by the same
    /// worker, is not extended.
    @discardableResult
    public func renew(
        _ batches: [LeasedBatch],
        owner: String,
        duration: TimeInterval,
        now: Date,
        logger: Logger
    ) async throws -> LeaseRenewal {
        guard !batches.isEmpty else { return LeaseRenewal() }
        let rows = try await client.query(
            Self.renewQuery(ids: batches.map(\.id), leases: batches.map(\.leases), owner: owner, duration: duration, now: leaseNow(now)),
            logger: logger
        )
        var renewal = LeaseRenewal()
        for try await (id, running) in rows.decode((Int64, Bool).self) {
            renewal.held.insert(id)
            if !running { renewal.stopped.insert(id) }
        }
        return renewal
    }

    /// Extends the leases `ids` (with their lease numbers) that `owner` holds; returns each one still held
    /// and whether its broadcast is running. `now`: the lease clock's instant, nil for the database's.
    static func renewQuery(ids: [Int64], leases: [Int], owner: String, duration: TimeInterval, now: Date?) -> PostgresQuery {
        """
        UPDATE broadcast_batches b SET lease_expires_at = coalesce(\(now)::timestamptz, now()) + make_interval(secs => \(duration))
        FROM unnest(\(ids)::bigint[], \(leases.map { Int16($0) })::smallint[]) AS u(id, leases)
        WHERE b.id = u.id AND b.leases = u.leases AND b.lease_owner = \(owner) AND b.done_at IS NULL
        RETURNING b.id, (SELECT state = 'running' FROM broadcasts WHERE id = b.broadcast_id)
        """
    }

    /// The devices of a leased batch in send order (cohort key, then id), with their recent push counts.
    public func targets(of batch: LeasedBatch, now: Date, logger: Logger) async throws -> [BatchTarget] {
        let audience = WaveAudience(
            appID: batch.appID,
            environment: batch.environment,
            publicationID: batch.publicationID,
            editionID: batch.editionID,
            wave: batch.wave,
            kind: batch.kind,
            maxPushesPerDevice: batch.maxPushesPerDevice,
            dormantAfter: batch.dormantAfter
        )
        let rows = try await client.query(
            Self.targetsQuery(
                audience,
                firstKey: batch.firstKey,
                lastKey: batch.lastKey,
                now: now,
                leavingOutDeliveredIn: batch.givenBack ? (batch.broadcastID, batch.wave) : nil,
                members: batch.membersRecorded ? (batch.broadcastID, batch.wave) : nil
            ),
            logger: logger
        )
        var targets: [BatchTarget] = []
        for try await (id, token, provider, platform, tier, recent, notify) in rows.decode(
            (Int64, ByteBuffer, Int16, Int16, Int16, [Date], Bool).self
        ) {
            targets.append(Self.target(id: id, token: token, provider: provider, platform: platform, tier: tier, recent: recent, notify: notify))
        }
        return targets
    }

    /// The rows of ``WaveAudience/batchTargetsQuery(broadcastID:from:before:size:now:)``: the targets and their cohort keys, in order.
    static func targets(_ rows: PostgresRowSequence) async throws -> (targets: [BatchTarget], keys: [Int64]) {
        var targets: [BatchTarget] = []
        var keys: [Int64] = []
        for try await (id, key, token, provider, platform, tier, recent, notify) in rows.decode(
            (Int64, Int64, ByteBuffer, Int16, Int16, Int16, [Date], Bool).self
        ) {
            targets.append(Self.target(id: id, token: token, provider: provider, platform: platform, tier: tier, recent: recent, notify: notify))
            keys.append(key)
        }
        return (targets, keys)
    }

    private static func target(
        id: Int64,
        token: ByteBuffer,
        provider: Int16,
        platform: Int16,
        tier: Int16,
        recent: [Date],
        notify: Bool
    ) -> BatchTarget {
        BatchTarget(
            deviceID: id,
            token: PushToken(provider: PushProvider(storageCode: provider), bytes: Array(buffer: token)),
            platform: DevicePlatform(storageCode: platform),
            tier: ImageTier(storageCode: tier),
            recentBackgroundPushes: recent,
            notifyWhenReady: notify
        )
    }

    /// The hourly budget reads the times of a device's background pushes of the last hour through the ledger's primary
    /// key (``WaveAudience/recentBackgroundPushes(of:since:)``, a few at most: the budget is 3). A batch given back
    /// before leaves out the devices delivered in its wave (`leavingOutDeliveredIn`: the broadcast and wave), one probe
    /// of the deliveries primary key each.
    static func targetsQuery(
        _ audience: WaveAudience,
        firstKey: Int64,
        lastKey: Int64,
        now: Date,
        leavingOutDeliveredIn given: (broadcast: UUID, wave: Int)? = nil,
        members: (broadcast: UUID, wave: Int)? = nil
    ) -> PostgresQuery {
        let delivered =
            given == nil
            ? "" : "AND NOT EXISTS (SELECT 1 FROM deliveries g WHERE g.device_id = d.id AND g.broadcast_id = $12 AND g.wave = $13)"
        // With recorded members the batch is a range of wave_members' primary key, each member's device read by
        // its primary key and checked against the audience again (a receipt may have come since the count).
        let (from, keyRange, order) =
            members == nil
            ? ("devices d", "d.cohort_key BETWEEN $9 AND $10", "d.cohort_key, d.id")
            : (
                "wave_members m JOIN devices d ON d.id = m.device_id",
                "m.broadcast_id = $\(given == nil ? 12 : 14) AND m.wave = $\(given == nil ? 13 : 15) AND m.cohort_key BETWEEN $9 AND $10",
                "m.cohort_key, d.id"
            )
        return audience.query(
            """
            SELECT d.id, d.token, d.provider, d.platform, d.tier, \(WaveAudience.recentBackgroundPushes(of: "d.id", since: "$11")),
                \(WaveAudience.readyAlertAsked(device: "d.id", asked: "d.notify_when_ready AND d.alerts_authorized"))
            FROM \(from) WHERE \(keyRange) AND {audience} \(delivered) ORDER BY \(order)
            """
        ) {
            $0.append(firstKey)
            $0.append(lastKey)
            $0.append(now.addingTimeInterval(-3600))
            if let given {
                $0.append(given.broadcast)
                $0.append(Int16(given.wave))
            }
            if let members {
                $0.append(members.broadcast)
                $0.append(Int16(members.wave))
            }
        }
    }

    /// Records what became of a batch's devices, in one transaction: the delivery ledger, the cohort's
    /// counters, 410s deactivating devices (with the timestamp rule), deactivations held for answers that say the
    /// token is not valid for the app, the fleet's evidence for the misconfiguration breaker (`answer_tallies`: how
    /// many answers through each provider, how many "not valid"), and the batch done.
    ///
    /// Idempotent: a record retried after its COMMIT's answer was lost finds the batch done by this lease and
    /// writes nothing again.
    /// - Parameter configuration: the app's configuration version (``App/credentialsVersion``) the devices were sent
    ///   under, nil for the app's now: when the app's configuration changed since (a fix, a release, a confirm), the
    ///   "not valid" answers to the old one say nothing of the tokens and are neither held nor counted as evidence.
    /// - Returns: false, recording nothing, when `owner` no longer holds this lease of the batch (it expired
    ///   and was taken over, by another worker or this one; the new lease records it).
    @discardableResult
    public func record(
        _ batch: LeasedBatch,
        outcomes: [BatchOutcome],
        owner: String,
        configuration: Int? = nil,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        try await write(batch, outcomes: outcomes, owner: owner, configuration: configuration, now: now, logger: logger) { connection in
            let done = try await connection.query(
                """
                UPDATE broadcast_batches SET done_at = \(now)
                WHERE id = \(batch.id) AND lease_owner = \(owner) AND leases = \(Int16(batch.leases)) AND done_at IS NULL RETURNING id
                """,
                logger: logger
            )
            if try await done.collect().count == 1 { return .write }
            return try await Self.fenceAgain(batch, owner: owner, givenBack: false, on: connection, logger: logger)
        }
    }

    /// Records what became of the devices a worker sent of a batch, and gives the rest back to the cohort: the batch
    /// stays open, left to nobody and expired so that another worker takes it over at once and sends the devices not
    /// delivered in this wave (a drain, or providers this worker could not send through).
    ///
    /// Idempotent: a give-back retried after its COMMIT's answer was lost finds it done by this lease and writes
    /// nothing again. The lease it ends can no longer be renewed.
    ///
    /// - Parameters:
    ///   - recorded: the outcomes of the devices written to a provider (or skipped): recorded as ``record(_:outcomes:owner:now:logger:)``
    ///     would, counted once.
    ///   - firstReturned: the batch position of the first device given back: the rest is planned from there.
    ///   - returned: how many devices go back.
    ///   - reason: why, as `broadcast status` shows it.
    ///   - providers: the providers this worker could not send through (workers that cannot either leave the batch
    ///     to others); empty for a drain.
    ///   - held: those of `providers` held for a suspected misconfiguration: the batch waits for an operator, and
    ///     the wait does not count towards `--fail-after` (`given_back_since` starts only with a give-back for a
    ///     provider not held).
    ///   - configuration: the app's configuration version the recorded devices were sent under (nil: the app's now):
    ///     "not valid" answers to an older one are neither held nor counted as evidence (``record(_:outcomes:owner:configuration:now:logger:)``).
    /// - Returns: false, recording nothing, when `owner` no longer holds this lease of the batch.
    @discardableResult
    public func giveBack(
        _ batch: LeasedBatch,
        recorded: [BatchOutcome],
        firstReturned: Int,
        returned: Int,
        because reason: String,
        providers: [PushProvider] = [],
        held: [PushProvider] = [],
        owner: String,
        configuration: Int? = nil,
        now: Date,
        logger: Logger
    ) async throws -> Bool {
        let leaseNow = leaseNow(now)
        let codes = providers.map(\.storageCode)
        let unsendable = providers.filter { !held.contains($0) }.map(\.storageCode)
        return try await write(batch, outcomes: recorded, owner: owner, configuration: configuration, now: now, logger: logger) { connection in
            let given = try await connection.query(
                """
                UPDATE broadcast_batches
                SET give_backs = give_backs + 1, given_back_for = \(reason), devices = \(max(1, returned)),
                    first_ordinal = first_ordinal + \(firstReturned), slot_start = NULL,
                    given_back_providers = \(codes)::smallint[],
                    given_back_since = CASE WHEN cardinality(\(unsendable)::smallint[]) = 0 THEN NULL
                        ELSE coalesce(given_back_since, coalesce(\(leaseNow)::timestamptz, now())) END,
                    given_back_by = lease_owner, given_back_lease = leases, lease_owner = '',
                    lease_expires_at = coalesce(\(leaseNow)::timestamptz, now()) - interval '1 millisecond'
                WHERE id = \(batch.id) AND lease_owner = \(owner) AND leases = \(Int16(batch.leases)) AND done_at IS NULL RETURNING id
                """,
                logger: logger
            )
            if try await given.collect().count == 1 { return .write }
            return try await Self.fenceAgain(batch, owner: owner, givenBack: true, on: connection, logger: logger)
        }
    }

    /// What a fence that did not pass means: the batch was recorded (or given back) by this very lease already (a
    /// retry after a lost COMMIT answer: nothing to write again), or the lease is another's.
    static func fenceAgain(
        _ batch: LeasedBatch,
        owner: String,
        givenBack: Bool,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Fence {
        let rows = try await connection.query(
            """
            SELECT CASE WHEN \(givenBack) THEN given_back_by = \(owner) AND given_back_lease = \(Int16(batch.leases))
                ELSE done_at IS NOT NULL AND lease_owner = \(owner) AND leases = \(Int16(batch.leases)) END
            FROM broadcast_batches WHERE id = \(batch.id)
            """,
            logger: logger
        )
        for try await written in rows.decode(Bool.self) where written { return .writtenBefore }
        return .lost
    }

    /// What a write's fence found.
    enum Fence {
        /// The lease holds: write.
        case write
        /// This lease wrote it already.
        case writtenBefore
        /// The lease is another's: write nothing.
        case lost
    }

    /// Writes `outcomes` in one transaction after `fence` (which ends or gives back the batch under its lease)
    /// succeeded: the delivery ledger, the cohort's counters, dormancy, deactivations.
    private func write(
        _ batch: LeasedBatch,
        outcomes: [BatchOutcome],
        owner: String,
        configuration: Int?,
        now: Date,
        logger: Logger,
        fence: @escaping @Sendable (PostgresConnection) async throws -> Fence
    ) async throws -> Bool {
        var sentIDs: [Int64] = []
        var sentAt: [Date] = []
        var sentBackground: [Bool] = []
        var results: [String] = []
        var reasons: [String] = []
        var accepted = 0
        var rejected: [String: Int] = [:]
        var skipped: [String: Int] = [:]
        /// `<provider>/sent`, `<provider>/accepted`, `<provider>/<reason>`: see migration 0009.
        var providers: [String: Int] = [:]
        var goneIDs: [Int64] = []
        var goneAt: [Date] = []
        var goneWhenRecorded: [Bool] = []
        var heldIDs: [Int64] = []
        var heldProviders: [Int16] = []
        var heldReasons: [String] = []
        var heldSentAt: [Date] = []
        let evidence = AnswerEvidence(outcomes)
        for outcome in outcomes {
            let (result, reason): (String, String)
            switch outcome.result {
            case .accepted:
                (result, reason) = ("accepted", "")
                accepted += 1
            case .rejected(let why, let deactivation):
                (result, reason) = ("rejected", why)
                rejected[why, default: 0] += 1
                switch deactivation {
                case .at(let time):
                    goneIDs.append(outcome.deviceID)
                    goneAt.append(time)
                    goneWhenRecorded.append(false)
                case .whenRecorded:
                    goneIDs.append(outcome.deviceID)
                    goneAt.append(now)
                    goneWhenRecorded.append(true)
                case .deferred:
                    heldIDs.append(outcome.deviceID)
                    heldProviders.append(outcome.provider.storageCode)
                    heldReasons.append(why)
                    heldSentAt.append(outcome.sentAt)
                case nil:
                    break
                }
            case .fateUnknown:
                (result, reason) = ("fateUnknown", "")
                rejected["fateUnknown", default: 0] += 1
            case .notSent:
                (result, reason) = ("notSent", "")
                rejected["notSent", default: 0] += 1
            case .skipped(let why):
                skipped[why.rawValue, default: 0] += 1
                continue
            }
            sentIDs.append(outcome.deviceID)
            sentAt.append(outcome.sentAt)
            sentBackground.append(batch.kind == .background && !outcome.alert)
            results.append(result)
            reasons.append(reason)
            let provider = outcome.provider.rawValue
            providers[provider + "/sent", default: 0] += 1
            providers[provider + "/" + (result == "rejected" ? reason : result), default: 0] += 1
        }
        let sent = sentIDs.count
        let background = batch.kind == .background
        // Wave 1's accepted background pushes count towards dormancy, after the wave (``queuePushes``).
        let counted =
            background && batch.wave == 1 ? sentIDs.indices.filter { results[$0] == "accepted" && sentBackground[$0] }.map { sentIDs[$0] } : []
        /// The transaction; with `keepingRecorded`, the devices whose row of this wave was there already.
        func attempt(keepingRecorded: Bool) async throws -> (written: Bool, kept: [Int64]) {
            try await client.transaction(logger: logger) { connection -> (written: Bool, kept: [Int64]) in
                switch try await fence(connection) {
                case .write: break
                case .writtenBefore: return (true, [])
                case .lost: return (false, [])
                }
                var kept: [Int64] = []
                if sent > 0 {
                    let query = Self.ledgerQuery(
                        broadcastID: batch.broadcastID,
                        wave: batch.wave,
                        cohort: batch.cohort,
                        deviceIDs: sentIDs,
                        sentAt: sentAt,
                        outcomes: results,
                        reasons: reasons,
                        background: sentBackground,
                        keepingRecorded: keepingRecorded
                    )
                    if keepingRecorded {
                        var written = Set<Int64>()
                        for row in try await connection.run(LedgerKeepingText.self, query, logger: logger) {
                            written.insert(try row.decode(Int64.self))
                        }
                        kept = sentIDs.filter { !written.contains($0) }
                    } else {
                        _ = try await connection.run(LedgerText.self, query, logger: logger)
                    }
                }
                if !counted.isEmpty {
                    _ = try await connection.run(
                        QueuePushesText.self,
                        RequestStatements.queuePushes(broadcastID: batch.broadcastID, cohort: batch.cohort, deviceIDs: counted),
                        logger: logger
                    )
                }
                _ = try await connection.run(
                    CountersText.self,
                    Self.countersQuery(
                        sent: sent,
                        accepted: accepted,
                        rejected: try Self.json(rejected),
                        skipped: try Self.json(skipped),
                        providers: try Self.json(providers),
                        broadcastID: batch.broadcastID,
                        wave: batch.wave,
                        cohort: batch.cohort
                    ),
                    logger: logger
                )
                if !goneIDs.isEmpty {
                    try await connection.query(
                        RequestStatements.unregister(deviceIDs: goneIDs, at: goneAt, atDatabaseNow: goneWhenRecorded, now: now),
                        logger: logger
                    )
                }
                if !heldIDs.isEmpty {
                    try await connection.query(
                        RequestStatements.holdDeactivations(
                            deviceIDs: heldIDs,
                            appID: batch.appID,
                            providers: heldProviders,
                            reasons: heldReasons,
                            sentAt: heldSentAt,
                            environment: batch.environment,
                            configuration: configuration
                        ),
                        logger: logger
                    )
                }
                if !evidence.isEmpty {
                    try await connection.query(
                        evidence.tallyQuery(appID: batch.appID, environment: batch.environment, worker: owner, configuration: configuration),
                        logger: logger
                    )
                }
                return (true, kept)
            }
        }
        do {
            return try await attempt(keepingRecorded: false).written
        } catch let error as PSQLError where error.isUniqueViolation(of: "deliveries_pkey") {
            // Not expected (see ``ledgerQuery``): every device is pushed once in a wave. Written again keeping the rows
            // there, and the devices named, so that the next report of a device pushed twice says which and when.
            let (written, kept) = try await attempt(keepingRecorded: true)
            logger.error(
                "devices of a batch had been recorded in its wave already: their first rows are kept",
                metadata: [
                    LogKey.broadcast: "\(batch.broadcastID)", LogKey.wave: "\(batch.wave)", LogKey.batch: "\(batch.id)",
                    LogKey.devices: "\(kept.count)", LogKey.deviceIDs: "\(kept.prefix(20).map(String.init).joined(separator: ","))",
                ]
            )
            return written
        }
    }

    /// A batch's sent devices into the delivery ledger, one row each (`outcomes`: `accepted`, `rejected`, `fateUnknown`,
    /// `notSent`; `reasons` empty for none).
    ///
    /// A device is recorded once in a wave: the lease's fence lets one record of a batch through, and a batch given
    /// back is read again without the devices delivered in its wave. So the INSERT has no `ON CONFLICT`: the speculative
    /// insertion it takes costs a second probe of the primary key per row, a quarter of the statement (9.3 → 7.1 ms a
    /// batch of 1,000 at 1,000,000 devices, issue 49). Should a device of the batch have a row of this wave already,
    /// the statement fails on `deliveries_pkey`, and ``record(_:outcomes:owner:configuration:now:logger:)`` writes the
    /// batch again with `keepingRecorded`: the row recorded first is kept, and the statement returns the devices it
    /// wrote, so that the worker can name the others in its log.
    static func ledgerQuery(
        broadcastID: UUID,
        wave: Int,
        cohort: Int,
        deviceIDs: [Int64],
        sentAt: [Date],
        outcomes: [String],
        reasons: [String],
        background: [Bool],
        keepingRecorded: Bool = false
    ) -> PostgresQuery {
        var query: PostgresQuery = """
            INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome, reason)
            SELECT u.id, \(broadcastID), \(Int16(wave)), \(cohort), u.background, u.at, u.outcome, NULLIF(u.reason, '')
            FROM unnest(\(deviceIDs)::bigint[], \(sentAt)::timestamptz[], \(outcomes)::text[], \(reasons)::text[], \(background)::boolean[])
                AS u(id, at, outcome, reason, background)
            """
        if keepingRecorded { query.sql += "\nON CONFLICT DO NOTHING RETURNING device_id" }
        return query
    }

    /// Adds a recorded batch's counts to its cohort's counters; `rejected`, `skipped` and `providers` are JSON objects
    /// of counts by key.
    static func countersQuery(
        sent: Int,
        accepted: Int,
        rejected: String,
        skipped: String,
        providers: String,
        broadcastID: UUID,
        wave: Int,
        cohort: Int
    ) -> PostgresQuery {
        var binds = PostgresBindings(capacity: 8)
        binds.append(sent)
        binds.append(accepted)
        binds.append(rejected)
        binds.append(skipped)
        binds.append(broadcastID)
        binds.append(Int16(wave))
        binds.append(cohort)
        binds.append(providers)
        return PostgresQuery(
            unsafeSQL: """
                UPDATE broadcast_cohorts SET sent = sent + $1, accepted = accepted + $2,
                    rejected = \(Self.mergeCounts("rejected", "$3")), skipped = \(Self.mergeCounts("skipped", "$4")),
                    providers = \(Self.mergeCounts("providers", "$8"))
                WHERE broadcast_id = $5 AND wave = $6 AND cohort = $7
                """,
            binds: binds
        )
    }

    /// A broadcast by id, as the carve reads it in its transaction.
    static func broadcastByIDQuery(_ id: UUID) -> PostgresQuery {
        selectBroadcasts("WHERE b.id = \(id)")
    }

    /// `column` plus the counts in the JSON object bound at `parameter`, key by key.
    private static func mergeCounts(_ column: String, _ parameter: String) -> String {
        """
        (SELECT coalesce(jsonb_object_agg(key, total), '{}'::jsonb) FROM (
            SELECT key, sum(value::bigint) AS total FROM (
                SELECT key, value FROM jsonb_each_text(broadcast_cohorts.\(column))
                UNION ALL SELECT key, value FROM jsonb_each_text(\(parameter)::jsonb)) parts
            GROUP BY key) merged)
        """
    }

    /// A leased batch with what sending it needs.
    func batch(id: Int64, logger: Logger) async throws -> LeasedBatch? {
        try await client.withConnection { connection in try await self.batch(id: id, on: connection, logger: logger) }
    }

    func batch(id: Int64, on connection: PostgresConnection, logger: Logger) async throws -> LeasedBatch? {
        let rows = try await connection.run(BatchText.self, Self.batchQuery(id: id), logger: logger)
        typealias Row = (
            Int64, UUID, Int16, String, Int, Int64, Int64, Int, Int, Date, Double, UUID, Int, Int, Int16, String, Date, Int16, Date?, Date, Int16,
            Double?, Bool, Date
        )
        for postgresRow in rows {
            let row = try postgresRow.decode(Row.self)
            let options = try Self.options(row.15, broadcast: row.1)
            let planned = row.10 > 0 ? row.9.addingTimeInterval(Double(row.7) / row.10) : row.9
            return LeasedBatch(
                id: row.0,
                broadcastID: row.1,
                wave: Int(row.2),
                kind: .init(rawValue: row.3) ?? .background,
                cohort: row.4,
                firstKey: row.5,
                lastKey: row.6,
                firstOrdinal: row.7,
                devices: row.8,
                cohortStart: row.9,
                rate: row.10,
                editionID: row.11,
                appID: row.12,
                publicationID: row.13,
                environment: APNsEnvironment(storageCode: row.14),
                maxPushesPerDevice: options.maxPushesPerDevice.audienceCap(wave: Int(row.2)),
                dormantAfter: options.dormantAfter,
                deadline: row.16,
                androidPriority: options.androidPriority,
                leases: Int(row.17),
                slotStart: row.18 ?? planned,
                readyAlertsFrom: row.3 == BroadcastProgress.Wave.Kind.background.rawValue
                    ? options.lastBackgroundFollowUp(wave: Int(row.2), deadline: row.16) : nil,
                givenBack: row.20 > 0,
                originCapacity: row.21,
                membersRecorded: row.22,
                leasedAt: row.23
            )
        }
        return nil
    }

    static func batchQuery(id: Int64) -> PostgresQuery {
        """
        SELECT bb.id, bb.broadcast_id, bb.wave, w.kind, bb.cohort, bb.first_key, bb.last_key, bb.first_ordinal, bb.devices,
            c.starts_at, w.rate, b.edition_id, p.app_id, p.id, b.environment, b.plan::text, e.deadline, bb.leases, bb.slot_start, w.starts_at,
            bb.give_backs, (SELECT o.capacity FROM origins o WHERE o.id = p.origin_id), w.members, clock_timestamp()
        FROM broadcast_batches bb
        JOIN broadcast_cohorts c ON c.broadcast_id = bb.broadcast_id AND c.wave = bb.wave AND c.cohort = bb.cohort
        JOIN broadcast_waves w ON w.broadcast_id = bb.broadcast_id AND w.wave = bb.wave
        JOIN broadcasts b ON b.id = bb.broadcast_id
        JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
        WHERE bb.id = \(id)
        """
    }

    func select(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws -> [Broadcast] {
        let rows = try await connection.query(query, logger: logger)
        var broadcasts: [Broadcast] = []
        for try await row in rows.decode(BroadcastRow.self) { broadcasts.append(try Self.broadcast(row)) }
        return broadcasts
    }
}
