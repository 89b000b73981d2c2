import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

/// Exact recounts: a broadcast's tallies (and its edition's) counted again from the receipts, through the
/// watermark, under the watermark's lock so that no step counts meanwhile. The steps count receipts after the
/// watermark, so a recount and the steps never count one receipt twice.
extension ReceiptTallies {
    /// What a recount counted.
    public struct Recount: Sendable, Equatable {
        /// The edition's receipts counted.
        public var receipts: Int
        /// The watermark it counted through (after a step up to `now() - lag`).
        public var countedThrough: Date
    }

    /// Recounts a broadcast now, waiting for a step another worker is taking: first a step up to `now() - lag`,
    /// then the broadcast's counts and its edition's from every receipt through the watermark (the full count,
    /// seconds at millions of devices: `paperboy broadcast status --exact`). `now` (the caller's clock) is
    /// stored as the recount's time.
    /// - Throws: `StoreError` not found naming `id` when there is no such broadcast.
    @discardableResult
    public func recount(broadcastID: UUID, now: Date, logger: Logger) async throws -> Recount {
        let recounted = try await client.transaction(logger: logger) { connection in
            try await self.recount(broadcastID: broadcastID, now: now, wait: true, recountedBefore: nil, on: connection, logger: logger)
        }
        guard let recounted else {
            throw StoreError(code: .notFound, field: "id", message: "there is no broadcast \(broadcastID.uuidString.lowercased())")
        }
        return recounted
    }

    /// Recounts a broadcast unless another worker holds the watermark, or the broadcast was recounted at or
    /// after `recountedBefore` (the recount another worker did meanwhile). nil when it did not.
    public func recountIfNeeded(broadcastID: UUID, recountedBefore: Date, now: Date, logger: Logger) async throws -> Recount? {
        try await client.transaction(logger: logger) { connection in
            try await self.recount(broadcastID: broadcastID, now: now, wait: false, recountedBefore: recountedBefore, on: connection, logger: logger)
        }
    }

    /// Recounts an edition and every broadcast of it through the watermark, waiting for a step: after the ledger
    /// pruner deleted receipts of it, its tallies hold what is left (usually nothing).
    public func recount(editionID: UUID, logger: Logger) async throws {
        try await client.transaction(logger: logger) { connection in
            guard try await Self.lock(on: connection, configuration, wait: true, dueOnly: false, logger: logger) != nil else { return }
            var broadcasts: [UUID] = []
            let rows = try await connection.query("SELECT id FROM broadcasts WHERE edition_id = \(editionID)", logger: logger)
            for try await id in rows.decode(UUID.self) { broadcasts.append(id) }
            _ = try await Self.recount(editionID: editionID, broadcastIDs: broadcasts, on: connection, logger: logger)
        }
    }

    /// The broadcasts that ended and were created within ``Configuration/editionLookback`` (the database's
    /// clock), with their last recount.
    public func endedBroadcasts(logger: Logger) async throws -> [ReceiptTallyPolicy.EndedBroadcast] {
        let rows = try await client.query(Self.endedBroadcastsQuery(lookback: configuration.editionLookback.seconds), logger: logger)
        var ended: [ReceiptTallyPolicy.EndedBroadcast] = []
        for try await (id, finishedAt, recountedAt) in rows.decode((UUID, Date, Date?).self) {
            ended.append(ReceiptTallyPolicy.EndedBroadcast(id: id, finishedAt: finishedAt, recountedAt: recountedAt))
        }
        return ended
    }

