import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Reading habits (migration 0025): what an app's open reports teach, and what they measure.
public struct HabitRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// What an open report did.
    public struct OpenOutcome: Sendable, Equatable {
        /// The report was the first open of the reader's day: the habit learned from it.
        public var learned: Bool
        /// The device's cohort key moved to the one its habit asks for.
        public var moved: Bool
        /// Broadcasts whose edition this open found held, and found missing, as its first open after the edition's
        /// publication (both 0 when no edition is live, or this was not the first open since).
        public var held: Int
        public var waiting: Int
        /// The habit after the report.
        public var habit: ReadingHabit

        public init(learned: Bool, moved: Bool, held: Int, waiting: Int, habit: ReadingHabit) {
            self.learned = learned
            self.moved = moved
            self.held = held
            self.waiting = waiting
            self.habit = habit
        }
    }

    /// Records that the app of the device with this token came to the foreground at `now`: two statements, one
    /// to read the device and its habit, one to write what follows (``WriteOpen``).
    ///
    /// - Throws: `StoreError` (not found) naming `token` when the app has no device with this token.
    /// - Parameter candidates: the tokens the path's text may be (``PushToken/candidates(_:)``).
    public func recordOpen(appID: Int, candidates: [PushToken], now: Date, logger: Logger) async throws -> OpenOutcome {
        var found: ReadDeviceHabit.Row?
        for try await row in try await client.execute(ReadDeviceHabit(appID: appID, candidates: candidates), logger: logger) {
            found = row
        }
        guard let row = found else {
            throw StoreError(code: .notFound, field: "token", message: "no device with this token is registered")
        }
        let habit = ReadDeviceHabit.habit(row)
        let day = ReaderDay(now, timeZone: ReaderDay.timeZone(identifier: row.2))
        let learned = habit.learning(day)
        let current = learned ?? habit
        let tokenKey = DeviceToken.cohortKey(of: Array(buffer: row.1))
        let key = current.cohortKey(after: day, tokenKey: tokenKey, current: StoredCohortKey.key(stored: row.3)).map(StoredCohortKey.stored)
        var written: WriteOpen.Row = (0, 0, 0, 0)
        let statement = WriteOpen(deviceID: row.0, now: now, learned: learned, key: key)
        for try await result in try await client.execute(statement, logger: logger) { written = result }
        return OpenOutcome(learned: written.0 > 0, moved: written.1 > 0, held: written.2, waiting: written.3, habit: current)
    }

    /// Writes learned habits in bulk and moves the devices' keys to the ones they ask for, as a run of open reports
    /// would have (the devices are taken to have their tokens' keys, as seeded): the demo's two weeks of mornings, folded through ``ReadingHabit`` in memory, without two weeks of
    /// requests. Devices not of `appID` are ignored.
    /// - Parameters:
    ///   - habits: each device's token as stored (APNs bytes, FCM text bytes) and its habit; `lastDay` is the day
    ///     the keys are computed after.
    /// - Returns: how many devices' keys moved.
    @discardableResult
    public func seed(appID: Int, habits: [(token: [UInt8], habit: ReadingHabit)], logger: Logger) async throws -> Int {
        var moved = 0
        for chunk in stride(from: 0, to: habits.count, by: 5_000).map({ Array(habits[$0..<min($0 + 5_000, habits.count)]) }) {
            var tokens: [ByteBuffer] = []
            var columns = HabitColumns()
            for (token, habit) in chunk {
                tokens.append(ByteBuffer(bytes: token))
                let lastDay = habit.lastDay ?? 0
                let day = ReaderDay(number: lastDay, minute: 0, isWeekend: false)
                let tokenKey = DeviceToken.cohortKey(of: token)
                columns.append(habit, key: habit.cohortKey(after: day, tokenKey: tokenKey, current: tokenKey).map(StoredCohortKey.stored))
            }
            let rows = try await client.query(
                """
                WITH input AS (
                    SELECT token, nullif(wd_minute, -1) AS wd_minute, nullif(wd_spread, -1) AS wd_spread, wd_mornings,
                        nullif(we_minute, -1) AS we_minute, nullif(we_spread, -1) AS we_spread, we_mornings, last_day,
                        CASE WHEN has_key THEN key END AS key
                    FROM unnest(\(tokens)::bytea[], \(columns.weekdayMinute)::real[], \(columns.weekdaySpread)::real[],
                        \(columns.weekdayMornings)::integer[], \(columns.weekendMinute)::real[], \(columns.weekendSpread)::real[],
                        \(columns.weekendMornings)::integer[], \(columns.lastDay)::integer[], \(columns.key)::integer[], \(columns.hasKey)::boolean[])
                        AS u (token, wd_minute, wd_spread, wd_mornings, we_minute, we_spread, we_mornings, last_day, key, has_key)
                ), matched AS (
                    SELECT d.id, input.* FROM input JOIN devices d ON d.app_id = \(appID) AND d.token = input.token
                ), learned AS (
                    INSERT INTO device_habits AS h (device_id, weekday_minute, weekday_spread, weekday_mornings, weekend_minute,
                        weekend_spread, weekend_mornings, last_day, cohort_key)
                    SELECT id, wd_minute, wd_spread, wd_mornings, we_minute, we_spread, we_mornings, last_day, key FROM matched
                    ON CONFLICT (device_id) DO UPDATE SET
                        weekday_minute = excluded.weekday_minute, weekday_spread = excluded.weekday_spread,
                        weekday_mornings = excluded.weekday_mornings, weekend_minute = excluded.weekend_minute,
                        weekend_spread = excluded.weekend_spread, weekend_mornings = excluded.weekend_mornings,
                        last_day = excluded.last_day, cohort_key = excluded.cohort_key
                ), moved AS (
                    UPDATE devices d SET cohort_key = matched.key FROM matched
                    WHERE d.id = matched.id AND matched.key IS NOT NULL AND d.cohort_key <> matched.key
                    RETURNING 1
                )
                SELECT count(*) FROM moved
                """,
                logger: logger
            )
            for try await count in rows.decode(Int.self) { moved += count }
        }
        return moved
    }

    /// Sets devices' cohort keys to order them by the given minutes of the reader's day (``ReadingHabit/cohortKey(minute:tokenKey:)``),
    /// with no habit stored: the demo's oracle, which knows when each reader opens this morning.
    public func placeByMinute(appID: Int, minutes: [(token: [UInt8], minute: Double)], logger: Logger) async throws {
        for chunk in stride(from: 0, to: minutes.count, by: 5_000).map({ Array(minutes[$0..<min($0 + 5_000, minutes.count)]) }) {
            let tokens = chunk.map { ByteBuffer(bytes: $0.token) }
            let keys = chunk.map {
                StoredCohortKey.stored(ReadingHabit.cohortKey(minute: $0.minute, tokenKey: DeviceToken.cohortKey(of: $0.token)))
            }
            try await client.query(
                """
                UPDATE devices d SET cohort_key = u.key FROM unnest(\(tokens)::bytea[], \(keys)::integer[]) AS u (token, key)
                WHERE d.app_id = \(appID) AND d.token = u.token
                """,
                logger: logger
            )
        }
    }

    /// Whether broadcast `broadcastID`'s targets found its edition when they first opened the app after its
    /// publication (``ReadyAtOpen``), from its ready-at-open tallies: the opens and receipts that arrived up to the
    /// receipt tallies' watermark (2 to 4 s behind while a worker runs; exact once the ended broadcast is recounted).
    public func readyAtOpen(broadcastID: UUID, logger: Logger) async throws -> ReadyAtOpen {
        let rows = try await client.query(RequestStatements.readyAtOpen(broadcastID: broadcastID), logger: logger)
        for try await (ready, notReady, buckets, counts) in rows.decode((Int, Int, [Int], [Int]).self) {
            return ReadyAtOpen(ready: ready, notReady: notReady, waitBuckets: buckets, waitCounts: counts)
        }
        return ReadyAtOpen(ready: 0, notReady: 0, waitBuckets: [], waitCounts: [])
    }

    /// Ready at open of one broadcast, with what it broadcast.
    public struct BroadcastReadiness: Sendable, Encodable {
        public var broadcastID: UUID
        public var appID: Int
        public var publication: String
        public var issueDate: String
        public var environment: APNsEnvironment
        public var createdAt: Date
        public var readyAtOpen: ReadyAtOpen

        enum CodingKeys: String, CodingKey {
            case broadcastID = "broadcastId"
            case appID = "appId"
            case publication, issueDate, environment, createdAt, readyAtOpen
        }
    }

    /// Ready at open of every broadcast created in the last `days` days (of a publication, of an app), oldest first.
    public func readyAtOpen(publication: String?, appID: Int?, days: Int, now: Date, logger: Logger) async throws -> [BroadcastReadiness] {
        let rows = try await client.query(
            RequestStatements.broadcastsForReadiness(publication: publication, appID: appID, since: now.addingTimeInterval(-Double(days) * 86_400)),
            logger: logger
        )
        var result: [BroadcastReadiness] = []
        for try await (id, app, slug, issueDate, environment, createdAt, ready, notReady, buckets, counts) in rows.decode(
            (UUID, Int, String, String, Int16, Date, Int, Int, [Int], [Int]).self
        ) {
            result.append(
                BroadcastReadiness(
                    broadcastID: id,
                    appID: app,
                    publication: slug,
                    issueDate: issueDate,
                    environment: APNsEnvironment(storageCode: environment),
                    createdAt: createdAt,
                    readyAtOpen: ReadyAtOpen(ready: ready, notReady: notReady, waitBuckets: buckets, waitCounts: counts)
                )
            )
        }
        return result
    }

    /// A broadcast's targets counted by cohort, by the minute of the reader's day their key stands for
    /// (``ReadingHabit/minute(ofKey:)``), and by whether the key is their habit's: what ``HabitOrder`` previews.
    public func orderCounts(of audience: WaveAudience, cohorts: Int, logger: Logger) async throws -> [HabitOrder.Count] {
        let rows = try await client.query(audience.habitOrderQuery(cohorts: cohorts), logger: logger)
        var counts: [HabitOrder.Count] = []
        for try await (cohort, minute, habit, devices) in rows.decode((Int, Int, Bool, Int).self) {
            counts.append(HabitOrder.Count(cohort: cohort, minute: minute, habit: habit, devices: devices))
        }
        return counts
    }
}

