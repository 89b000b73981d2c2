import Foundation
import PaperboyCore
import PostgresNIO

/// Recording a receipt, one statement: find the device and the edition of the app, insert, or upgrade a failed
/// receipt (with the context the new report has). `xmax = 0` tells an inserted row from an updated one. The receipt
/// keeps its device's provider (migration 0038), which the receipt tally reads instead of the device.
///
/// A prepared statement: each connection plans it once, not for every receipt. In a morning the receipts are the
/// database's largest load (two thirds of the fleet report within minutes of their push), and planning this
/// statement was most of its cost: pgbench ran it 2,800 times a second with the extended protocol (planned each
/// time) and 8,800 prepared, on the same 1,000,000-device database (BENCHMARKS.md). The plan a connection reuses
/// is PostgreSQL's generic plan, which `RequestPlanTests` checks reads no big table sequentially.
struct RecordReceipt: PostgresPreparedStatement {
    static let sql = """
        WITH device AS (
            SELECT id, provider FROM devices d
            WHERE d.app_id = $1 AND ((d.provider = 0 AND d.token = $2) OR (d.provider = 1 AND d.token = $3))
            ORDER BY updated_at DESC LIMIT 1
        ), edition AS (
            SELECT e.id FROM editions e JOIN publications p ON p.id = e.publication_id
            WHERE e.id = $4 AND p.app_id = $1
        ), upsert AS (
            INSERT INTO receipts (
                device_id, edition_id, result, bytes, seconds,
                network, charging, low_power_mode, background_refresh, wave, seconds_from_push, provider
            )
            SELECT device.id, edition.id, $5, $6, $7, $8::smallint, $9::boolean, $10::boolean, $11::boolean,
                $12::smallint, $13::integer, device.provider
            FROM device, edition
            \(keepOrUpgrade)
            RETURNING device_id, result, bytes, seconds, received_at, (xmax = 0) AS created,
                network, charging, low_power_mode, background_refresh, wave, seconds_from_push
        )
        SELECT (SELECT id FROM device), EXISTS (SELECT 1 FROM edition),
            u.result, u.bytes, u.seconds, u.received_at, u.created,
            u.network, u.charging, u.low_power_mode, u.background_refresh, u.wave, u.seconds_from_push
        FROM (SELECT 1) one LEFT JOIN upsert u ON true
        """

    /// A receipt for a device and edition that has one already: the stored one is kept, unless it is `failed` and the
    /// new one is not (a retry that succeeded), which replaces it with its context. Shared with ``RecordReceipts``.
    static let keepOrUpgrade = """
        ON CONFLICT (device_id, edition_id) DO UPDATE
            SET result = EXCLUDED.result, bytes = EXCLUDED.bytes, seconds = EXCLUDED.seconds, received_at = now(),
                network = EXCLUDED.network, charging = EXCLUDED.charging, low_power_mode = EXCLUDED.low_power_mode,
                background_refresh = EXCLUDED.background_refresh, wave = EXCLUDED.wave,
                seconds_from_push = EXCLUDED.seconds_from_push, provider = EXCLUDED.provider
            WHERE receipts.result = 'failed' AND EXCLUDED.result <> 'failed'
        """

    /// Stated, not inferred from the first receipt's values: a connection prepares the statement once, and a
    /// first report without a network or a wave would leave those parameters' types to the server.
    static let bindingDataTypes: [PostgresDataType] = [
        .int8, .bytea, .bytea, .uuid, .text, .int8, .float8, .int2, .bool, .bool, .bool, .int2, .int4,
    ]

    /// The device's id (nil: no device with the token), whether the edition is the app's, and the receipt
    /// inserted or upgraded (all nil when one is stored already and was kept).
    typealias Row = (Int64?, Bool, String?, Int64?, Double?, Date?, Bool?, Int16?, Bool?, Bool?, Bool?, Int16?, Int32?)

    let appID: Int
    let lookup: RequestStatements.TokenLookup
    let report: ReceiptReport

    init(appID: Int, candidates: [PushToken], _ report: ReceiptReport) {
        self.appID = appID
        self.lookup = RequestStatements.TokenLookup(candidates)
        self.report = report
    }

    func makeBindings() -> PostgresBindings {
        let context = report.context
        var bindings = PostgresBindings(capacity: Self.bindingDataTypes.count)
        bindings.append(appID)
        bindings.append(lookup.apns)
        bindings.append(lookup.fcm)
        bindings.append(report.editionID)
        bindings.append(report.result.rawValue)
        bindings.append(report.bytes)
        bindings.append(report.seconds)
        bindings.append(context.network?.storageCode)
        bindings.append(context.charging)
        bindings.append(context.lowPowerMode)
        bindings.append(context.backgroundRefresh)
        bindings.append(context.wave.map { Int16(clamping: $0) })
        bindings.append(context.secondsFromPush.map { Int32(clamping: $0) })
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
