import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

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

    /// The running broadcasts with batches given back because workers could not send through a provider (not held
    /// for a misconfiguration), with how long each provider's oldest has waited and every worker's status for the
    /// app and provider.
    public func givenBackBroadcasts(logger: Logger) async throws -> [GivenBackBroadcast] {
        let rows = try await client.query(Self.givenBackQuery, logger: logger)
        var found: [UUID: GivenBackBroadcast] = [:]
        var order: [UUID] = []
        for try await (broadcastID, appID, code, since, worker, lastSent, problem, problemSince, updated) in rows.decode(
            (UUID, Int, Int16, Date, String?, Date?, String?, Date?, Date?).self
        ) {
            if found[broadcastID] == nil {
                found[broadcastID] = GivenBackBroadcast(broadcastID: broadcastID, appID: appID, statuses: [])
                order.append(broadcastID)
            }
            let provider = PushProvider(storageCode: code)
            found[broadcastID]?.givenBackSince[provider] = since
            guard let worker, let updated else { continue }
            found[broadcastID]?.statuses.append(
                SenderStatus(
                    appID: appID,
                    provider: provider,
                    worker: worker,
                    lastSentAt: lastSent,
                    problem: problem,
                    problemSince: problemSince,
                    updatedAt: updated
                )
            )
        }
        return order.compactMap { found[$0] }
    }

    /// Open batches are few (the partial index `broadcast_batches_open`), running broadcasts fewer.
    static let givenBackQuery: PostgresQuery = """
        WITH waiting AS (
            SELECT bb.broadcast_id, gp.provider, min(bb.given_back_since) AS since
            FROM broadcast_batches bb JOIN broadcasts b ON b.id = bb.broadcast_id
                CROSS JOIN LATERAL unnest(bb.given_back_providers) AS gp(provider)
            WHERE bb.done_at IS NULL AND b.state = 'running' AND bb.given_back_since IS NOT NULL
            GROUP BY bb.broadcast_id, gp.provider
        )
        SELECT w.broadcast_id, p.app_id, w.provider, w.since, s.worker, s.last_sent_at, s.problem, s.problem_since, s.updated_at
        FROM waiting w JOIN broadcasts b ON b.id = w.broadcast_id
        JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
        LEFT JOIN sender_status s ON s.app_id = p.app_id AND s.provider = w.provider
        WHERE NOT EXISTS (SELECT 1 FROM provider_holds h WHERE h.app_id = p.app_id AND h.environment = b.environment AND h.provider = w.provider)
        ORDER BY w.broadcast_id, w.provider
        """

    /// Deletes the statuses of workers not heard of since `cutoff` (workers long gone).
    @discardableResult
    public func prune(before cutoff: Date, logger: Logger) async throws -> Int {
        let rows = try await client.query("DELETE FROM sender_status WHERE updated_at < \(cutoff) RETURNING 1", logger: logger)
        return try await rows.collect().count
    }
}
