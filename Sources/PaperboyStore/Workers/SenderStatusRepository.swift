import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// What one worker says of one app's provider (`sender_status`, migration 0014).
public struct SenderStatus: Sendable, Equatable {
    public var appID: Int
    public var provider: PushProvider
    public var worker: String
    /// When it last recorded pushes of the app through the provider (at most 30 s old while it sends).
    public var lastSentAt: Date?
    /// Why it cannot send for the app now; nil when it can.
    public var problem: String?
    public var problemSince: Date?
    public var updatedAt: Date

    public init(
        appID: Int,
        provider: PushProvider,
        worker: String,
        lastSentAt: Date? = nil,
        problem: String? = nil,
        problemSince: Date? = nil,
        updatedAt: Date
    ) {
        self.appID = appID
        self.provider = provider
        self.worker = worker
        self.lastSentAt = lastSentAt
        self.problem = problem
        self.problemSince = problemSince
        self.updatedAt = updatedAt
    }
}

/// A running broadcast that has batches given back because a worker could not send through a provider, with what
/// every worker says of that app and provider: what ``SenderStatusRepository/givenBackBroadcasts(logger:)`` reads for
/// the rule that fails a broadcast nobody can send.
public struct GivenBackBroadcast: Sendable, Equatable {
    public var broadcastID: UUID
    public var appID: Int
    public var statuses: [SenderStatus]

    public init(broadcastID: UUID, appID: Int, statuses: [SenderStatus]) {
        self.broadcastID = broadcastID
        self.appID = appID
        self.statuses = statuses
    }
}

/// Which worker can send for which app through which provider.
public struct SenderStatusRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// `worker` cannot send for `appID` through `provider`, for `problem` (which names the app and what is wrong,
    /// never a secret). The problem's start is kept while it lasts.
    public func reportProblem(appID: Int, provider: PushProvider, worker: String, problem: String, now: Date, logger: Logger) async throws {
        try await client.query(
            """
            INSERT INTO sender_status (app_id, provider, worker, problem, problem_since, updated_at)
            VALUES (\(appID), \(provider.storageCode), \(worker), \(problem), \(now), \(now))
            ON CONFLICT (app_id, provider, worker) DO UPDATE SET problem = excluded.problem,
                problem_since = coalesce(sender_status.problem_since, excluded.problem_since), updated_at = excluded.updated_at
            """,
            logger: logger
        )
    }

    /// `worker` recorded pushes of `appID` through `provider` at `now`: any problem it reported is over.
    public func reportSent(appID: Int, provider: PushProvider, worker: String, now: Date, logger: Logger) async throws {
        try await client.query(
            """
            INSERT INTO sender_status (app_id, provider, worker, last_sent_at, updated_at)
            VALUES (\(appID), \(provider.storageCode), \(worker), \(now), \(now))
            ON CONFLICT (app_id, provider, worker) DO UPDATE SET last_sent_at = excluded.last_sent_at, problem = NULL,
                problem_since = NULL, updated_at = excluded.updated_at
            """,
            logger: logger
        )
    }

    /// The running broadcasts with a batch given back because a worker could not send through a provider, each
    /// with every worker's status for its app.
    public func givenBackBroadcasts(logger: Logger) async throws -> [GivenBackBroadcast] {
        let rows = try await client.query(Self.givenBackQuery, logger: logger)
        var found: [UUID: GivenBackBroadcast] = [:]
        var order: [UUID] = []
        for try await (broadcastID, appID, provider, worker, lastSent, problem, since, updated) in rows.decode(
            (UUID, Int, Int16?, String?, Date?, String?, Date?, Date?).self
        ) {
            if found[broadcastID] == nil {
                found[broadcastID] = GivenBackBroadcast(broadcastID: broadcastID, appID: appID, statuses: [])
                order.append(broadcastID)
            }
            guard let provider, let worker, let updated else { continue }
            found[broadcastID]?.statuses.append(
                SenderStatus(
                    appID: appID,
                    provider: PushProvider(storageCode: provider),
                    worker: worker,
                    lastSentAt: lastSent,
                    problem: problem,
                    problemSince: since,
                    updatedAt: updated
                )
            )
        }
        return order.compactMap { found[$0] }
    }

    /// Open batches are few (the partial index `broadcast_batches_open`), running broadcasts fewer.
    static let givenBackQuery: PostgresQuery = """
        SELECT b.id, p.app_id, s.provider, s.worker, s.last_sent_at, s.problem, s.problem_since, s.updated_at
        FROM broadcasts b
        JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
        LEFT JOIN sender_status s ON s.app_id = p.app_id
        WHERE b.state = 'running' AND EXISTS (
            SELECT 1 FROM broadcast_batches bb
            WHERE bb.broadcast_id = b.id AND bb.done_at IS NULL AND bb.given_back_for IS NOT NULL AND bb.given_back_for <> 'draining')
        ORDER BY b.id
        """

    /// Deletes the statuses of workers not heard of since `cutoff` (workers long gone).
    @discardableResult
    public func prune(before cutoff: Date, logger: Logger) async throws -> Int {
        let rows = try await client.query("DELETE FROM sender_status WHERE updated_at < \(cutoff) RETURNING 1", logger: logger)
        return try await rows.collect().count
    }
}
