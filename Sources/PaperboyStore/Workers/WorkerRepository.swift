import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

/// The workers that say they are running.
public struct WorkerRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Stores what the worker says of itself now (its heartbeat).
    /// - Returns: the database's clock when it wrote the row: workers pace on it.
    @discardableResult
    public func report(_ status: WorkerStatus, logger: Logger) async throws -> Date? {
        let rows = try await client.query(
            """
            INSERT INTO workers (name, started_at, seen_at, draining, batches, problems, pauses, last_error, last_error_at)
            VALUES (\(status.name), \(status.startedAt), \(status.seenAt), \(status.draining), \(status.batches), \(status.problems),
                \(try StoredPause.json(status.pauses))::jsonb, \(status.lastError), \(status.lastErrorAt))
            ON CONFLICT (name) DO UPDATE SET started_at = excluded.started_at, seen_at = excluded.seen_at, draining = excluded.draining,
                batches = excluded.batches, problems = excluded.problems, pauses = excluded.pauses, last_error = excluded.last_error,
                last_error_at = excluded.last_error_at
            RETURNING clock_timestamp()
            """,
            logger: logger
        )
        var now: Date?
        for try await value in rows.decode(Date.self) { now = value }
        return now
    }

    /// The workers seen since `since`, most recently started first.
    public func list(seenSince since: Date, logger: Logger) async throws -> [WorkerStatus] {
        let rows = try await client.query(
            """
            SELECT name, started_at, seen_at, draining, batches, problems, pauses::text, last_error, last_error_at
            FROM workers WHERE seen_at >= \(since) ORDER BY started_at DESC, name
            """,
            logger: logger
        )
        var workers: [WorkerStatus] = []
        for try await (name, started, seen, draining, batches, problems, pauses, error, errorAt) in rows.decode(
            (String, Date, Date, Bool, Int, [String], String, String?, Date?).self
        ) {
            workers.append(
                WorkerStatus(
                    name: name,
                    startedAt: started,
                    seenAt: seen,
                    draining: draining,
                    batches: batches,
                    problems: problems,
                    pauses: try StoredPause.pauses(pauses),
                    lastError: error,
                    lastErrorAt: errorAt
                )
            )
        }
        return workers
    }

    /// The providers of `appID` in `environment` that workers seen in the last `seenWithin` seconds (by the database's
    /// clock) have paused, one per provider: since the earliest of them, and how many of those workers paused it.
    public func pauses(
        appID: Int,
        environment: APNsEnvironment,
        seenWithin: TimeInterval = 60,
        logger: Logger
    ) async throws -> [BroadcastProgress.Pause] {
        var binds = PostgresBindings(capacity: 3)
        binds.append(appID)
        binds.append(environment.rawValue)
        binds.append(seenWithin)
        let rows = try await client.query(
            PostgresQuery(unsafeSQL: Self.pausesSelect(app: "$1", environment: "$2", seenWithin: "$3") + " ORDER BY 1", binds: binds),
            logger: logger
        )
        var pauses: [BroadcastProgress.Pause] = []
        for try await (provider, since, workers, live) in rows.decode((String, Date, Int, Int).self) {
            guard let provider = PushProvider(rawValue: provider) else { continue }
            pauses.append(BroadcastProgress.Pause(provider: provider, since: since, workers: workers, ofWorkers: max(live, workers)))
        }
        return pauses
    }

    /// The paused providers of app `app` in environment `environment` (its name, `production` or `sandbox`), from
    /// workers seen in the last `seenWithin` seconds (SQL expressions): `provider, since, workers, live` rows, `live`
    /// the workers seen then (its aliases name no table a caller may pass: `pausing`, `paused`). What ``pauses(appID:environment:seenWithin:logger:)`` and the status (``BroadcastStatus``) read.
    static func pausesSelect(app: String, environment: String, seenWithin: String) -> String {
        """
        SELECT paused->>'provider' AS provider, min((paused->>'since')::timestamptz) AS since,
            count(DISTINCT pausing.name)::integer AS workers,
            (SELECT count(*) FROM workers WHERE seen_at >= now() - make_interval(secs => \(seenWithin)))::integer AS live
        FROM workers pausing CROSS JOIN LATERAL jsonb_array_elements(pausing.pauses) AS paused
        WHERE pausing.seen_at >= now() - make_interval(secs => \(seenWithin))
            AND (paused->>'app')::integer = \(app) AND paused->>'environment' = \(environment)
        GROUP BY 1
        """
    }

    /// Deletes workers not seen since `cutoff`, and the sender statuses of those long gone.
    @discardableResult
    public func prune(before cutoff: Date, logger: Logger) async throws -> Int {
        let rows = try await client.query("DELETE FROM workers WHERE seen_at < \(cutoff) RETURNING 1", logger: logger)
        let workers = try await rows.collect().count
        try await SenderStatusRepository(client: client).prune(before: cutoff, logger: logger)
        return workers
    }
}

/// A pause as `workers.pauses` keeps it: flat, with the names the status's readers select on.
private struct StoredPause: Codable {
    var app: Int
    var environment: APNsEnvironment
    var provider: PushProvider
    var since: Date

    /// UTC with milliseconds, which PostgreSQL's `timestamptz` reads.
    private static let since = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func json(_ pauses: [ProviderPause]) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(since))
        }
        let stored = pauses.map { StoredPause(app: $0.key.appID, environment: $0.key.environment, provider: $0.key.provider, since: $0.since) }
        return String(decoding: try encoder.encode(stored), as: UTF8.self)
    }

    /// PostgreSQL's text of the column (its own spacing; `since` as written).
    static func pauses(_ json: String) throws -> [ProviderPause] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            try Date(try decoder.singleValueContainer().decode(String.self), strategy: since)
        }
        return try decoder.decode([StoredPause].self, from: Data(json.utf8)).map {
            ProviderPause(key: .init(appID: $0.app, environment: $0.environment, provider: $0.provider), since: $0.since)
        }
    }
}
