import Foundation
import Logging
import PostgresNIO

/// A worker as it last said of itself (`workers`, migration 0014).
public struct WorkerStatus: Sendable, Equatable, Codable {
    public var name: String
    public var startedAt: Date
    public var seenAt: Date
    public var draining: Bool
    /// Batches it held when it last said so.
    public var batches: Int
    /// What it cannot send, one line per app and provider.
    public var problems: [String]
    public var lastError: String?
    public var lastErrorAt: Date?

    public init(
        name: String,
        startedAt: Date,
        seenAt: Date,
        draining: Bool = false,
        batches: Int = 0,
        problems: [String] = [],
        lastError: String? = nil,
        lastErrorAt: Date? = nil
    ) {
        self.name = name
        self.startedAt = startedAt
        self.seenAt = seenAt
        self.draining = draining
        self.batches = batches
        self.problems = problems
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
    }
}

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
            INSERT INTO workers (name, started_at, seen_at, draining, batches, problems, last_error, last_error_at)
            VALUES (\(status.name), \(status.startedAt), \(status.seenAt), \(status.draining), \(status.batches), \(status.problems),
                \(status.lastError), \(status.lastErrorAt))
            ON CONFLICT (name) DO UPDATE SET started_at = excluded.started_at, seen_at = excluded.seen_at, draining = excluded.draining,
                batches = excluded.batches, problems = excluded.problems, last_error = excluded.last_error,
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
            SELECT name, started_at, seen_at, draining, batches, problems, last_error, last_error_at
            FROM workers WHERE seen_at >= \(since) ORDER BY started_at DESC, name
            """,
            logger: logger
        )
        var workers: [WorkerStatus] = []
        for try await (name, started, seen, draining, batches, problems, error, errorAt) in rows.decode(
            (String, Date, Date, Bool, Int, [String], String?, Date?).self
        ) {
            workers.append(
                WorkerStatus(
                    name: name,
                    startedAt: started,
                    seenAt: seen,
                    draining: draining,
                    batches: batches,
                    problems: problems,
                    lastError: error,
                    lastErrorAt: errorAt
                )
            )
        }
        return workers
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
