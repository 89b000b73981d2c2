import Foundation
import Metrics
import PaperboyCore
import PaperboyStore
import Synchronization

/// The dispatcher's instruments (swift-metrics; `GET /metrics` serves them in Prometheus' format):
///
/// - `paperboy_dispatch_pushes_total{kind, outcome, provider}`: pushes handed to APNs or FCM by this worker,
///   by push kind (`background`, `alert`), outcome (`accepted`, `rejected`, `fateUnknown`, `notSent`) and
///   provider (`apns`, `fcm`); the providers' reasons are in `apns_requests_total{status, reason}` and
///   `fcm_requests_total{status, code}`.
/// - `paperboy_dispatch_skipped_total{reason}`: planned devices not sent (`hourlyBudget`, `deadline`).
/// - `paperboy_dispatch_batches_total{result}`: batches `recorded`, `givenBack` (a drain, or a provider this
///   worker cannot send through: the rest went back to the cohort), `lost` (the lease was taken over first) or
///   `failed` (left to their lease).
/// - `paperboy_broadcasts_failed_total{cause}`: broadcasts this worker ended as failed: `push` (a push that cannot be
///   built), `data` (an app, edition or options that cannot be read), `unsendable` (no worker could send for the app).
/// - `paperboy_worker_unable_to_send{app, provider, reason}` (``SenderHealth``): 1 while this worker cannot send for
///   the app through the provider (`load`: its credentials cannot be loaded here; `refused`: the provider refused them).
/// - `paperboy_dispatch_lateness_seconds`: how long after its planned instant each group of sends went out.
/// - `paperboy_dispatch_batches_in_flight`, `paperboy_dispatch_send_rate` (this worker's pushes per second
///   over the last advance interval; `rate(paperboy_dispatch_pushes_total[1m])` sums the workers).
/// - `paperboy_broadcasts_running`, and per running broadcast `paperboy_broadcast_planned`,
///   `paperboy_broadcast_sent` and `paperboy_broadcast_accepted{broadcast}` (all waves), and
///   `paperboy_broadcast_receipts{broadcast, result}`: the receipts of the devices it reached, from the receipt
///   tallies (a few seconds behind; ``ReceiptTallies``).
final class DispatchMetrics: Sendable {
    private let lateness = Timer(label: "paperboy_dispatch_lateness_seconds")
    private let inFlight = Gauge(label: "paperboy_dispatch_batches_in_flight")
    private let sendRate = Gauge(label: "paperboy_dispatch_send_rate")
    private let running = Gauge(label: "paperboy_broadcasts_running")
    private let sentSinceTick = Mutex<(count: Int, since: Date?)>((0, nil))

    func batch(_ outcomes: [BatchOutcome], kind: String, result: String) {
        var pushes: [Pushes: Int] = [:]
        var skipped: [String: Int] = [:]
        for outcome in outcomes {
            let provider = outcome.provider.rawValue
            switch outcome.result {
            case .accepted: pushes[Pushes(outcome: "accepted", provider: provider), default: 0] += 1
            case .rejected: pushes[Pushes(outcome: "rejected", provider: provider), default: 0] += 1
            case .fateUnknown: pushes[Pushes(outcome: "fateUnknown", provider: provider), default: 0] += 1
            case .notSent: pushes[Pushes(outcome: "notSent", provider: provider), default: 0] += 1
            case .skipped(let reason): skipped[reason.rawValue, default: 0] += 1
            }
        }
        for (key, count) in pushes {
            Counter(
                label: "paperboy_dispatch_pushes_total",
                dimensions: [("kind", kind), ("outcome", key.outcome), ("provider", key.provider)]
            ).increment(by: count)
        }
        for (reason, count) in skipped {
            Counter(label: "paperboy_dispatch_skipped_total", dimensions: [("reason", reason)]).increment(by: count)
        }
        Counter(label: "paperboy_dispatch_batches_total", dimensions: [("result", result)]).increment()
        let sent = pushes.values.reduce(0, +)
        sentSinceTick.withLock { $0.count += sent }
    }

    private struct Pushes: Hashable {
        var outcome: String
        var provider: String
    }

    func late(by seconds: TimeInterval) {
        lateness.recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }

    func batchesInFlight(_ count: Int) {
        inFlight.record(count)
    }

    /// A broadcast ended as failed, for `cause` (see the type's list).
    func failed(cause: String) {
        Counter(label: "paperboy_broadcasts_failed_total", dimensions: [("cause", cause)]).increment()
    }

    /// Once per advance: the send rate since the last one, and the running broadcasts' totals.
    func tick(now: Date, running broadcasts: [BroadcastTotals]) {
        let (count, since) = sentSinceTick.withLock { state in
            defer { state = (0, now) }
            return state
        }
        if let since, now > since { sendRate.record(Double(count) / now.timeIntervalSince(since)) }
        running.record(broadcasts.count)
        for broadcast in broadcasts {
            let id = broadcast.id.uuidString.lowercased()
            Gauge(label: "paperboy_broadcast_planned", dimensions: [("broadcast", id)]).record(broadcast.planned)
            Gauge(label: "paperboy_broadcast_sent", dimensions: [("broadcast", id)]).record(broadcast.sent)
            Gauge(label: "paperboy_broadcast_accepted", dimensions: [("broadcast", id)]).record(broadcast.accepted)
            for result in ReceiptResult.allCases {
                Gauge(label: "paperboy_broadcast_receipts", dimensions: [("broadcast", id), ("result", result.rawValue)])
                    .record(broadcast.receipts[result] ?? 0)
            }
        }
    }
}
