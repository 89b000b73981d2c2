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
    /// - Parameters:
    ///   - publication: a publication's slug; nil for every publication (of `appID`, when given).
    ///   - appID: the app, when several have a publication by that slug.
    /// - Throws: `StoreError`: invalid naming `days` outside 1…``maxDays``; not found naming `publication` or
    ///   `app`; invalid naming `app` when several apps have the publication.
    public func wakeRates(
        publication: String?,
        appID: Int?,
        days: Int,
        now: Date,
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
        let rows = try await client.query(Self.countsQuery(publicationIDs: publicationIDs, from: from, to: now), logger: logger)
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
            minimumPushes: minimumPushes
        )
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
    /// same counting as ``wakeRates(publication:appID:days:now:minimumPushes:logger:)``, the same grouping.
    public func waveRates(
        broadcastID: UUID,
        minimumPushes: Int = WakeRates.defaultMinimumPushes,
        logger: Logger
    ) async throws -> WakeRates.Breakdown {
        let rows = try await client.query(Self.waveQuery(broadcastID: broadcastID), logger: logger)
        var counts: [WakeRates.Count] = []
        for try await (wave, pushes, wakes) in rows.decode((Int16, Int, Int).self) {
            counts.append(WakeRates.Count(.wave, "\(wave)", pushes: pushes, wakes: wakes))
        }
        return WakeRates.breakdown(.wave, counts, minimumPushes: minimumPushes)
    }

    /// A broadcast's pushes by `deliveries_by_broadcast`, their receipts by primary key.
    static func waveQuery(broadcastID: UUID) -> PostgresQuery {
        """
        SELECT x.wave, count(*), count(*) FILTER (WHERE \(unescaped: Self.woke))
        FROM broadcasts b
        CROSS JOIN LATERAL (
            SELECT x.device_id, x.broadcast_id, x.wave, x.sent_at FROM deliveries x
            WHERE x.broadcast_id = b.id AND x.background AND x.outcome = 'accepted'
            OFFSET 0
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
    /// deliveries by `deliveries_by_broadcast` (`OFFSET 0` keeps that lookup per broadcast: merged into the
    /// join, the planner would read the whole ledger with a hash join once the window holds most of it); per
    /// push, its device by primary key, and its receipt for the edition and for the publication's previous
    /// edition by the receipts' primary key (device, edition) (`LIMIT 1` keeps these per push too). A receipt
    /// without a wave is matched to the last push before it with the deliveries' primary key (device,
    /// broadcast). Nothing reads a big table outside the window.
    ///
    /// The local hour needs a time zone PostgreSQL knows (`pg_timezone_names`); another is counted as
    /// `unknown` rather than failing the query.
    static func countsQuery(publicationIDs: [Int32]?, from: Date, to: Date) -> PostgresQuery {
        """
        WITH w AS MATERIALIZED (
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
                SELECT x.device_id, x.broadcast_id, x.wave, x.sent_at FROM deliveries x
                WHERE x.broadcast_id = w.id AND x.background AND x.outcome = 'accepted'
                OFFSET 0
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
