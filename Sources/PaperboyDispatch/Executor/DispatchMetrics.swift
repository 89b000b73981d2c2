import Foundation
import Metrics
import PaperboyCore
import Synchronization

/// The dispatcher's instruments (swift-metrics; `GET /metrics` serves them in Prometheus' format). The alert rules
/// in `docker/prometheus/alerts.yml` and the dashboard in `docker/grafana/` read them (docs/operations.md,
/// "Alerts"):
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
/// - `paperboy_provider_unavailable_since_seconds{app, environment, provider}` (``WorkerHealth``): while this
///   worker's batches find the provider busy or failing and pause their sends to it, when that began (Unix time).
/// - `paperboy_dispatch_lateness_seconds`: how long after its planned instant each group of sends went out.
/// - `paperboy_dispatch_batches_in_flight`, `paperboy_dispatch_send_rate` (this worker's pushes per second
///   over the last advance interval; `rate(paperboy_dispatch_pushes_total[1m])` sums the workers).
/// - `paperboy_database_reached_timestamp_seconds`: when this worker last got an answer from PostgreSQL (Unix
///   time; the process's start until the first). It leases or renews every few seconds, so an age beyond a
///   minute means the database is unreachable or not answering from here; a counting wave does not hold it up.
/// - `paperboy_broadcasts_running`, and per running broadcast (``BroadcastGauges``), labelled `broadcast` and
///   `app`: `paperboy_broadcast_planned`, `paperboy_broadcast_sent` and `paperboy_broadcast_accepted` (all waves),
///   `paperboy_broadcast_receipts{result}` (the receipts of the devices it reached, from the receipt tallies: a few
///   seconds behind; ``ReceiptTallies``),
///   `paperboy_broadcast_behind_seconds` (how late its sends go out), `paperboy_broadcast_due` (devices due that no
///   worker has taken: more than 0 for long means nobody sends) and `paperboy_broadcast_plan_rate` (the sends per
///   second its plan asks for now).
/// - Per broadcast that ended within the hour, `paperboy_broadcast_unsent{broadcast, app, state}`: its wave-1
///   targets never pushed, by how it ended (`completed`, `expired`, `failed`, `cancelled`).
///
/// Every worker reads the same broadcasts from the database and shows the same values (the rules take the `max`
/// over workers). A broadcast's series go when it ends (running ones) or an hour later (`unsent`), so the labels
/// stay as few as the broadcasts of the last hour.
public final class DispatchMetrics: Sendable {
    /// How long an ended broadcast stays in the metrics: long enough for the alert on it to be seen.
    package static let endedShownFor: TimeInterval = 3600

    package let factory: any MetricsFactory
    private let lateness: Metrics.Timer
    private let inFlight: Gauge
    package let sendRate: Gauge
    package let running: Gauge
    private let databaseReached: Gauge
    package let sentSinceTick = Mutex<(count: Int, since: Date?)>((0, nil))
    /// The per-broadcast series the last tick recorded: those missing from the next are removed.
    package let shown = Mutex<Set<Series>>([])
    package let shownHolds = Mutex<Set<Series>>([])

    /// - Parameters:
    ///   - factory: where the instruments go; the process's bootstrapped `MetricsSystem` when nil.
    ///   - started: when the process started, the database's "last reached" until it is.
    public init(factory: (any MetricsFactory)? = nil, started: Date = Date()) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        lateness = Metrics.Timer(label: "paperboy_dispatch_lateness_seconds", dimensions: [], factory: factory)
        inFlight = Gauge(label: "paperboy_dispatch_batches_in_flight", dimensions: [], factory: factory)
        sendRate = Gauge(label: "paperboy_dispatch_send_rate", dimensions: [], factory: factory)
        running = Gauge(label: "paperboy_broadcasts_running", dimensions: [], factory: factory)
        databaseReached = Gauge(label: "paperboy_database_reached_timestamp_seconds", dimensions: [], factory: factory)
        databaseReached.record(started.timeIntervalSince1970)
    }

    package func batch(_ outcomes: [BatchOutcome], kind: String, result: String) {
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
                dimensions: [("kind", kind), ("outcome", key.outcome), ("provider", key.provider)],
                factory: factory
            ).increment(by: count)
        }
        for (reason, count) in skipped {
            Counter(label: "paperboy_dispatch_skipped_total", dimensions: [("reason", reason)], factory: factory).increment(by: count)
        }
        Counter(label: "paperboy_dispatch_batches_total", dimensions: [("result", result)], factory: factory).increment()
        let sent = pushes.values.reduce(0, +)
        sentSinceTick.withLock { $0.count += sent }
    }

    private struct Pushes: Hashable {
        var outcome: String
        var provider: String
    }

    package func late(by seconds: TimeInterval) {
        lateness.recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }

    package func batchesInFlight(_ count: Int) {
        inFlight.record(count)
    }

    /// A broadcast ended as failed, for `cause` (see the type's list).
    package func failed(cause: String) {
        Counter(label: "paperboy_broadcasts_failed_total", dimensions: [("cause", cause)], factory: factory).increment()
    }

    /// The database answered a call. Wall-clock time, whatever the dispatcher's clock: Prometheus compares it
    /// with its own `time()`.
    package func reachedDatabase() {
        databaseReached.record(Date().timeIntervalSince1970)
    }

    /// One gauge series: its name and labels.
    package struct Series: Hashable {
        package var label: String
        package var names: [String]
        package var values: [String]

        package init(_ label: String, _ dimensions: [(String, String)]) {
            self.label = label
            names = dimensions.map(\.0)
            values = dimensions.map(\.1)
        }

        package var dimensions: [(String, String)] { Array(zip(names, values)) }
    }
}
