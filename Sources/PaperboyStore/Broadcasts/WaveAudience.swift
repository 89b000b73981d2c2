import Foundation
import PaperboyCore
import PostgresNIO

/// Who a wave of a broadcast goes to: the one definition, as one SQL condition on `devices d`, used to plan
/// wave 1 (``CohortRepository``), to count a later wave, to carve batches and to read a batch's targets.
///
/// - Wave 1: the active, auto-downloading devices of the app and environment that subscribe to the
///   publication.
/// - Later background waves: of those, the ones with no successful receipt for the edition (a `failed`
///   receipt asks for another try) and fewer background pushes for it than the maximum (`notSent` is no
///   push): the fixed `maxPushesPerDevice`, or with `auto` the wave's number. A device whose token APNs declared permanently bad (410, `BadDeviceToken`,
///   `DeviceTokenNotForTopic`) is inactive from the moment the batch is recorded, so `active` alone keeps
///   it out, until a newer registration revives it.
/// - The alert wave: targets without a successful receipt that allowed alerts and asked for edition alerts
///   (`editionAlerts`, or `notifyWhenReady`: migration 0036), got a background push for the edition and no
///   alert yet.
/// - Neither kind of later wave goes to a dormant device (`devices.dormant`): one whose last counted push
///   followed `dormantAfter` or more editions pushed without a receipt (`device_pushes`, migration 0011,
///   counted after wave 1, before the next wave is counted: migration 0029; a broadcast with `dormantAfter` 0
///   ignores the flag).
public struct WaveAudience: Sendable, Equatable {
    public var appID: Int
    public var environment: APNsEnvironment
    public var publicationID: Int
    /// Nil when no edition exists yet (planning wave 1 of a publication); later waves need it.
    public var editionID: UUID?
    public var wave: Int
    public var kind: BroadcastProgress.Wave.Kind
    /// Background wave: a device with this many background pushes for the edition or more is left out
    /// (``BroadcastOptions/MaxPushes/audienceCap(wave:)``).
    public var maxPushesPerDevice: Int
    /// Later waves leave out devices dormant after this many unanswered editions; 0 leaves out nobody
    /// (``BroadcastOptions/dormantAfter``).
    public var dormantAfter: Int

    public init(
        appID: Int,
        environment: APNsEnvironment,
        publicationID: Int,
        editionID: UUID?,
        wave: Int,
        kind: BroadcastProgress.Wave.Kind,
        maxPushesPerDevice: Int,
        dormantAfter: Int = 0
    ) {
        self.appID = appID
        self.environment = environment
        self.publicationID = publicationID
        self.editionID = editionID
        self.wave = wave
        self.kind = kind
        self.maxPushesPerDevice = maxPushesPerDevice
        self.dormantAfter = dormantAfter
    }

    /// Wave `wave` of `broadcast`, of `kind`.
    public init(_ broadcast: Broadcast, wave: Int, kind: BroadcastProgress.Wave.Kind) {
        self.init(
            appID: broadcast.appID,
            environment: broadcast.environment,
            publicationID: broadcast.publicationID,
            editionID: broadcast.editionID,
            wave: wave,
            kind: kind,
            maxPushesPerDevice: broadcast.options.maxPushesPerDevice.audienceCap(wave: wave),
            dormantAfter: broadcast.options.dormantAfter
        )
    }

    /// Wave 1 of any edition of a publication: its targets.
    public static func targets(of publication: Publication, environment: APNsEnvironment) -> WaveAudience {
        WaveAudience(
            appID: publication.appID,
            environment: environment,
            publicationID: publication.id,
            editionID: nil,
            wave: 1,
            kind: .background,
            maxPushesPerDevice: BroadcastOptions.defaultMaxPushesPerDevice.audienceCap(wave: 1)
        )
    }

