import Foundation
import PaperboyCore
import PostgresNIO

/// Recording several receipts in one statement: ``RecordReceipt`` for each, row by row (arrays unnested with their
/// positions), so that receipts arriving together share one round trip, one plan execution and one commit
/// (``ReceiptBatcher``). In a morning two thirds of the fleet report within minutes of their push, and one statement per
/// receipt cost PostgreSQL about twice the statement's own work in protocol and wake-ups (issue 36).
///
/// Each receipt's answer is the one ``RecordReceipt`` gives: its device (nil: none with the token), whether the edition
/// is the app's, and the receipt inserted or upgraded. Two receipts of one batch for the same device and edition: the
/// first (by position) is written, the second finds nothing written for it and reads what is stored, as a second
/// request does. The rows are inserted in device order, so two batches running at once lock the same rows in the same
/// order (no deadlock).
struct RecordReceipts: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::uuid[], $5::text[], $6::bigint[], $7::float8[],
                $8::smallint[], $9::smallint[], $10::smallint[], $11::smallint[], $12::smallint[], $13::integer[])
                WITH ORDINALITY AS u(app_id, apns, fcm, edition_id, result, bytes, seconds,
                    network, charging, low_power_mode, background_refresh, wave, seconds_from_push, i)
        ), found AS (
            SELECT u.*, device.id AS device_id, device.provider,
                EXISTS (SELECT 1 FROM editions e JOIN publications p ON p.id = e.publication_id
                    WHERE e.id = u.edition_id AND p.app_id = u.app_id) AS edition_ok
            FROM input u
            LEFT JOIN LATERAL (SELECT d.id, d.provider FROM devices d
                WHERE d.app_id = u.app_id AND ((d.provider = 0 AND d.token = u.apns) OR (d.provider = 1 AND d.token = u.fcm))
                ORDER BY d.updated_at DESC LIMIT 1) device ON true
        ), first AS (
            SELECT DISTINCT ON (device_id, edition_id) * FROM found
            WHERE device_id IS NOT NULL AND edition_ok
            ORDER BY device_id, edition_id, i
        ), upsert AS (
            INSERT INTO receipts (
                device_id, edition_id, result, bytes, seconds,
                network, charging, low_power_mode, background_refresh, wave, seconds_from_push, provider
            )
            SELECT device_id, edition_id, result, bytes, seconds, nullif(network, -1),
                CASE charging WHEN -1 THEN NULL ELSE charging = 1 END,
                CASE low_power_mode WHEN -1 THEN NULL ELSE low_power_mode = 1 END,
                CASE background_refresh WHEN -1 THEN NULL ELSE background_refresh = 1 END,
                nullif(wave, -1), nullif(seconds_from_push, -1), provider
            FROM first ORDER BY device_id, edition_id
            \(RecordReceipt.keepOrUpgrade)
            RETURNING device_id, edition_id, result, bytes, seconds, received_at, (xmax = 0) AS created,
                network, charging, low_power_mode, background_refresh, wave, seconds_from_push
        )
        SELECT f.i, f.device_id, f.edition_ok,
            u.result, u.bytes, u.seconds, u.received_at, u.created,
            u.network, u.charging, u.low_power_mode, u.background_refresh, u.wave, u.seconds_from_push
        FROM found f
        LEFT JOIN first w ON w.device_id = f.device_id AND w.edition_id = f.edition_id AND w.i = f.i
        LEFT JOIN upsert u ON w.i IS NOT NULL AND u.device_id = f.device_id AND u.edition_id = f.edition_id
        ORDER BY f.i
        """

    static let bindingDataTypes: [PostgresDataType] = [
        .int8Array, .byteaArray, .byteaArray, .uuidArray, .textArray, .int8Array, .float8Array,
        .int2Array, .int2Array, .int2Array, .int2Array, .int2Array, .int4Array,
    ]

    /// The receipt's position in the batch (from 1), then what ``RecordReceipt/Row`` holds.
    typealias Row = (Int64, Int64?, Bool, String?, Int64?, Double?, Date?, Bool?, Int16?, Bool?, Bool?, Bool?, Int16?, Int32?)

    let receipts: [RecordReceipt]

    func makeBindings() -> PostgresBindings {
        /// A context value absent from the report: -1, NULL again in the statement (stored values are never negative:
        /// ``WakeContext/validate()``, the network's codes).
        func flag(_ value: Bool?) -> Int16 { value.map { $0 ? 1 : 0 } ?? -1 }
        var bindings = PostgresBindings(capacity: Self.bindingDataTypes.count)
        bindings.append(receipts.map { Int64($0.appID) })
        bindings.append(receipts.map(\.lookup.apns))
        bindings.append(receipts.map(\.lookup.fcm))
        bindings.append(receipts.map(\.report.editionID))
        bindings.append(receipts.map(\.report.result.rawValue))
        bindings.append(receipts.map(\.report.bytes))
        bindings.append(receipts.map(\.report.seconds))
        bindings.append(receipts.map { $0.report.context.network?.storageCode ?? -1 })
        bindings.append(receipts.map { flag($0.report.context.charging) })
        bindings.append(receipts.map { flag($0.report.context.lowPowerMode) })
        bindings.append(receipts.map { flag($0.report.context.backgroundRefresh) })
        bindings.append(receipts.map { $0.report.context.wave.map { Int16(clamping: $0) } ?? -1 })
        bindings.append(receipts.map { $0.report.context.secondsFromPush.map { Int32(clamping: $0) } ?? -1 })
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