/// A chunk of habits as the arrays a bulk statement unnests (-1 for a day type never learned, which the statement
/// reads as NULL: arrays are bound without NULLs).
private struct HabitColumns {
    var weekdayMinute: [Float] = []
    var weekdaySpread: [Float] = []
    var weekdayMornings: [Int32] = []
    var weekendMinute: [Float] = []
    var weekendSpread: [Float] = []
    var weekendMornings: [Int32] = []
    var lastDay: [Int32] = []
    var key: [Int32] = []
    var hasKey: [Bool] = []

    mutating func append(_ habit: ReadingHabit, key: Int32?) {
        weekdayMinute.append(habit.weekday.map { Float($0.minute) } ?? -1)
        weekdaySpread.append(habit.weekday.map { Float($0.spread) } ?? -1)
        weekdayMornings.append(Int32(clamping: habit.weekday?.mornings ?? 0))
        weekendMinute.append(habit.weekend.map { Float($0.minute) } ?? -1)
        weekendSpread.append(habit.weekend.map { Float($0.spread) } ?? -1)
        weekendMornings.append(Int32(clamping: habit.weekend?.mornings ?? 0))
        lastDay.append(Int32(clamping: habit.lastDay ?? 0))
        self.key.append(key ?? 0)
        hasKey.append(key != nil)
    }
}