    // A device's deliveries are read broadcast by broadcast of the edition (few, indexed by edition), each
    // one probe of the deliveries primary key (device, broadcast), never the device's whole history. The
    // LATERAL … OFFSET 0 holds the planner to that order, and `OFFSET 0` keeps each EXISTS a probe per
    // device: otherwise it may read all the edition's rows into a hash, for a batch of a few hundred.
    // `$5 = 1` folds to true for wave 1 (each statement is planned with its values), so wave 1 reads the
    // broadcast index alone. The edition is compared as `(SELECT $4::uuid)`, a value the planner does not
    // see: with the value, this morning's edition, newer than the statistics, looks as if it had one receipt,
    // and the probe may read all of its receipts by edition for every device (at 10 M devices a later wave
    // never finished). Unseen, it is estimated as an average edition, and only the primary key fits.
    // The dormant test reads a column of the device's own row, before any probe.
    static let condition = """
        d.app_id = $1 AND d.environment = $2 AND d.active AND d.auto_download AND $3 = ANY (d.subscriptions)
        AND ($5 = 1 OR $8 = 0 OR NOT d.dormant)
        AND ($5 = 1 OR NOT EXISTS (
            SELECT 1 FROM receipts r WHERE r.device_id = d.id AND r.edition_id = (SELECT $4::uuid) AND r.result <> 'failed' OFFSET 0))
        AND ($5 = 1 OR $6 OR (
            SELECT count(*) FROM broadcasts xb CROSS JOIN LATERAL (
                SELECT 1 FROM deliveries x WHERE x.device_id = d.id AND x.broadcast_id = xb.id AND x.background AND x.outcome <> 'notSent' OFFSET 0) x
            WHERE xb.edition_id = $4) < $7)
        AND (NOT $6 OR (d.alerts_authorized AND (d.edition_alerts OR d.notify_when_ready)
            AND EXISTS (SELECT 1 FROM broadcasts xb CROSS JOIN LATERAL (
                SELECT 1 FROM deliveries x WHERE x.device_id = d.id AND x.broadcast_id = xb.id AND x.background OFFSET 0) x
                WHERE xb.edition_id = $4 OFFSET 0)
            AND NOT EXISTS (SELECT 1 FROM broadcasts xb CROSS JOIN LATERAL (
                SELECT 1 FROM deliveries x WHERE x.device_id = d.id AND x.broadcast_id = xb.id AND NOT x.background OFFSET 0) x
                WHERE xb.edition_id = $4 OFFSET 0)))
        """

    /// ``condition`` for wave 1's batch reads, with what folds away for wave 1 left out: the follow-up waves' probes.
    /// A new batch's read is planned on every call (a custom plan: a generic one would estimate the publication's
    /// share of the devices wrongly, ``bindings``), and PostgreSQL plans every subquery of the text before it folds
    /// `$5 = 1`: about 0.1 ms of a wave-1 batch's 1 ms of planning at 1,000,000 devices (issue 49). The binds stay those
    /// of ``bindings``, typed (a new batch's audience always has its edition), so the parameters this text does not use
    /// are accepted as they are.
    static let firstWaveCondition = "d.app_id = $1 AND d.environment = $2 AND d.active AND d.auto_download AND $3 = ANY (d.subscriptions)"

    /// Whether ``firstWaveCondition`` says who this audience is: wave 1, background pushes.
    var isFirstWave: Bool { wave == 1 && kind == .background }

    var bindings: PostgresBindings {
        precondition(wave == 1 || editionID != nil, "a later wave's audience needs its edition")
        var binds = PostgresBindings(capacity: 10)
        binds.append(appID)
        binds.append(environment.storageCode)
        // As an `integer`, the element type of `devices.subscriptions`: `$3 = ANY (d.subscriptions)` is then estimated
        // from the column's element statistics. Bound as a `bigint` the planner took a fixed 5 % of the devices, a new
        // batch's range looked hardly larger than the batch, and it read the cohort's whole remaining range in a
        // bitmap scan and sorted it, for every batch (82–106 ms a batch of 1,000 at 1,000,000 devices, against 6).
        binds.append(Int32(publicationID))
        binds.append(editionID)
        binds.append(wave)
        binds.append(kind == .alert)
        binds.append(maxPushesPerDevice)
        binds.append(dormantAfter)
        return binds
    }

