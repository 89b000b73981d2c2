import Foundation
import PaperboyCore
import PostgresNIO

/// An open report's first statement: the device by its token, with its habit (migration 0025): one probe of the token
/// index per provider, then the habit's row. Prepared, as every statement an app runs at every foreground: planning
/// would cost more than the reading.
struct ReadDeviceHabit: PostgresPreparedStatement {
    static let sql = """
        SELECT d.id, d.token, d.time_zone, d.cohort_key,
            h.weekday_minute, h.weekday_spread, h.weekday_mornings, h.weekend_minute, h.weekend_spread, h.weekend_mornings,
            h.last_day
        FROM (
            (SELECT * FROM devices WHERE app_id = $1 AND provider = 0 AND token = $2)
            UNION ALL (SELECT * FROM devices WHERE app_id = $1 AND provider = 1 AND token = $3)
            ORDER BY updated_at DESC LIMIT 1) d
        LEFT JOIN device_habits h ON h.device_id = d.id
        """

    static let bindingDataTypes: [PostgresDataType] = [.int8, .bytea, .bytea]

    typealias Row = (Int64, ByteBuffer, String, Int32, Float?, Float?, Int32?, Float?, Float?, Int32?, Int32?)

    let appID: Int
    let lookup: RequestStatements.TokenLookup

    init(appID: Int, candidates: [PushToken]) {
        self.appID = appID
        self.lookup = RequestStatements.TokenLookup(candidates)
    }

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(appID)
        bindings.append(lookup.apns)
        bindings.append(lookup.fcm)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }

    /// The habit a row holds; nil columns are a day type never learned.
    static func habit(_ row: Row) -> ReadingHabit {
        func estimate(_ minute: Float?, _ spread: Float?, _ mornings: Int32?) -> ReadingHabit.Estimate? {
            guard let minute, let spread, let mornings, mornings > 0 else { return nil }
            return ReadingHabit.Estimate(minute: Double(minute), spread: Double(spread), mornings: Int(mornings))
        }
        return ReadingHabit(
            weekday: estimate(row.4, row.5, row.6),
            weekend: estimate(row.7, row.8, row.9),
            lastDay: row.10.map(Int.init)
        )
    }
}

/// An open report's second statement, one round trip whatever it does:
/// - `learned`: writes the habit when the report was the first open of the reader's day (``ReadingHabit/learning(_:)``),
///   unless a concurrent report of the same day wrote it first;
/// - `moved`: moves `devices.cohort_key` to the key the habit asks for, unless a wave 1 that may target the
///   device is planned or being sent (a device whose key moved mid-wave could be skipped by the wave, or sent twice
///   in it); a later report moves it, as the app reports every foreground;
/// - `opened`: the device's first open after each live edition's publication (the newest edition of each
///   publication it subscribes to, published by `now` and before its deadline), counted for that edition's
///   broadcast to the device's environment when the device is one of its targets: held or waiting.
///
/// `$2` is the API's clock (the demo's runs faster); the waiting time is the database's, as receipts' is.
struct WriteOpen: PostgresPreparedStatement {
    static let sql = """
        WITH d AS (
            SELECT id, environment, subscriptions, active, auto_download, cohort_key FROM devices WHERE id = $1
        ), live AS (
            SELECT b.id AS broadcast_id, e.id AS edition_id, b.state,
                NOT EXISTS (SELECT 1 FROM broadcast_waves w WHERE w.broadcast_id = b.id AND w.wave = 1 AND w.finished_at IS NOT NULL)
                    AS first_wave_open
            FROM d CROSS JOIN LATERAL unnest(d.subscriptions) s (publication_id)
            CROSS JOIN LATERAL (
                SELECT e.id, e.deadline FROM editions e WHERE e.publication_id = s.publication_id AND e.published_at <= $2
                ORDER BY e.published_at DESC LIMIT 1) e
            JOIN broadcasts b ON b.edition_id = e.id AND b.environment = d.environment AND b.state <> 'cancelled'
            WHERE e.deadline > $2
        ), learned AS (
            INSERT INTO device_habits AS h (
                device_id, weekday_minute, weekday_spread, weekday_mornings, weekend_minute, weekend_spread, weekend_mornings,
                last_day, cohort_key)
            SELECT $1, $4, $5, $6, $7, $8, $9, $10, $11 WHERE $3
            ON CONFLICT (device_id) DO UPDATE SET
                weekday_minute = excluded.weekday_minute, weekday_spread = excluded.weekday_spread,
                weekday_mornings = excluded.weekday_mornings, weekend_minute = excluded.weekend_minute,
                weekend_spread = excluded.weekend_spread, weekend_mornings = excluded.weekend_mornings,
                last_day = excluded.last_day, cohort_key = excluded.cohort_key
            WHERE h.last_day < excluded.last_day
            RETURNING 1
        ), moved AS (
            UPDATE devices SET cohort_key = $11 FROM d
            WHERE devices.id = d.id AND $11 IS NOT NULL AND d.cohort_key <> $11
                AND NOT EXISTS (SELECT 1 FROM live WHERE live.state IN ('planned', 'running') AND live.first_wave_open)
            RETURNING 1
        ), opened AS (
            INSERT INTO broadcast_opens (broadcast_id, device_id, waiting_since)
            SELECT live.broadcast_id, d.id,
                CASE WHEN EXISTS (
                    SELECT 1 FROM receipts r WHERE r.device_id = d.id AND r.edition_id = live.edition_id AND r.result <> 'failed')
                THEN NULL ELSE now() END
            FROM live, d WHERE d.active AND d.auto_download
            ON CONFLICT DO NOTHING
            RETURNING waiting_since IS NULL AS held
        )
        SELECT (SELECT count(*) FROM learned), (SELECT count(*) FROM moved),
            (SELECT count(*) FROM opened WHERE held), (SELECT count(*) FROM opened WHERE NOT held)
        """

    static let bindingDataTypes: [PostgresDataType] = [
        .int8, .timestamptz, .bool, .float4, .float4, .int4, .float4, .float4, .int4, .int4, .int4,
    ]

    typealias Row = (Int, Int, Int, Int)

    let deviceID: Int64
    let now: Date
    /// The habit to write, when the report taught it something.
    let learned: ReadingHabit?
    /// The stored key the habit asks for; nil while no habit is known.
    let key: Int32?

    func makeBindings() -> PostgresBindings {
        let habit = learned ?? ReadingHabit()
        var bindings = PostgresBindings(capacity: Self.bindingDataTypes.count)
        bindings.append(deviceID)
        bindings.append(now)
        bindings.append(learned != nil)
        bindings.append(habit.weekday.map { Float($0.minute) })
        bindings.append(habit.weekday.map { Float($0.spread) })
        bindings.append(Int32(clamping: habit.weekday?.mornings ?? 0))
        bindings.append(habit.weekend.map { Float($0.minute) })
        bindings.append(habit.weekend.map { Float($0.spread) })
        bindings.append(Int32(clamping: habit.weekend?.mornings ?? 0))
        bindings.append(Int32(clamping: habit.lastDay ?? 0))
        bindings.append(key)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
