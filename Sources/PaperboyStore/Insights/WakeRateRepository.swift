import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Wake rates from the ledger: which accepted background pushes of a window led to a receipt
/// (`paperboy insights wake-rates`, `GET /v1/insights/wake-rates`). The grouping policy is ``WakeRates``; this
/// counts.
public struct WakeRateRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The longest window asked for, in days. The ledger keeps deliveries and receipts for the retention (7 days
    /// by default, `--retention`): a longer window reads what is left.
    public static let maxDays = 90

    /// The wake rates of the broadcasts created in the `days` before `now`.
    ///
    /// A push counts when it is an accepted background push (the alert wave is not a wake-up the app gets to
    /// choose). It woke the app when the device's receipt for the edition names its wave (`wave`, echoed from
    /// the payload), or, for a receipt without one, when it is the device's last accepted push of the broadcast
    /// sent before the receipt arrived (so a receipt after the alert wave counts for no background push).
    ///
    /// When the window holds more than `samplePushes` accepted background pushes (by the broadcasts' counters),
    /// it counts the pushes of a sample of the devices instead (``WakeRates/samplePlan(windowPushes:target:maxDeviceID:rangeCount:)``),
    /// so that the report's cost stays bounded whatever the fleet; the report says so (``WakeRates/sample``).
    ///
    /// - Parameters:
    ///   - publication: a publication's slug; nil for every publication (of `appID`, when given).
    ///   - appID: the app, when several have a publication by that slug.
    ///   - samplePushes: about how many pushes to count at most; nil to count every push of the window.
    /// - Throws: `StoreError`: invalid naming `days` outside 1…``maxDays``; not found naming `publication` or
    ///   `app`; invalid naming `app` when several apps have the publication.
    public func wakeRates(
        publication: String?,
        appID: Int?,
        days: Int,
        now: Date,
        samplePushes: Int? = WakeRates.defaultSamplePushes,
        minimumPushes: Int = WakeRates.defaultMinimumPushes,
        logger: Logger
    ) async throws -> WakeRates {
        guard (1...Self.maxDays).contains(days) else {
            throw StoreError(code: .invalid, field: "days", message: "days must be a whole number from 1 to \(Self.maxDays)")
        }
        let publications = PublicationRepository(client: client)
        var publicationIDs: [Int32]?
        if let publication {
            let resolved = try await publications.resolve(slug: publication, appID: appID, logger: logger)
            publicationIDs = [Int32(resolved.id)]
        } else if let appID {
            let found = try await publications.list(appID: appID, logger: logger)
            guard !found.isEmpty else { throw StoreError(code: .notFound, field: "app", message: "app \(appID) has no publications") }
            publicationIDs = found.map { Int32($0.id) }
        }
        let from = now.addingTimeInterval(-Double(days) * 86_400)
        let plan = try await samplePlan(
            Self.windowPushesQuery(publicationIDs: publicationIDs, from: from, to: now),
            target: samplePushes,
            logger: logger
        )
        let rows = try await client.query(
            Self.countsQuery(publicationIDs: publicationIDs, from: from, to: now, sample: plan?.ranges),
            logger: logger
        )
        typealias Row = (String, Int16?, Int16?, String?, String?, Int16?, Bool?, Bool?, Bool?, Int32?, Int, Int)
        var total = (pushes: 0, wakes: 0)
        var counts: [WakeRates.Count] = []
        for try await row in rows.decode(Row.self) {
            let (dimension, wave, platform, model, osVersion, network, charging, lowPowerMode, backgroundRefresh, hour, pushes, wakes) = row
            let devicePlatform = platform.map(DevicePlatform.init(storageCode:))
            let key: (WakeRates.Dimension, String)
            switch dimension {
            case "total":
                total = (pushes, wakes)
                continue
            case "wave": key = (.wave, wave.map { "\($0)" } ?? WakeRates.unknownKey)
            case "platform": key = (.platform, devicePlatform?.rawValue ?? WakeRates.unknownKey)
            case "modelFamily": key = (.modelFamily, WakeRates.modelFamily(model))
            case "osMajor": key = (.osMajor, WakeRates.osMajor(platform: devicePlatform, version: osVersion))
            case "network": key = (.network, network.flatMap(WakeContext.Network.init(storageCode:))?.rawValue ?? WakeRates.unknownKey)
            case "charging": key = (.charging, WakeRates.flagKey(charging))
            case "lowPowerMode": key = (.lowPowerMode, WakeRates.flagKey(lowPowerMode))
            case "backgroundRefresh": key = (.backgroundRefresh, WakeRates.flagKey(backgroundRefresh))
            default: key = (.localHour, WakeRates.hourKey(hour.map(Int.init)))
            }
            counts.append(WakeRates.Count(key.0, key.1, pushes: pushes, wakes: wakes))
        }
        return WakeRates(
            publication: publication,
            days: days,
            from: from,
            to: now,
            total: total,
            counts: counts,
            minimumPushes: minimumPushes,
            sample: plan?.sample
        )
    }

    /// The device ids to read for a window whose accepted background pushes `windowPushes` counts, or nil to
    /// read every push.
    func samplePlan(_ windowPushes: PostgresQuery, target: Int?, logger: Logger) async throws -> WakeRates.SamplePlan? {
        guard let target else { return nil }
        var pushes = 0
        for try await count in try await client.query(windowPushes, logger: logger).decode(Int.self) { pushes = count }
        guard pushes > target else { return nil }
        var maxDeviceID: Int64 = 0
        for try await id in try await client.query(Self.maxDeviceIDQuery, logger: logger).decode(Int64.self) { maxDeviceID = id }
        return WakeRates.samplePlan(windowPushes: pushes, target: target, maxDeviceID: maxDeviceID)
    }

    /// The highest device id, by the primary key.
    static let maxDeviceIDQuery: PostgresQuery = "SELECT coalesce(max(id), 0)::bigint FROM devices"

    /// The accepted background pushes of the window's broadcasts, from their cohorts' counters (a few rows per
    /// broadcast, by `broadcasts_newest` and the cohorts' primary key). A broadcast whose deliveries the ledger
    /// no longer keeps (older than the retention: its waves and cohorts stay) counts none: there is nothing of
    /// it to read.
    static func windowPushesQuery(publicationIDs: [Int32]?, from: Date, to: Date) -> PostgresQuery {
        """
        SELECT coalesce(sum(c.accepted), 0)::bigint
        FROM broadcasts b
        JOIN editions e ON e.id = b.edition_id
        JOIN broadcast_waves v ON v.broadcast_id = b.id AND v.kind = 'background'
        JOIN broadcast_cohorts c ON c.broadcast_id = b.id AND c.wave = v.wave
        WHERE b.created_at >= \(from) AND b.created_at < \(to)
            AND (\(publicationIDs)::integer[] IS NULL OR e.publication_id = ANY(\(publicationIDs)::integer[]))
            AND EXISTS (SELECT 1 FROM deliveries x WHERE x.broadcast_id = b.id)
        """
    }

    /// One broadcast's accepted background pushes, from its cohorts' counters; none once the ledger no longer
    /// keeps its deliveries.
    static func broadcastPushesQuery(broadcastID: UUID) -> PostgresQuery {
        """
        SELECT coalesce(sum(c.accepted), 0)::bigint
        FROM broadcast_waves v JOIN broadcast_cohorts c ON c.broadcast_id = v.broadcast_id AND c.wave = v.wave
        WHERE v.broadcast_id = \(broadcastID) AND v.kind = 'background'
            AND EXISTS (SELECT 1 FROM deliveries x WHERE x.broadcast_id = v.broadcast_id)
        """
    }

    /// The sampled id ranges' first and last ids, bound as two arrays that every counting statement unnests as
    /// the relation `s (lo, hi)`; a statement reads it only when it samples (``pushes(ofBroadcast:sampled:)``).
    static func bounds(_ ranges: [ClosedRange<Int64>]?) -> (lows: [Int64], highs: [Int64]) {
        ((ranges ?? []).map(\.lowerBound), (ranges ?? []).map(\.upperBound))
    }

    /// The accepted background pushes of the broadcast `broadcast` (an alias with `id`), as a subquery for a
    /// lateral join: all of them by `deliveries_by_broadcast`, or the sampled devices' by the deliveries' primary
    /// key (device, broadcast), one index range per id range of `s`. `OFFSET 0` keeps the lookup per broadcast:
    /// merged into the join, the planner would read the whole ledger with a hash join once the window holds most
    /// of it.
    static func pushes(ofBroadcast broadcast: String, sampled: Bool) -> String {
        if sampled {
            return """
                SELECT x.device_id, x.broadcast_id, x.wave, x.sent_at FROM s
                JOIN deliveries x ON x.device_id BETWEEN s.lo AND s.hi AND x.broadcast_id = \(broadcast).id
                WHERE x.background AND x.outcome = 'accepted'
                OFFSET 0
                """
        }
        return """
            SELECT x.device_id, x.broadcast_id, x.wave, x.sent_at FROM deliveries x
            WHERE x.broadcast_id = \(broadcast).id AND x.background AND x.outcome = 'accepted'
            OFFSET 0
            """
    }

    /// Whether push `x` (a row of `deliveries`) woke the app, given `r`, the device's receipt for the edition
    /// (`wave`, `received_at`; NULL without one): the receipt names its wave, or, without a wave, `x` is the
    /// device's last accepted push of the broadcast before the receipt (the deliveries' primary key). A receipt
    /// that followed the alert wave counts for no background push.
    static let woke = """
        CASE
            WHEN r.received_at IS NULL THEN false
            WHEN r.wave IS NOT NULL THEN r.wave = x.wave
            ELSE coalesce(x.wave = (
                SELECT max(y.wave) FROM deliveries y
                WHERE y.device_id = x.device_id AND y.broadcast_id = x.broadcast_id AND y.outcome = 'accepted'
                    AND y.sent_at <= r.received_at
            ), false)
        END
        """

    /// One broadcast's wake rates by wave, for its report (`paperboy broadcast status` once it has ended): the
    /// same counting as ``wakeRates(publication:appID:days:now:samplePushes:minimumPushes:logger:)``, the same grouping.
    /// Sampled as the window's report is, when the broadcast accepted more than `samplePushes` background pushes.
    public func waveRates(
        broadcastID: UUID,
        samplePushes: Int? = WakeRates.defaultSamplePushes,
        minimumPushes: Int = WakeRates.defaultMinimumPushes,
        logger: Logger
    ) async throws -> (waves: WakeRates.Breakdown, sample: WakeRates.Sample?) {
        let plan = try await samplePlan(Self.broadcastPushesQuery(broadcastID: broadcastID), target: samplePushes, logger: logger)
        let rows = try await client.query(Self.waveQuery(broadcastID: broadcastID, sample: plan?.ranges), logger: logger)
        var counts: [WakeRates.Count] = []
        for try await (wave, pushes, wakes) in rows.decode((Int16, Int, Int).self) {
            counts.append(WakeRates.Count(.wave, "\(wave)", pushes: pushes, wakes: wakes))
        }
        return (WakeRates.breakdown(.wave, counts, minimumPushes: minimumPushes), plan?.sample)
    }

    /// A broadcast's pushes (``pushes(ofBroadcast:sampled:)``), their receipts by primary key.
    static func waveQuery(broadcastID: UUID, sample: [ClosedRange<Int64>]? = nil) -> PostgresQuery {
        let (lows, highs) = bounds(sample)
        return """
            WITH s AS (SELECT * FROM unnest(\(lows)::bigint[], \(highs)::bigint[]) s (lo, hi))
            SELECT x.wave, count(*), count(*) FILTER (WHERE \(unescaped: Self.woke))
            FROM broadcasts b
            CROSS JOIN LATERAL (
                \(unescaped: pushes(ofBroadcast: "b", sampled: sample != nil))
            ) x
            LEFT JOIN LATERAL (
                SELECT r.wave, r.received_at FROM receipts r WHERE r.device_id = x.device_id AND r.edition_id = b.edition_id LIMIT 1
            ) r ON true
            WHERE b.id = \(broadcastID)
            GROUP BY x.wave
            """
    }

    /// The counts per dimension (and in all) in one pass over the window's pushes. The window's broadcasts are
    /// materialized so that each one's previous edition is looked up once, not once per push (at 1 M devices
    /// that halved the time); counting by every dimension at once first was slower (a sort on wide keys).
    ///
    /// The path, for `EXPLAIN`: the window's broadcasts by `broadcasts_newest` (created_at); each broadcast's
    /// pushes (``pushes(ofBroadcast:sampled:)``: by `deliveries_by_broadcast`, or sampled by the deliveries'
    /// primary key); per push, its device by primary key, and its receipt for the edition and for the publication's previous
    /// edition by the receipts' primary key (device, edition) (`LIMIT 1` keeps these per push too). A receipt
    /// without a wave is matched to the last push before it with the deliveries' primary key (device,
    /// broadcast). Nothing reads a big table outside the window.
    ///
    /// The local hour needs a time zone PostgreSQL knows (`pg_timezone_names`); another is counted as
    /// `unknown` rather than failing the query.
    static func countsQuery(publicationIDs: [Int32]?, from: Date, to: Date, sample: [ClosedRange<Int64>]? = nil) -> PostgresQuery {
        let (lows, highs) = bounds(sample)
        return """
            WITH s AS (SELECT * FROM unnest(\(lows)::bigint[], \(highs)::bigint[]) s (lo, hi)),
            w AS MATERIALIZED (
                SELECT b.id, b.edition_id,
                    (SELECT p.id FROM editions p WHERE p.publication_id = e.publication_id AND p.issue_date < e.issue_date
                     ORDER BY p.issue_date DESC LIMIT 1) AS previous_edition
                FROM broadcasts b JOIN editions e ON e.id = b.edition_id
                WHERE b.created_at >= \(from) AND b.created_at < \(to)
                    AND (\(publicationIDs)::integer[] IS NULL OR e.publication_id = ANY(\(publicationIDs)::integer[]))
            ), c AS (
                SELECT x.wave, dev.platform, dev.model, dev.os_version,
                    CASE WHEN z.name IS NOT NULL THEN extract(hour FROM x.sent_at AT TIME ZONE dev.time_zone)::integer END AS local_hour,
                    prev.network, prev.charging, prev.low_power_mode, prev.background_refresh,
                    \(unescaped: Self.woke) AS woke
                FROM w
                CROSS JOIN LATERAL (
                    \(unescaped: pushes(ofBroadcast: "w", sampled: sample != nil))
                ) x
                CROSS JOIN LATERAL (
                    SELECT d.platform, d.model, d.os_version, d.time_zone FROM devices d WHERE d.id = x.device_id LIMIT 1
                ) dev
                LEFT JOIN LATERAL (
                    SELECT r.wave, r.received_at FROM receipts r WHERE r.device_id = x.device_id AND r.edition_id = w.edition_id LIMIT 1
                ) r ON true
                LEFT JOIN LATERAL (
                    SELECT q.network, q.charging, q.low_power_mode, q.background_refresh FROM receipts q
                    WHERE q.device_id = x.device_id AND q.edition_id = w.previous_edition LIMIT 1
                ) prev ON true
                LEFT JOIN (SELECT name FROM pg_timezone_names) z ON z.name = dev.time_zone
            )
            SELECT
                CASE
                    WHEN GROUPING(c.wave) = 0 THEN 'wave'
                    WHEN GROUPING(c.os_version) = 0 THEN 'osMajor'
                    WHEN GROUPING(c.platform) = 0 THEN 'platform'
                    WHEN GROUPING(c.model) = 0 THEN 'modelFamily'
                    WHEN GROUPING(c.network) = 0 THEN 'network'
                    WHEN GROUPING(c.charging) = 0 THEN 'charging'
                    WHEN GROUPING(c.low_power_mode) = 0 THEN 'lowPowerMode'
                    WHEN GROUPING(c.background_refresh) = 0 THEN 'backgroundRefresh'
                    WHEN GROUPING(c.local_hour) = 0 THEN 'localHour'
                    ELSE 'total'
                END,
                c.wave, c.platform, c.model, c.os_version, c.network, c.charging, c.low_power_mode, c.background_refresh, c.local_hour,
                count(*), count(*) FILTER (WHERE c.woke)
            FROM c
            GROUP BY GROUPING SETS (
                (), (c.wave), (c.platform), (c.model), (c.platform, c.os_version), (c.network), (c.charging), (c.low_power_mode),
                (c.background_refresh), (c.local_hour)
            )
            """
    }
}