    /// `sql` with the condition at `{audience}`; `extra` binds follow as `$9`….
    ///
    /// - Parameter condition: the audience's condition as SQL: ``condition``, or ``firstWaveCondition`` for wave 1's batch
    ///   reads.
    func query(_ sql: String, condition: String = Self.condition, _ extra: (inout PostgresBindings) -> Void = { _ in }) -> PostgresQuery {
        var binds = bindings
        extra(&binds)
        return PostgresQuery(unsafeSQL: sql.replacingOccurrences(of: "{audience}", with: condition), binds: binds)
    }

    /// The times of device `device`'s background pushes after `since` (both SQL), across broadcasts, as the hourly budget
    /// counts them (`notSent` is no push): one probe of the ledger's primary key for each broadcast that may have sent
    /// since then, a few rows at most. A batch's targets carry them whichever statement reads them
    /// (``batchTargetsQuery(broadcastID:from:before:size:now:)``, or
    /// ``BroadcastRepository/targetsQuery(_:firstKey:lastKey:now:leavingOutDeliveredIn:members:)`` for a batch read again).
    ///
    /// The broadcasts that may have sent since `since` are read once per statement (an InitPlan), then probed one by one
    /// (`OFFSET 0` keeps each probe on the key's two leading columns: with `broadcast_id = ANY (…)` the planner read
    /// the device's whole history and filtered it). They are the broadcasts of the audience's app and environment (the
    /// statement's `$1` and `$2`, ``bindings``) planned or running, or that finished less than an hour before `since`:
    /// a probe per device each, so other apps' broadcasts on the same database cost nothing. A batch in flight when its
    /// broadcast ends (cancelled, expired) is recorded after the end with the times it was sent; the hour covers it (a
    /// lease lasts seconds to minutes), and any difference between the clocks of the worker that sent and the one that
    /// ended it.
    ///
    /// The ledger kept an index of its own for this read, `deliveries_recent_background` on `(device_id, sent_at)` of
    /// the background rows: one more random leaf page written for every push, a third of the ledger INSERT's time in
    /// wave 1 at 1,000,000 devices and half of it at 10,000,000 (issue 36, migration 0030, BENCHMARKS.md).
    ///
    /// - Parameter carvingFirstWaveOf: for a new batch of wave 1 (``batchTargetsQuery(broadcastID:from:before:size:now:)``),
    ///   its broadcast's id (SQL): that broadcast is left out of the probes while it has no later wave. A new batch's
    ///   devices follow the cohort's cursor, and a device's key does not move while a wave 1 that may target it runs
    ///   (``WriteOpen``), so its broadcast has not pushed them: the probe found nothing, one empty probe per device,
    ///   about half of the carve's time (12.2 → 6.3 ms a batch of 1,000 at 1,000,000 devices, issue 49). A later wave
    ///   started meanwhile (waves overlap when a provider was held longer than the interval) may have pushed them: then
    ///   the broadcast is probed.
    static func recentBackgroundPushes(of device: String, since: String, carvingFirstWaveOf broadcast: String? = nil) -> String {
        let carved = broadcast.map {
            " AND NOT (s.id = \($0) AND NOT EXISTS (SELECT 1 FROM broadcast_waves w WHERE w.broadcast_id = \($0) AND w.wave > 1))"
        }
        return
            "ARRAY(SELECT x.sent_at FROM unnest(ARRAY(SELECT s.id FROM (SELECT id, edition_id, environment FROM broadcasts WHERE state IN ('planned', 'running') UNION ALL SELECT id, edition_id, environment FROM broadcasts WHERE finished_at > \(since) - interval '1 hour') s JOIN editions e ON e.id = s.edition_id JOIN publications p ON p.id = e.publication_id WHERE p.app_id = $1 AND s.environment = $2\(carved ?? ""))) AS s(id) CROSS JOIN LATERAL (SELECT x.sent_at FROM deliveries x WHERE x.device_id = \(device) AND x.broadcast_id = s.id AND x.background AND x.sent_at > \(since) AND x.outcome <> 'notSent' OFFSET 0) x)"
    }

