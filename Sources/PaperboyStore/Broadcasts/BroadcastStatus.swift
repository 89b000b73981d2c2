import Foundation
import PaperboyCore
import PostgresNIO

/// A broadcast's status (`GET /v1/broadcasts/{id}`, `paperboy broadcast status`) read in one prepared statement: the
/// broadcast, its waves and cohorts with their counts, the receipt tallies of it and its edition, ready at open, and
/// while it runs its app's held and paused providers. Each part is a `LATERAL` aggregate returning its rows as
/// parallel arrays, so the statement returns one row.
///
/// The status ran seven statements: the broadcast, then six at once on as many connections. At rest on a 1,000,000
/// device broadcast that cost `serve` about 2.1 ms of CPU and PostgreSQL 1.2 ms a status, planning 0.5 ms of it (every
/// statement planned on each call), and a cohort's three JSON objects of counts were decoded with `JSONDecoder`
/// (5.4 µs each). Under a wave 1 on two busy cores each of those statements waited for a backend to be scheduled, and
/// the status for the slowest of them (issue 49: p99 58.5 ms at 10,000,000 devices against a goal of 50). Prepared,
/// the statement is planned once per connection (planned each time it cost 4.3 ms: ten `LATERAL`s); the counts come
/// flattened by `jsonb_each_text`, one key and value a row. Ready at open is read from its tallies (migration 0041): it was
/// counted from every open of the broadcast joined with the edition's receipts, 0.5-0.6 s a status at 300,000 opens.
///
/// The parts share their SQL with the reads they replace where those remain in use elsewhere
/// (``BroadcastRepository/broadcastColumns``, ``ReceiptTallies/cellsCondition(broadcast:edition:)``,
/// ``RequestStatements/readyAtOpenSelect(broadcast:)``, ``ProviderHoldRepository/heldDeactivations(of:)``,
/// ``WorkerRepository/pausesSelect(app:environment:seenWithin:)``), so that the status and `paperboy apps holds`, the
/// tallies' readers and `paperboy insights ready-at-open` cannot drift apart.
struct BroadcastStatus: PostgresPreparedStatement {
    /// Workers seen within this many seconds count for a pause, as ``WorkerRepository/pauses(appID:environment:seenWithin:logger:)``'s default.
    static let pausesSeenWithin = 60

