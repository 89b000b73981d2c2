import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// A broadcast as the metrics show it (`GET /metrics`): a running one with its progress and how far it lies
/// behind its plan, or one that ended recently with what it never sent. The alert rules read these; a
/// broadcast drops out of them an hour after it ended, which keeps the metrics' labels few.
public struct BroadcastGauges: Sendable, Equatable {
    public var id: UUID
    public var appID: Int
    public var state: BroadcastProgress.State
    /// Over all its waves: targets planned, pushes handed to a provider, pushes accepted.
    public var planned: Int
    public var sent: Int
    public var accepted: Int
    /// Running: how many seconds its sends go out later than planned, over the waves under way (0 when on time).
    /// The later of the most recent slot's lag (`broadcast_waves.behind_seconds`) and the age of the oldest device
    /// that fell due and that no worker has taken yet, which keeps growing while nothing is sent (the slot's lag
    /// only changes when a worker claims a slot).
    public var behindSeconds: Double
    /// Running: about how many devices fell due and no worker has taken yet (at least 1 per cohort whose next
    /// device is due; 0 while the workers keep up, and between waves).
    public var due: Int
    /// Running: the sends per second its plan asks for now, the rates of its waves under way (started, not
    /// finished); 0 between waves.
    public var planRate: Double
    /// Wave-1 targets it never pushed because it ended first (never reached, or skipped for the deadline or the
    /// cancel). Devices skipped for the hourly budget or a provider the app lacks do not count: the first got
    /// pushes elsewhere, the second cannot be sent at all.
    public var unsent: Int
    /// Running: the receipts of the devices it reached, by result, from the receipt tallies (a few seconds behind;
    /// ``ReceiptTallies``).
    public var receipts: [ReceiptResult: Int]

    public init(
        id: UUID,
        appID: Int,
        state: BroadcastProgress.State,
        planned: Int = 0,
        sent: Int = 0,
        accepted: Int = 0,
        behindSeconds: Double = 0,
        due: Int = 0,
        planRate: Double = 0,
        unsent: Int = 0,
        receipts: [ReceiptResult: Int] = [:]
    ) {
        self.id = id
        self.appID = appID
        self.state = state
        self.planned = planned
        self.sent = sent
        self.accepted = accepted
        self.behindSeconds = behindSeconds
        self.due = due
        self.planRate = planRate
        self.unsent = unsent
        self.receipts = receipts
    }
}

extension BroadcastRepository {
    /// The running broadcasts and those that ended at or after `endedSince`, as of `now`, in one query.
    public func gauges(now: Date, endedSince: Date, logger: Logger) async throws -> [BroadcastGauges] {
        let rows = try await client.query(Self.gaugesQuery(now: now, endedSince: endedSince), logger: logger)
        var gauges: [BroadcastGauges] = []
        for try await (id, app, state, planned, sent, accepted, unsent, behind, due, rate, receiptsJSON) in rows.decode(
            (UUID, Int32, String, Int64, Int64, Int64, Int64, Double, Int64, Double, String).self
        ) {
            guard let state = BroadcastProgress.State(rawValue: state) else { continue }
            var receipts: [ReceiptResult: Int] = [:]
            for (result, count) in try Self.counts(json: receiptsJSON, table: "receipt_tallies", key: id.uuidString.lowercased(), column: "count") {
                if let result = ReceiptResult(rawValue: result) { receipts[result] = count }
            }
            gauges.append(
                BroadcastGauges(
                    id: id,
                    appID: Int(app),
                    state: state,
                    planned: Int(planned),
                    sent: Int(sent),
                    accepted: Int(accepted),
                    behindSeconds: max(0, behind),
                    due: Int(due),
                    planRate: rate,
                    unsent: Int(unsent),
                    receipts: receipts
                )
            )
        }
        return gauges
    }

    /// The broadcasts are found through their indexes (the running ones, and `broadcasts_finished`), each read
    /// by its key; its cohorts and waves are few.
    static func gaugesQuery(now: Date, endedSince: Date) -> PostgresQuery {
        """
        SELECT b.id, p.app_id, b.state,
            coalesce(t.planned, 0)::bigint, coalesce(t.sent, 0)::bigint, coalesce(t.accepted, 0)::bigint, coalesce(t.unsent, 0)::bigint,
            coalesce(l.behind, 0)::float8, coalesce(l.due, 0)::bigint, coalesce(r.rate, 0)::float8, coalesce(rt.receipts, '{}')
        FROM (
            SELECT id FROM broadcasts WHERE state = 'running'
            UNION ALL
            SELECT id FROM broadcasts WHERE finished_at >= \(endedSince)
        ) shown
        JOIN broadcasts b ON b.id = shown.id
        JOIN editions e ON e.id = b.edition_id
        JOIN publications p ON p.id = e.publication_id
        LEFT JOIN LATERAL (
            SELECT sum(c.planned) AS planned, sum(c.sent) AS sent, sum(c.accepted) AS accepted,
                sum(
                    greatest(0, c.planned - c.sent - (SELECT coalesce(sum(s.value::integer), 0) FROM jsonb_each_text(c.skipped) s))
                    + coalesce((c.skipped ->> 'deadline')::integer, 0) + coalesce((c.skipped ->> 'cancelled')::integer, 0)
                ) FILTER (WHERE c.wave = 1) AS unsent
            FROM broadcast_cohorts c WHERE c.broadcast_id = b.id
        ) t ON true
        LEFT JOIN LATERAL (
            SELECT max(greatest(w.behind_seconds, extract(epoch FROM \(now) - o.next_at)::float8)) AS behind,
                sum(
                    CASE WHEN o.next_at <= \(now) THEN
                        greatest(1, least(c.planned, floor(extract(epoch FROM \(now) - c.starts_at)::float8 * w.rate)::bigint + 1) - c.next_ordinal)
                    END
                ) AS due
            FROM broadcast_waves w
            LEFT JOIN broadcast_cohorts c ON c.broadcast_id = w.broadcast_id AND c.wave = w.wave AND c.next_key < c.end_key
            LEFT JOIN LATERAL (SELECT c.starts_at + make_interval(secs => c.next_ordinal / w.rate) AS next_at) o ON true
            WHERE w.broadcast_id = b.id AND w.finished_at IS NULL AND w.rate > 0 AND w.starts_at <= \(now) AND b.state = 'running'
        ) l ON true
        LEFT JOIN LATERAL (
            SELECT sum(w.rate) AS rate FROM broadcast_waves w
            WHERE w.broadcast_id = b.id AND w.finished_at IS NULL AND w.starts_at <= \(now) AND b.state = 'running'
        ) r ON true
        LEFT JOIN LATERAL (
            SELECT jsonb_object_agg(t.result, t.n)::text AS receipts FROM (
                SELECT result, sum(count) AS n FROM receipt_tallies
                WHERE edition_id = b.edition_id AND broadcast_id = b.id AND b.state = 'running' GROUP BY result
            ) t
        ) rt ON true
        """
    }
}