    /// Whether the device (`device`: its id; `asked`: its `notify_when_ready AND alerts_authorized`) may get the ready
    /// alert in this batch: it asked, the wave is a follow-up (wave 1 carries none; with the wave a bind of a custom
    /// plan, wave 1 folds the probe away), and no alert of the edition reached it yet (the ledger's non-background rows,
    /// any outcome: the alert wave's condition). Waves may overlap (a provider held through wave 2 sends it after wave 3
    /// was counted), and each of two follow-ups past the ready alerts' start would otherwise tell the reader again
    /// (found by the simulation, seeds 4210 and 5092).
    static func readyAlertAsked(device: String, asked: String) -> String {
        "(\(asked) AND $5 > 1 AND NOT EXISTS (SELECT 1 FROM broadcasts xb CROSS JOIN LATERAL (SELECT 1 FROM deliveries x WHERE x.device_id = \(device) AND x.broadcast_id = xb.id AND NOT x.background OFFSET 0) x WHERE xb.edition_id = $4 OFFSET 0))"
    }

    /// A new batch read in one statement, one pass over the index: at most `size` devices of the audience from key
    /// `from` on (before `before`), plus the devices sharing the last one's key (a batch holds every device up to and
    /// including its last key), each with what sending it needs, in send order (cohort key, then id): `id, cohort_key,
    /// token, provider, platform, tier, recent background pushes, notify` rows, the pushes since `now - 3600`
    /// (``BroadcastRepository/targetsQuery(_:firstKey:lastKey:now:leavingOutDeliveredIn:members:)``'s columns after the
    /// key). Fewer than `size` rows: the batch runs to the end of the cohort.
    ///
    /// The index scan stops after `size` devices because they are taken in key order alone: ordered by key and id, the
    /// planner sorted the whole cohort's range for every batch (106 ms a batch of 1,000 at 1,000,000 devices, against
    /// 11 ms). The devices sharing the last key are then read by that key, and the batch sorted by key and id.
    ///
    /// The carve of a batch read its extent (its last key and size) and the worker then read the same devices again for
    /// their targets: two reads of every device of wave 1, 35–37 % of PostgreSQL's statement time per
    /// delivery at 1,000,000 devices (issue 36). The batch a worker carves is the one it sends next, so the carve reads
    /// its targets; a batch taken over or given back is read again when it is sent.
    func batchTargetsQuery(broadcastID: UUID, from firstKey: Int64, before endKey: Int64, size: Int, now: Date) -> PostgresQuery {
        let columns = "d.id, d.cohort_key, d.token, d.provider, d.platform, d.tier, d.notify_when_ready AND d.alerts_authorized AS notify"
        // Wave 1 carries no ready alert: its column is false without the probe (``readyAlertAsked(device:asked:)``).
        let readyAlert = isFirstWave ? "false" : Self.readyAlertAsked(device: "b.id", asked: "b.notify")
        return query(
            """
            WITH first AS MATERIALIZED (
                SELECT \(columns) FROM devices d WHERE {audience} AND d.cohort_key >= $9 AND d.cohort_key < $10
                ORDER BY d.cohort_key LIMIT $11
            ), tied AS (
                SELECT max(cohort_key) AS k FROM first HAVING count(*) = $11
            ), batch AS (
                SELECT * FROM first
                UNION ALL
                SELECT \(columns) FROM tied JOIN devices d ON d.cohort_key = tied.k
                WHERE {audience} AND NOT EXISTS (SELECT 1 FROM first f WHERE f.id = d.id)
            )
            SELECT b.id, b.cohort_key::bigint, b.token, b.provider, b.platform, b.tier,
                \(Self.recentBackgroundPushes(of: "b.id", since: "$12", carvingFirstWaveOf: isFirstWave ? "$13" : nil)),
                \(readyAlert)
            FROM batch b ORDER BY b.cohort_key, b.id
            """,
            condition: isFirstWave ? Self.firstWaveCondition : Self.condition
        ) {
            $0.append(firstKey)
            $0.append(endKey)
            $0.append(Int64(size))
            $0.append(now.addingTimeInterval(-3600))
            if isFirstWave { $0.append(broadcastID) }
        }
    }