    static let sql = """
        SELECT \(BroadcastRepository.broadcastColumns),
            w.*, c.*, k.*, (SELECT counted_through FROM receipt_tally_state), t.*, r.*, h.*, q.*
        FROM \(BroadcastRepository.broadcastTables)
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(wave ORDER BY wave), '{}'), coalesce(array_agg(kind ORDER BY wave), '{}'),
                coalesce(array_agg(starts_at ORDER BY wave), '{}'), coalesce(array_agg(rate ORDER BY wave), '{}'),
                coalesce(array_agg(window_seconds ORDER BY wave), '{}'),
                coalesce(array_agg(finished_at IS NOT NULL ORDER BY wave), '{}'),
                coalesce(array_agg(coalesce(finished_at, starts_at) ORDER BY wave), '{}'),
                coalesce(array_agg(behind_seconds ORDER BY wave), '{}')
            FROM broadcast_waves WHERE broadcast_id = b.id
        ) w
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(wave ORDER BY wave, cohort), '{}'), coalesce(array_agg(cohort::bigint ORDER BY wave, cohort), '{}'),
                coalesce(array_agg(starts_at ORDER BY wave, cohort), '{}'), coalesce(array_agg(ends_at ORDER BY wave, cohort), '{}'),
                coalesce(array_agg(planned::bigint ORDER BY wave, cohort), '{}'), coalesce(array_agg(sent::bigint ORDER BY wave, cohort), '{}'),
                coalesce(array_agg(accepted::bigint ORDER BY wave, cohort), '{}'),
                coalesce(array_agg(dormant::bigint ORDER BY wave, cohort), '{}'),
                coalesce(array_agg(
                    jsonb_typeof(rejected) = 'object' AND jsonb_typeof(skipped) = 'object' AND jsonb_typeof(providers) = 'object'
                    ORDER BY wave, cohort), '{}')
            FROM broadcast_cohorts WHERE broadcast_id = b.id
        ) c
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(x.wave), '{}'), coalesce(array_agg(x.cohort::bigint), '{}'), coalesce(array_agg(x.kind), '{}'),
                coalesce(array_agg(x.key), '{}'), coalesce(array_agg(x.value), '{}')
            FROM broadcast_cohorts bc CROSS JOIN LATERAL (
                SELECT bc.wave, bc.cohort, 0::smallint AS kind, key, value FROM jsonb_each_text(\(Self.object("bc.rejected")))
                UNION ALL SELECT bc.wave, bc.cohort, 1::smallint, key, value FROM jsonb_each_text(\(Self.object("bc.skipped")))
                UNION ALL SELECT bc.wave, bc.cohort, 2::smallint, key, value FROM jsonb_each_text(\(Self.object("bc.providers")))
            ) x WHERE bc.broadcast_id = b.id
        ) k
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(t.broadcast_id IS NULL), '{}'), coalesce(array_agg(t.wave), '{}'),
                coalesce(array_agg(t.cohort::bigint), '{}'), coalesce(array_agg(t.provider), '{}'), coalesce(array_agg(t.result), '{}'),
                coalesce(array_agg(t.count), '{}')
            FROM receipt_tallies t WHERE \(ReceiptTallies.cellsCondition(broadcast: "b.id", edition: "b.edition_id"))
        ) t
        CROSS JOIN LATERAL (\(RequestStatements.readyAtOpenSelect(broadcast: "b.id"))) r
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(h.provider ORDER BY h.provider), '{}'), coalesce(array_agg(h.reason ORDER BY h.provider), '{}'),
                coalesce(array_agg(h.raised_at ORDER BY h.provider), '{}'),
                coalesce(array_agg(\(ProviderHoldRepository.heldDeactivations(of: "h"))::bigint ORDER BY h.provider), '{}')
            FROM provider_holds h WHERE b.state = 'running' AND h.app_id = p.app_id AND h.environment = b.environment
        ) h
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(pq.provider ORDER BY pq.provider), '{}'), coalesce(array_agg(pq.since ORDER BY pq.provider), '{}'),
                coalesce(array_agg(pq.workers::bigint ORDER BY pq.provider), '{}'), coalesce(max(pq.live), 0)::bigint
            FROM (\(WorkerRepository.pausesSelect(
                app: "p.app_id", environment: APNsEnvironment.rawValueSQL(ofCode: "b.environment"), seenWithin: "\(pausesSeenWithin)"))) pq
            WHERE b.state = 'running'
        ) q
        WHERE b.id = $1
        """

    /// `column` when it holds a JSON object, else NULL (no rows from `jsonb_each_text`): the cohorts' last array (each
    /// cohort's ``Read/Cohort/readable``) then names the unreadable cohort, instead of the whole statement failing on it.
    private static func object(_ column: String) -> String {
        "CASE WHEN jsonb_typeof(\(column)) = 'object' THEN \(column) END"
    }

    static let bindingDataTypes: [PostgresDataType] = [.uuid]

    let broadcastID: UUID

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(broadcastID)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Read {
        try Read(row)
    }

    /// The statement's row, decoded: the parts ``BroadcastRepository/progress(id:exact:now:logger:)`` assembles.
    struct Read: Sendable {
        struct Wave: Sendable {
            var wave: Int16
            var kind: String
            var startsAt: Date
            var rate: Double
            var window: Double
            var finishedAt: Date?
            var behindSeconds: Double
        }

        struct Cohort: Sendable {
            var wave: Int16
            var cohort: Int
            var startsAt: Date
            var endsAt: Date
            var planned: Int
            var sent: Int
            var accepted: Int
            var dormant: Int
            /// Whether its `rejected`, `skipped` and `providers` are JSON objects (their counts are in ``counts``).
            var readable: Bool
        }

        /// Counts of one of a cohort's JSON objects: 0 `rejected`, 1 `skipped`, 2 `providers`.
        struct Count: Sendable {
            var wave: Int16
            var cohort: Int
            var column: Int16
            var key: String
            var value: String
        }

        struct Hold: Sendable {
            var provider: Int16
            var reason: String
            var since: Date
            var heldDeactivations: Int
        }

        var broadcast: BroadcastRepository.BroadcastRow
        var waves: [Wave]
        var cohorts: [Cohort]
        var counts: [Count]
        var tallied: ReceiptTallies.BroadcastCounts
        var readyAtOpen: ReadyAtOpen
        var holds: [Hold]
        var pauses: [BroadcastProgress.Pause]

