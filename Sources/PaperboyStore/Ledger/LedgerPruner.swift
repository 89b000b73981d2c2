import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Deletes deliveries and receipts older than a retention, in small batches, so the ledger stays the
/// size of a week instead of growing by gigabytes a day.
///
/// What is kept, whatever its age:
/// - the deliveries of a broadcast that is planned or running, or that finished less than the retention
///   ago (a cancelled broadcast's last batches may record a little after it finished), or whose edition's
///   deadline has not passed: waves count an edition's pushes over all its broadcasts;
/// - the receipts of an edition whose deadline has not passed: waves read them.
///
/// An edition's receipt tallies (``ReceiptTallies``) go with its receipts: after deleting some, the pruner
/// recounts the edition from what is left.
///
/// A broadcast's batch rows (one per ~1,000 devices a wave sent: 11 million a year at 10 million devices)
/// are needed only while it runs; they go with its deliveries. Its waves and cohorts, a few dozen rows that
/// hold its status, stay.
///
/// The hourly budget reads the last hour of deliveries, so a retention must be longer than that.
/// Each statement deletes at most ``Configuration/batchSize`` rows, found through an index
/// (`deliveries_by_broadcast`, `receipts_by_edition_received`), so locks are short and nothing is
/// scanned whole.
public struct LedgerPruner: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// How old a delivery or receipt must be to go.
        public var retention: Duration
        /// Rows per DELETE statement.
        public var batchSize: Int
        /// How old an audit entry must be to go; nil keeps the audit forever.
        public var auditRetention: Duration?

        public init(retention: Duration = .seconds(7 * 86_400), batchSize: Int = 10_000, auditRetention: Duration? = Self.defaultAuditRetention) {
            self.retention = retention
            self.batchSize = batchSize
            self.auditRetention = auditRetention
        }

        /// A year.
        public static let defaultAuditRetention: Duration = .seconds(365 * 86_400)
        /// The shortest audit retention: a day.
        public static let minimumAuditRetention: Duration = .seconds(86_400)
    }

    /// What a prune deleted, or would delete in a dry run.
    public struct Result: Sendable, Equatable, Codable {
        public var deliveries: Int
        public var receipts: Int
        /// Batch rows of finished broadcasts.
        public var batches: Int = 0
        /// Recorded members of later waves that ended (`wave_members`), whatever their age.
        public var waveMembers: Int = 0
        /// First opens counted for broadcasts whose deliveries went (`broadcast_opens`, migration 0025).
        public var opens: Int = 0
        /// Audit entries older than the audit retention.
        public var auditEntries: Int = 0
        /// Whether the audit was left as it is because the role may not delete from it (made append-only,
        /// docs/operations.md), or no audit retention was given.
        public var auditKept: Bool = false
        /// Rows older than this were deleted.
        public var cutoff: Date
        public var dryRun: Bool
    }

    /// The shortest retention: longer than the hour the hourly budget reads.
    public static let minimumRetention: Duration = .seconds(2 * 3600)

    let client: PostgresClient
    public let configuration: Configuration

    /// - Throws: `StoreError` naming `retention` when it is not longer than ``minimumRetention``, or
    ///   `batchSize` when it is not positive.
    public init(client: PostgresClient, configuration: Configuration = Configuration()) throws {
        guard configuration.retention >= Self.minimumRetention else {
            throw StoreError(
                code: .invalid,
                field: "retention",
                message: "must be at least 2h: the hourly push budget reads the last hour of deliveries"
            )
        }
        guard configuration.batchSize > 0 else { throw StoreError(code: .invalid, field: "batchSize", message: "must be positive") }
        if let audit = configuration.auditRetention, audit < Configuration.minimumAuditRetention {
            throw StoreError(code: .invalid, field: "auditRetention", message: "must be at least 1d")
        }
        self.client = client
        self.configuration = configuration
    }

    /// Runs `deleting` (one batch of at most ``Configuration/batchSize`` rows) until a batch comes back short,
    /// or, in a dry run, `counting` once; `removed` gets each non-empty batch's size.
    private func removeInBatches(
        counting: PostgresQuery,
        deleting: PostgresQuery,
        dryRun: Bool,
        logger: Logger,
        removed: (Int) -> Void
    ) async throws {
        if dryRun {
            let counted = try await count(counting, logger: logger)
            if counted > 0 { removed(counted) }
            return
        }
        while true {
            let deleted = try await count(deleting, logger: logger)
            if deleted > 0 { removed(deleted) }
            if deleted < configuration.batchSize { return }
        }
    }

    /// Deletes (or, in a dry run, counts) the deliveries and receipts older than the retention as of `now`.
    /// - Parameter progress: called after each batch with the totals so far.
    public func prune(
        now: Date,
        dryRun: Bool = false,
        progress: (Result) -> Void = { _ in },
        logger: Logger
    ) async throws -> Result {
        let cutoff = now.addingTimeInterval(-Double(configuration.retention.components.seconds))
        var result = Result(deliveries: 0, receipts: 0, batches: 0, cutoff: cutoff, dryRun: dryRun)
        let limit = configuration.batchSize

        var broadcasts: [UUID] = []
        let finished = try await client.query(Self.finishedBroadcasts(cutoff: cutoff, now: now), logger: logger)
        for try await id in finished.decode(UUID.self) { broadcasts.append(id) }
        for id in broadcasts {
            try await removeInBatches(
                counting: "SELECT count(*) FROM deliveries WHERE broadcast_id = \(id) AND sent_at < \(cutoff)",
                deleting: Self.deleteDeliveries(broadcastID: id, cutoff: cutoff, limit: limit),
                dryRun: dryRun,
                logger: logger
            ) { removed in
                result.deliveries += removed
                progress(result)
            }
            try await removeInBatches(
                counting: "SELECT count(*) FROM broadcast_batches WHERE broadcast_id = \(id)",
                deleting: Self.deleteBatches(broadcastID: id, limit: limit),
                dryRun: dryRun,
                logger: logger
            ) { removed in
                result.batches += removed
                progress(result)
            }
            try await removeInBatches(
                counting: "SELECT count(*) FROM broadcast_opens WHERE broadcast_id = \(id)",
                deleting: Self.deleteOpens(broadcastID: id, limit: limit),
                dryRun: dryRun,
                logger: logger
            ) { removed in
                result.opens += removed
                progress(result)
            }
        }

        // A later wave's recorded members are needed while its batches are carved and sent: they go as soon as the
        // wave or its broadcast ended (millions of rows after a morning), or when the wave never started.
        var ended: [(UUID, Int16)] = []
        let endedRows = try await client.query(Self.endedWaveMembers, logger: logger)
        for try await row in endedRows.decode((UUID, Int16).self) { ended.append(row) }
        for (id, wave) in ended {
            try await removeInBatches(
                counting: "SELECT count(*) FROM wave_members WHERE broadcast_id = \(id) AND wave = \(wave)",
                deleting: Self.deleteWaveMembers(broadcastID: id, wave: wave, limit: limit),
                dryRun: dryRun,
                logger: logger
            ) { removed in
                result.waveMembers += removed
                progress(result)
            }
        }
        var editions: [UUID] = []
        let past = try await client.query("SELECT id FROM editions WHERE deadline < \(now)", logger: logger)
        for try await id in past.decode(UUID.self) { editions.append(id) }
        let tallies = ReceiptTallies(client: client)
        for id in editions {
            var removedAny = false
            try await removeInBatches(
                counting: "SELECT count(*) FROM receipts WHERE edition_id = \(id) AND received_at < \(cutoff)",
                deleting: Self.deleteReceipts(editionID: id, cutoff: cutoff, limit: limit),
                dryRun: dryRun,
                logger: logger
            ) { removed in
                removedAny = true
                result.receipts += removed
                progress(result)
            }
            // Its tallies go with its receipts: recounted from those left (usually none).
            if removedAny && !dryRun { try await tallies.recount(editionID: id, logger: logger) }
        }
        if !dryRun {
            // Workers gone for a day, and what they said of the apps they could not send for.
            try await WorkerRepository(client: client).prune(before: now.addingTimeInterval(-86400), logger: logger)
        }
        if let retention = configuration.auditRetention {
            let audit = AuditRepository(client: client)
            let before = now.addingTimeInterval(-Double(retention.components.seconds))
            do {
                result.auditEntries =
                    dryRun
                    ? try await audit.count(before: before, logger: logger)
                    : try await audit.prune(before: before, batchSize: limit, logger: logger)
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42501" {
                // The audit was made append-only for this role (docs/operations.md): it is pruned by the owner.
                logger.notice("the audit log is append-only for this role: not pruned; prune it as its owner")
                result.auditKept = true
            }
        } else {
            result.auditKept = true
        }
        logger.info(
            dryRun ? "ledger prune counted" : "ledger pruned",
            metadata: [
                LogKey.deliveries: "\(result.deliveries)", LogKey.receipts: "\(result.receipts)", LogKey.batches: "\(result.batches)",
                LogKey.waveMembers: "\(result.waveMembers)",
                LogKey.cutoff: "\(cutoff.formatted(.iso8601))",
            ]
        )
        return result
    }

    /// The broadcasts whose deliveries may go: finished before the cutoff, their edition past its deadline.
    static func finishedBroadcasts(cutoff: Date, now: Date) -> PostgresQuery {
        """
        SELECT b.id FROM broadcasts b JOIN editions e ON e.id = b.edition_id
        WHERE b.state NOT IN ('planned', 'running') AND b.finished_at < \(cutoff) AND e.deadline < \(now)
        """
    }

    /// The later waves whose recorded members may go: every counted wave (one `broadcast_counts` row each) whose
    /// broadcast is no longer planned or running, or that finished.
    static let endedWaveMembers: PostgresQuery = """
        SELECT c.broadcast_id, c.wave FROM broadcast_counts c JOIN broadcasts b ON b.id = c.broadcast_id
        WHERE b.state NOT IN ('planned', 'running')
            OR EXISTS (SELECT 1 FROM broadcast_waves w WHERE w.broadcast_id = c.broadcast_id AND w.wave = c.wave AND w.finished_at IS NOT NULL)
        """

    // The ORDER BYs follow the indexes, so that LIMIT walks them instead of the table.

    static func deleteDeliveries(broadcastID: UUID, cutoff: Date, limit: Int) -> PostgresQuery {
        """
        WITH gone AS (
            DELETE FROM deliveries WHERE ctid = ANY (ARRAY(
                SELECT ctid FROM deliveries WHERE broadcast_id = \(broadcastID) AND sent_at < \(cutoff) ORDER BY wave LIMIT \(limit)))
            RETURNING 1)
        SELECT count(*) FROM gone
        """
    }

    static func deleteBatches(broadcastID: UUID, limit: Int) -> PostgresQuery {
        """
        WITH gone AS (
            DELETE FROM broadcast_batches WHERE id = ANY (ARRAY(
                SELECT id FROM broadcast_batches WHERE broadcast_id = \(broadcastID) ORDER BY id LIMIT \(limit)))
            RETURNING 1)
        SELECT count(*) FROM gone
        """
    }

    /// A broadcast's first opens (ready at open), with its deliveries: the only time of an open kept anywhere goes
    /// with the ledger.
    static func deleteOpens(broadcastID: UUID, limit: Int) -> PostgresQuery {
        """
        WITH gone AS (
            DELETE FROM broadcast_opens WHERE ctid = ANY (ARRAY(
                SELECT ctid FROM broadcast_opens WHERE broadcast_id = \(broadcastID) ORDER BY device_id LIMIT \(limit)))
            RETURNING 1)
        SELECT count(*) FROM gone
        """
    }

    static func deleteWaveMembers(broadcastID: UUID, wave: Int16, limit: Int) -> PostgresQuery {
        """
        WITH gone AS (
            DELETE FROM wave_members WHERE ctid = ANY (ARRAY(
                SELECT ctid FROM wave_members WHERE broadcast_id = \(broadcastID) AND wave = \(wave) ORDER BY cohort_key LIMIT \(limit)))
            RETURNING 1)
        SELECT count(*) FROM gone
        """
    }

    static func deleteReceipts(editionID: UUID, cutoff: Date, limit: Int) -> PostgresQuery {
        """
        WITH gone AS (
            DELETE FROM receipts WHERE ctid = ANY (ARRAY(
                SELECT ctid FROM receipts WHERE edition_id = \(editionID) AND received_at < \(cutoff) ORDER BY received_at LIMIT \(limit)))
            RETURNING 1)
        SELECT count(*) FROM gone
        """
    }

    private func count(_ query: PostgresQuery, logger: Logger) async throws -> Int {
        var total = 0
        for try await value in try await client.query(query, logger: logger).decode(Int.self) { total = value }
        return total
    }
}