    // MARK: Recorded members (migration 0021)

    /// Drops the members recorded by an earlier count of this wave of `broadcastID`, unless the wave has started
    /// (its batches are carved from them).
    func forgetMembersQuery(broadcastID: UUID) -> PostgresQuery {
        """
        DELETE FROM wave_members WHERE broadcast_id = \(broadcastID) AND wave = \(Int16(wave))
            AND NOT EXISTS (SELECT 1 FROM broadcast_waves w WHERE w.broadcast_id = \(broadcastID) AND w.wave = \(Int16(wave)))
        """
    }

    /// Writes the audience into `wave_members` as wave `wave` of `broadcastID` and returns it counted per cohort
    /// (`cohort, count` rows, empty cohorts absent), in one read of the audience: the count a later wave is
    /// planned from. Nothing is written once the wave has started.
    func recordMembersQuery(broadcastID: UUID, cohorts: Int) -> PostgresQuery {
        query(
            """
            WITH recorded AS (
                INSERT INTO wave_members (broadcast_id, wave, cohort_key, device_id)
                SELECT $9, $5, d.cohort_key, d.id FROM devices d WHERE {audience}
                    AND NOT EXISTS (SELECT 1 FROM broadcast_waves w WHERE w.broadcast_id = $9 AND w.wave = $5)
                RETURNING cohort_key)
            SELECT \(StoredCohortKey.cohortSQL(column: "cohort_key", count: "$10")), count(*) FROM recorded GROUP BY 1
            """
        ) {
            $0.append(broadcastID)
            $0.append(cohorts)
        }
    }

    /// A new batch's extent (the stored key of its last device and how many devices it holds, as
    /// ``batchTargetsQuery(broadcastID:from:before:size:now:)`` finds them) over the members recorded for wave `wave` of `broadcastID`.
    static func memberExtentQuery(broadcastID: UUID, wave: Int, from firstKey: Int64, before endKey: Int64, size: Int) -> PostgresQuery {
        var binds = PostgresBindings(capacity: 5)
        binds.append(broadcastID)
        binds.append(Int16(wave))
        binds.append(firstKey)
        binds.append(endKey)
        binds.append(Int64(size))
        return PostgresQuery(
            unsafeSQL: """
                WITH first AS (
                    SELECT cohort_key AS k FROM wave_members
                    WHERE broadcast_id = $1 AND wave = $2 AND cohort_key >= $3 AND cohort_key < $4
                    ORDER BY cohort_key LIMIT $5
                ), found AS (SELECT count(*) AS n, max(k) AS last FROM first)
                SELECT CASE WHEN found.n < $5 THEN $4 - 1 ELSE found.last END,
                    CASE WHEN found.n < $5 THEN found.n
                        ELSE found.n - (SELECT count(*) FROM first WHERE k = found.last)
                            + (SELECT count(*) FROM wave_members WHERE broadcast_id = $1 AND wave = $2 AND cohort_key = found.last) END
                FROM found
                """,
            binds: binds
        )
    }

    /// The audience counted per cohort when split into `cohorts`: `cohort, count, FCM count` rows, empty cohorts
    /// absent. The FCM count sizes the plan against the project's quota; the provider is a bind, as everywhere the
    /// worker's statements meet one.
    func cohortCountsQuery(cohorts: Int) -> PostgresQuery {
        query(
            """
            SELECT \(StoredCohortKey.cohortSQL(column: "d.cohort_key", count: "$9")), count(*), count(*) FILTER (WHERE d.provider = $10)
            FROM devices d WHERE {audience} GROUP BY 1
            """
        ) {
            $0.append(cohorts)
            $0.append(PushProvider.fcm.storageCode)
        }
    }
}
