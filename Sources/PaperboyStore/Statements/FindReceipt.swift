import Foundation
import PostgresNIO

/// The receipt stored for a device and edition, read when a report found one there and kept it (a report sent again):
/// one probe of the primary key. Prepared, as ``RecordReceipt`` is: planning this read cost about four times its
/// execution (0.215 against 0.056 ms a call, `pg_stat_statements` at 1,000,000 devices, issue 49).
///
/// The edition is a subquery so that a custom plan, made with its value, cannot take the receipts' edition index for
/// an edition newer than the statistics (estimated to have no receipts, it has the morning's): `RequestPlanTests`.
struct FindReceipt: PostgresPreparedStatement {
    static let sql = """
        SELECT result, bytes, seconds, received_at, network, charging, low_power_mode, background_refresh, wave, seconds_from_push
        FROM receipts WHERE device_id = $1 AND edition_id = (SELECT $2::uuid)
        """

    static let bindingDataTypes: [PostgresDataType] = [.int8, .uuid]

    typealias Row = (String, Int64, Double, Date, Int16?, Bool?, Bool?, Bool?, Int16?, Int32?)

    let deviceID: Int64
    let editionID: UUID

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(deviceID)
        bindings.append(editionID)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
