import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Receipt counts kept as receipts arrive (migration 0019): by edition, and per broadcast by wave, cohort,
/// provider and result, so that a broadcast's status reads a few hundred rows instead of every receipt of its
/// edition (1.8 s + 13.4 s per request at 10 million devices, BENCHMARKS.md).
///
/// The receipt path is not touched: it stays one statement with no trigger and no new index (a counter
/// updated per receipt serializes every receipt of a morning on a handful of rows). Instead the dispatchers
/// ``step(logger:)`` every two seconds: one of them locks the watermark (`FOR UPDATE SKIP LOCKED`, so two steps
/// never count the same receipts), reads the receipts that arrived since it through the `(edition_id,
/// received_at)` index, attributes each to its device's provider (kept on the receipt: migration 0038) and to every
/// broadcast of its edition that delivered to the device (the wave and cohort of the last delivery, as the status has always counted), adds
/// them to the tallies and moves the watermark, in one transaction.
///
/// What is guaranteed:
/// - **No receipt is counted twice, none is left out**, as long as a receipt's statement assigns its
///   transaction id within ``Configuration/lag`` of its start and commits within
///   ``Configuration/writerPatience``: `received_at` is its statement's start, so a step counts only up to the
///   oldest write transaction still open (from `pg_stat_activity`), and never past `now() - lag`.
/// - **An upgrade moves a count**: a `failed` receipt that a retry replaces with `newData` or `noData` is taken
///   out of the cells it was counted in (`receipt_tally_failures` remembers them) and the new result is counted
///   where the device's last delivery is now.
/// - **The edition's counts** (every receipt once, by provider and result) are exact through the watermark.
/// - **A running broadcast's counts per wave and cohort** are its receipts through the watermark (2 to 4 s
///   behind), each counted in the wave that had last reached its device when it was counted. They differ from
///   a full recount in two cases, both fixed by ``recount(broadcastID:now:logger:)``: a `failed` receipt whose
///   device gets a later wave stays in the earlier wave until it is upgraded; a receipt counted before the
///   delivery that prompted it was recorded (the batch still recording 2 s after the app answered) is counted
///   in the previous wave, or not for the broadcast.
/// - **An ended broadcast's counts are exact**: once it has ended and its last batches can no longer record,
///   one worker recounts it from the receipts (the old full query, once: ``recount(broadcastID:now:logger:)``),
///   and from then on its deliveries do not change, so the steps keep it exact as late receipts arrive.
///   `paperboy broadcast status --exact` recounts on demand.
/// - Receipts stored before migration 0019 are counted when their broadcast is recounted.
///
/// **Ready at open** (``ReadyAtOpen``, migration 0041) is counted by the same steps under the same watermark: the first
/// opens stored in the window (`broadcast_opens.opened_at`, the open statement's start), held or not, and the waits
/// that ended in it: a wait ends when both its open and the device's successful receipt for the edition are there,
/// and is counted in the window holding the later of the two (a receipt of the window with an open up to its end, or
/// an open of the window with a receipt before its start: one primary-key probe each). So each wait is counted once,
/// with its length in ``ReadyAtOpen/WaitBuckets``. A recount counts the broadcast's opens again with its receipts.
/// An open of a device erased since stays counted until the broadcast is recounted.
public struct ReceiptTallies: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// How old a receipt must be before a step counts it (the database's clock). A receipt's `received_at` is
        /// its statement's start; the oldest open write transaction bounds the step too, so this only covers a
        /// statement that has started and not yet written.
        public var lag: Duration
        /// A step runs when the watermark is at least `lag + interval` old: every `interval` or so, whichever
        /// worker calls first.
        public var interval: Duration
        /// How long a step waits for a write transaction still open before counting past its start: long
        /// transactions (a migration, a script) must not hold the tallies back for good. A receipt committed later
        /// than this after its start is counted at its broadcast's recount.
        public var writerPatience: Duration
        /// The most of `received_at` one step reads: after workers were stopped for hours, the steps catch up in
        /// pieces of this size instead of one transaction over millions of receipts.
        public var maxWindow: Duration
        /// Editions whose deadline is older than this are not read by the steps (a receipt that late is counted at
        /// a recount); each step probes the index once per younger edition.
        public var editionLookback: Duration

        public init(
            lag: Duration = .seconds(2),
            interval: Duration = .seconds(2),
            writerPatience: Duration = .seconds(60),
            maxWindow: Duration = .seconds(600),
            editionLookback: Duration = .seconds(14 * 86_400)
        ) {
            self.lag = lag
            self.interval = interval
            self.writerPatience = writerPatience
            self.maxWindow = maxWindow
            self.editionLookback = editionLookback
        }
    }

    /// What one step counted.
    public struct Step: Sendable, Equatable {
        /// Receipts counted (new ones and upgrades).
        public var receipts: Int
        /// Of those, upgrades of a counted `failed` receipt.
        public var upgrades: Int
        /// First opens counted for ready at open (``ReadyAtOpen``), and waits for the edition that ended.
        public var opens: Int = 0
        public var waits: Int = 0
        /// The watermark after the step: receipts that arrived up to this instant are counted.
        public var countedThrough: Date
    }

    let client: PostgresClient
    public let configuration: Configuration

    public init(client: PostgresClient, configuration: Configuration = Configuration()) {
        self.client = client
        self.configuration = configuration
    }

    /// Counts the receipts that arrived since the last step, if one is due and no other worker is stepping.
    /// - Returns: what it counted; nil when it did not step (not due, or another worker holds the watermark).
    @discardableResult
    public func step(logger: Logger) async throws -> Step? {
        try await client.transaction(logger: logger) { connection in
            guard let window = try await Self.lock(on: connection, configuration, wait: false, dueOnly: true, logger: logger) else { return nil }
            return try await Self.count(window, on: connection, configuration, logger: logger)
        }
    }

    /// The watermark: receipts that arrived up to this instant are in the tallies.
    public func countedThrough(logger: Logger) async throws -> Date {
        let rows = try await client.query("SELECT counted_through FROM receipt_tally_state", logger: logger)
        for try await date in rows.decode(Date.self) { return date }
        throw UnreadableRow(table: "receipt_tally_state", key: "singleton", column: "counted_through", message: "the row is missing")
    }

    // MARK: - Steps

    /// The window a step counts, as PostgreSQL's text for the two instants (bound back as they came, to the
    /// microsecond: a `Date` in between could move a bound by one).
    struct Window {
        var after: String
        var through: String
    }

    /// Locks the watermark row and computes the window; nil when it is locked by another transaction (with
    /// `wait` false) or, with `dueOnly`, when the watermark is younger than `lag + interval`.
    static func lock(
        on connection: PostgresConnection,
        _ configuration: Configuration,
        wait: Bool,
        dueOnly: Bool,
        logger: Logger
    ) async throws -> Window? {
        let rows = try await connection.query(lockQuery(configuration, wait: wait, dueOnly: dueOnly), logger: logger)
        var window: Window?
        for try await (after, through) in rows.decode((String, String).self) { window = Window(after: after, through: through) }
        return window
    }

    /// Counts `window`'s receipts and moves the watermark to its end (never back), under the lock.
    static func count(_ window: Window, on connection: PostgresConnection, _ configuration: Configuration, logger: Logger) async throws -> Step {
        let rows = try await connection.query(
            stepQuery(after: window.after, through: window.through, lookback: configuration.editionLookback.seconds),
            logger: logger
        )
        var counted = (receipts: 0, upgrades: 0, opens: 0, waits: 0)
        for try await row in rows.decode((Int, Int, Int, Int).self) { counted = row }
        let moved = try await connection.query(
            """
            UPDATE receipt_tally_state SET counted_through = greatest(counted_through, \(window.through)::timestamptz)
            RETURNING counted_through
            """,
            logger: logger
        )
        var through = Date.distantPast
        for try await date in moved.decode(Date.self) { through = date }
        return Step(receipts: counted.receipts, upgrades: counted.upgrades, opens: counted.opens, waits: counted.waits, countedThrough: through)
    }

    /// Locks the watermark and returns it with the end of the next window: `now() - lag`, but before the oldest
    /// write transaction still open (one whose receipt, with `received_at` its start, is not visible yet) unless
    /// it is older than `writerPatience`, and at most `maxWindow` past the watermark. It runs before the step's
    /// count, in a statement of its own, so that a transaction it does not see as open is one the count sees
    /// committed.
    static func lockQuery(_ configuration: Configuration, wait: Bool, dueOnly: Bool) -> PostgresQuery {
        let lag = configuration.lag.seconds
        let due = configuration.lag.seconds + configuration.interval.seconds
        let query: PostgresQuery = """
            SELECT s.counted_through::text, least(
                    now() - make_interval(secs => \(lag)),
                    greatest(
                        coalesce((SELECT min(a.xact_start) FROM pg_stat_activity a
                            WHERE a.datname = current_database() AND a.backend_xid IS NOT NULL AND a.pid <> pg_backend_pid())
                            - interval '1 microsecond', 'infinity'),
                        now() - make_interval(secs => \(configuration.writerPatience.seconds))),
                    s.counted_through + make_interval(secs => \(configuration.maxWindow.seconds)))::text
            FROM receipt_tally_state s
            WHERE NOT \(dueOnly) OR s.counted_through < now() - make_interval(secs => \(due))
            """
        return PostgresQuery(unsafeSQL: query.sql + (wait ? " FOR UPDATE" : " FOR UPDATE SKIP LOCKED"), binds: query.binds)
    }

    /// One step: the receipts of the window (each edition whose deadline is younger than `lookback`, through the
    /// `(edition_id, received_at)` index), their devices' providers, and for every broadcast of the edition the
    /// device's last delivery (primary key probes); a `failed` receipt's cells are remembered, and a receipt that
    /// replaced a remembered one takes its count out of them. Returns the receipts counted and the upgrades.
    /// A receipt's provider is the one it keeps (migration 0038), else (a receipt stored before it) its device's, read
    /// only then: `coalesce` does not evaluate the read when the receipt has one. A receipt stored before 0038 whose
    /// device is gone has none and is not counted, as before. `OFFSET 0` keeps the subquery whole: flattened, the
    /// planner evaluated the `coalesce` twice (in the select list and in the filter), two device reads per such receipt.
    static func stepQuery(after: String, through: String, lookback: Double) -> PostgresQuery {
        """
        WITH taken AS (
            SELECT * FROM (
                SELECT r.device_id, r.edition_id, r.result, r.received_at,
                    coalesce(r.provider, (SELECT d.provider FROM devices d WHERE d.id = r.device_id)) AS provider
                FROM editions e
                JOIN receipts r ON r.edition_id = e.id
                    AND r.received_at > \(after)::timestamptz AND r.received_at <= \(through)::timestamptz
                WHERE e.deadline > \(through)::timestamptz - make_interval(secs => \(lookback))
                OFFSET 0
            ) t WHERE provider IS NOT NULL
        ), reached AS (
            SELECT t.device_id, t.edition_id, t.result, t.provider, b.id AS broadcast_id, last.wave, last.cohort
            FROM taken t
            JOIN broadcasts b ON b.edition_id = t.edition_id
            JOIN LATERAL (
                SELECT x.wave, x.cohort FROM deliveries x
                WHERE x.device_id = t.device_id AND x.broadcast_id = b.id ORDER BY x.wave DESC LIMIT 1
            ) last ON true
        ), upgraded AS (
            DELETE FROM receipt_tally_failures f USING taken t
            WHERE f.edition_id = t.edition_id AND f.device_id = t.device_id AND t.result <> 'failed'
            RETURNING f.edition_id, f.broadcast_id, f.wave, f.cohort, f.provider
        ), remembered AS (
            INSERT INTO receipt_tally_failures AS f (edition_id, device_id, broadcast_id, wave, cohort, provider)
            SELECT edition_id, device_id, NULL, 0, 0, provider FROM taken WHERE result = 'failed'
            UNION ALL
            SELECT edition_id, device_id, broadcast_id, wave, cohort, provider FROM reached WHERE result = 'failed'
            ON CONFLICT (edition_id, device_id, broadcast_id) DO UPDATE
                SET wave = EXCLUDED.wave, cohort = EXCLUDED.cohort, provider = EXCLUDED.provider
        ), changes AS (
            SELECT edition_id, NULL::uuid AS broadcast_id, 0::smallint AS wave, 0 AS cohort, provider, result, 1 AS n FROM taken
            UNION ALL
            SELECT edition_id, broadcast_id, wave, cohort, provider, result, 1 FROM reached
            UNION ALL
            SELECT edition_id, broadcast_id, wave, cohort, provider, 'failed', -1 FROM upgraded
        ), applied AS (
            INSERT INTO receipt_tallies AS tally (edition_id, broadcast_id, wave, cohort, provider, result, count)
            SELECT edition_id, broadcast_id, wave, cohort, provider, result, sum(n) FROM changes GROUP BY 1, 2, 3, 4, 5, 6
            ON CONFLICT (edition_id, broadcast_id, wave, cohort, provider, result) DO UPDATE SET count = tally.count + EXCLUDED.count
        ), opened AS (
            SELECT o.broadcast_id, o.device_id, o.waiting_since FROM broadcast_opens o
            WHERE o.opened_at > \(after)::timestamptz AND o.opened_at <= \(through)::timestamptz
        ), waits AS (
            SELECT o.broadcast_id, extract(epoch FROM t.received_at - o.waiting_since)::float8 AS wait
            FROM taken t
            JOIN broadcasts b ON b.edition_id = t.edition_id
            JOIN broadcast_opens o ON o.broadcast_id = b.id AND o.device_id = t.device_id
            WHERE t.result <> 'failed' AND o.waiting_since IS NOT NULL
                AND (o.opened_at IS NULL OR o.opened_at <= \(through)::timestamptz)
            UNION ALL
            SELECT o.broadcast_id, extract(epoch FROM r.received_at - o.waiting_since)::float8
            FROM opened o
            JOIN broadcasts b ON b.id = o.broadcast_id
            JOIN receipts r ON r.device_id = o.device_id AND r.edition_id = b.edition_id AND r.result <> 'failed'
                AND r.received_at <= \(after)::timestamptz
            WHERE o.waiting_since IS NOT NULL
        ), opens_applied AS (
            INSERT INTO ready_at_open_tallies AS tally (broadcast_id, kind, bucket, count)
            SELECT broadcast_id, kind, bucket, count(*) FROM (
                SELECT broadcast_id, CASE WHEN waiting_since IS NULL THEN 0 ELSE 1 END::smallint AS kind, 0 AS bucket FROM opened
                UNION ALL
                SELECT broadcast_id, 2::smallint, \(unescaped: ReadyAtOpen.WaitBuckets.sql(wait: "wait")) FROM waits
            ) c GROUP BY 1, 2, 3
            ON CONFLICT (broadcast_id, kind, bucket) DO UPDATE SET count = tally.count + EXCLUDED.count
        )
        SELECT (SELECT count(*) FROM taken), (SELECT count(*) FROM upgraded WHERE broadcast_id IS NULL),
            (SELECT count(*) FROM opened), (SELECT count(*) FROM waits)
        """
    }
}

extension Duration {
    /// The duration in seconds, for SQL intervals.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