    private func recount(
        broadcastID: UUID,
        now: Date,
        wait: Bool,
        recountedBefore: Date?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Recount? {
        // The step before the recount takes everything up to the bound at once: the recount counts through it.
        var uncapped = configuration
        uncapped.maxWindow = .seconds(100 * 365 * 86_400)
        guard let window = try await Self.lock(on: connection, uncapped, wait: wait, dueOnly: false, logger: logger) else { return nil }
        let rows = try await connection.query(
            """
            SELECT b.edition_id, c.recounted_at FROM broadcasts b LEFT JOIN receipt_tally_recounts c ON c.broadcast_id = b.id
            WHERE b.id = \(broadcastID)
            """,
            logger: logger
        )
        var found: (edition: UUID, recountedAt: Date?)?
        for try await (edition, recountedAt) in rows.decode((UUID, Date?).self) { found = (edition, recountedAt) }
        guard let found else { return nil }
        if let recountedBefore, let recountedAt = found.recountedAt, recountedAt >= recountedBefore { return nil }
        let step = try await Self.count(window, on: connection, configuration, logger: logger)
        let receipts = try await Self.recount(editionID: found.edition, broadcastIDs: [broadcastID], on: connection, logger: logger)
        try await connection.query(
            """
            INSERT INTO receipt_tally_recounts (broadcast_id, recounted_at, counted_through) VALUES (\(broadcastID), \(now), \(step.countedThrough))
            ON CONFLICT (broadcast_id) DO UPDATE SET recounted_at = EXCLUDED.recounted_at, counted_through = EXCLUDED.counted_through
            """,
            logger: logger
        )
        logger.info(
            "receipt tallies recounted",
            metadata: [
                LogKey.broadcast: "\(broadcastID.uuidString.lowercased())", LogKey.edition: "\(found.edition.uuidString.lowercased())",
                LogKey.receipts: "\(receipts)",
            ]
        )
        return Recount(receipts: receipts, countedThrough: step.countedThrough)
    }

    /// Replaces the edition's own counts and those of `broadcastIDs` (and the failures they remember) with a
    /// count of the edition's receipts through the watermark, under its lock, and the broadcasts' ready at open with a
    /// count of their opens (``recountOpensQuery(broadcastIDs:)``). Returns the receipts counted.
    static func recount(editionID: UUID, broadcastIDs: [UUID], on connection: PostgresConnection, logger: Logger) async throws -> Int {
        try await connection.query(
            "DELETE FROM receipt_tallies WHERE edition_id = \(editionID) AND (broadcast_id IS NULL OR broadcast_id = ANY(\(broadcastIDs)::uuid[]))",
            logger: logger
        )
        try await connection.query(
            "DELETE FROM receipt_tally_failures WHERE edition_id = \(editionID) AND (broadcast_id IS NULL OR broadcast_id = ANY(\(broadcastIDs)::uuid[]))",
            logger: logger
        )
        let rows = try await connection.query(recountQuery(editionID: editionID, broadcastIDs: broadcastIDs), logger: logger)
        var receipts = 0
        for try await count in rows.decode(Int.self) { receipts = count }
        try await connection.query("DELETE FROM ready_at_open_tallies WHERE broadcast_id = ANY(\(broadcastIDs)::uuid[])", logger: logger)
        try await connection.query(recountOpensQuery(broadcastIDs: broadcastIDs), logger: logger)
        return receipts
    }

    /// Ready at open counted again for `broadcastIDs` (their tallies deleted first): their first opens stored through
    /// the watermark (and those stored before migration 0041, which have no time), and the waits that ended by it,
    /// each waiting opener's successful receipt through the watermark probed by its primary key (`LIMIT 1` keeps it a
    /// probe: joined, the planner hashed every receipt). The opens and the receipts after the watermark are the steps'.
    static func recountOpensQuery(broadcastIDs: [UUID]) -> PostgresQuery {
        """
        WITH counted AS (
            SELECT o.broadcast_id, o.device_id, o.waiting_since, b.edition_id
            FROM unnest(\(broadcastIDs)::uuid[]) AS x(id)
            CROSS JOIN LATERAL (SELECT edition_id FROM broadcasts WHERE id = x.id OFFSET 0) b
            JOIN broadcast_opens o ON o.broadcast_id = x.id
                AND (o.opened_at IS NULL OR o.opened_at <= (SELECT counted_through FROM receipt_tally_state))
        )
        INSERT INTO ready_at_open_tallies (broadcast_id, kind, bucket, count)
        SELECT broadcast_id, CASE WHEN waiting_since IS NULL THEN 0 ELSE 1 END, 0, count(*) FROM counted GROUP BY 1, 2
        UNION ALL
        SELECT c.broadcast_id, 2, \(unescaped: ReadyAtOpen.WaitBuckets.sql(wait: "extract(epoch FROM r.received_at - c.waiting_since)::float8")),
            count(*)
        FROM counted c
        CROSS JOIN LATERAL (
            SELECT r.received_at FROM receipts r
            WHERE r.device_id = c.device_id AND r.edition_id = c.edition_id AND r.result <> 'failed'
                AND r.received_at <= (SELECT counted_through FROM receipt_tally_state)
            LIMIT 1
        ) r
        WHERE c.waiting_since IS NOT NULL
        GROUP BY 1, 3
        """
    }

    /// The full count: every receipt of the edition through the watermark (the `(edition_id, received_at)`
    /// index), its provider (the receipt's own, the device read only for a receipt stored before migration 0038,
    /// as ``stepQuery(after:through:lookback:)`` reads it, once), and per broadcast its device's last delivery (primary key probes), as the
    /// status counted on every request before the tallies. The failed receipts' cells are remembered for the
    /// upgrades the steps will see.
    static func recountQuery(editionID: UUID, broadcastIDs: [UUID]) -> PostgresQuery {
        """
        WITH counted AS (
            SELECT * FROM (
                SELECT r.device_id, r.result, coalesce(r.provider, (SELECT d.provider FROM devices d WHERE d.id = r.device_id)) AS provider
                FROM receipts r
                WHERE r.edition_id = \(editionID) AND r.received_at <= (SELECT counted_through FROM receipt_tally_state)
                OFFSET 0
            ) c WHERE provider IS NOT NULL
        ), reached AS (
            SELECT c.device_id, c.result, c.provider, b.id AS broadcast_id, last.wave, last.cohort
            FROM counted c
            CROSS JOIN unnest(\(broadcastIDs)::uuid[]) AS b(id)
            JOIN LATERAL (
                SELECT x.wave, x.cohort FROM deliveries x
                WHERE x.device_id = c.device_id AND x.broadcast_id = b.id ORDER BY x.wave DESC LIMIT 1
            ) last ON true
        ), remembered AS (
            INSERT INTO receipt_tally_failures (edition_id, device_id, broadcast_id, wave, cohort, provider)
            SELECT \(editionID), device_id, NULL, 0, 0, provider FROM counted WHERE result = 'failed'
            UNION ALL
            SELECT \(editionID), device_id, broadcast_id, wave, cohort, provider FROM reached WHERE result = 'failed'
        ), counts AS (
            SELECT NULL::uuid AS broadcast_id, 0::smallint AS wave, 0 AS cohort, provider, result, count(*) AS n
            FROM counted GROUP BY provider, result
            UNION ALL
            SELECT broadcast_id, wave, cohort, provider, result, count(*) FROM reached GROUP BY 1, 2, 3, 4, 5
        ), stored AS (
            INSERT INTO receipt_tallies (edition_id, broadcast_id, wave, cohort, provider, result, count)
            SELECT \(editionID), broadcast_id, wave, cohort, provider, result, n FROM counts
        )
        SELECT count(*) FROM counted
        """
    }

    static func endedBroadcastsQuery(lookback: Double) -> PostgresQuery {
        """
        SELECT b.id, b.finished_at, c.recounted_at
        FROM broadcasts b LEFT JOIN receipt_tally_recounts c ON c.broadcast_id = b.id
        WHERE b.created_at > now() - make_interval(secs => \(lookback))
            AND b.state NOT IN ('planned', 'running') AND b.finished_at IS NOT NULL
        """
    }
}