        init(_ row: PostgresRow) throws {
            let cells = row.makeRandomAccess()
            var index = 0
            func next<T: PostgresDecodable>(_: T.Type = T.self) throws -> T {
                defer { index += 1 }
                return try cells[index].decode(T.self, context: .default)
            }
            broadcast = (
                try next(), try next(), try next(), try next(), try next(), try next(), try next(), try next(), try next(),
                try next(), try next(), try next(), try next(), try next(), try next(), try next()
            )

            let (waveNumbers, kinds, starts, rates, windows): ([Int16], [String], [Date], [Double], [Double]) = (
                try next(), try next(), try next(), try next(), try next()
            )
            let (finished, finishes, behind): ([Bool], [Date], [Double]) = (try next(), try next(), try next())
            waves = waveNumbers.indices.map {
                Wave(
                    wave: waveNumbers[$0],
                    kind: kinds[$0],
                    startsAt: starts[$0],
                    rate: rates[$0],
                    window: windows[$0],
                    finishedAt: finished[$0] ? finishes[$0] : nil,
                    behindSeconds: behind[$0]
                )
            }

            let (cohortWaves, cohortNumbers, cohortStarts, cohortEnds): ([Int16], [Int], [Date], [Date]) = (
                try next(), try next(), try next(), try next()
            )
            let (planned, sent, accepted, dormant, readable): ([Int], [Int], [Int], [Int], [Bool]) = (
                try next(), try next(), try next(), try next(), try next()
            )
            cohorts = cohortWaves.indices.map {
                Cohort(
                    wave: cohortWaves[$0],
                    cohort: cohortNumbers[$0],
                    startsAt: cohortStarts[$0],
                    endsAt: cohortEnds[$0],
                    planned: planned[$0],
                    sent: sent[$0],
                    accepted: accepted[$0],
                    dormant: dormant[$0],
                    readable: readable[$0]
                )
            }

            let (countWaves, countCohorts, columns, keys, values): ([Int16], [Int], [Int16], [String], [String]) = (
                try next(), try next(), try next(), try next(), try next()
            )
            counts = countWaves.indices.map {
                Count(wave: countWaves[$0], cohort: countCohorts[$0], column: columns[$0], key: keys[$0], value: values[$0])
            }

            let countedThrough: Date = try next()
            let (isEdition, tallyWaves, tallyCohorts, providers, results, tallies): ([Bool], [Int16], [Int], [Int16], [String], [Int]) = (
                try next(), try next(), try next(), try next(), try next(), try next()
            )
            tallied = ReceiptTallies.BroadcastCounts(cells: [], edition: [:], countedThrough: countedThrough)
            for cell in isEdition.indices {
                guard let result = ReceiptResult(rawValue: results[cell]) else { continue }
                if isEdition[cell] {
                    tallied.edition[result, default: 0] += tallies[cell]
                } else {
                    tallied.cells.append(
                        .init(
                            wave: Int(tallyWaves[cell]),
                            cohort: tallyCohorts[cell],
                            provider: PushProvider(storageCode: providers[cell]),
                            result: result,
                            count: tallies[cell]
                        )
                    )
                }
            }

            let (ready, notReady, waitBuckets, waitCounts): (Int, Int, [Int], [Int]) = (try next(), try next(), try next(), try next())
            readyAtOpen = ReadyAtOpen(ready: ready, notReady: notReady, waitBuckets: waitBuckets, waitCounts: waitCounts)

            let (holdProviders, reasons, raised, held): ([Int16], [String], [Date], [Int]) = (try next(), try next(), try next(), try next())
            holds = holdProviders.indices.map {
                Hold(provider: holdProviders[$0], reason: reasons[$0], since: raised[$0], heldDeactivations: held[$0])
            }

            let (pauseProviders, since, workers, live): ([String], [Date], [Int], Int) = (try next(), try next(), try next(), try next())
            pauses = pauseProviders.indices.compactMap {
                guard let provider = PushProvider(rawValue: pauseProviders[$0]) else { return nil }
                return BroadcastProgress.Pause(provider: provider, since: since[$0], workers: workers[$0], ofWorkers: max(live, workers[$0]))
            }
        }
    }
}
