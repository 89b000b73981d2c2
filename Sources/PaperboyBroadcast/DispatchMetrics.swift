import Foundation
import Metrics
import PaperboyCore
import PaperboyStore
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
final class DispatchMetrics: Sendable {
    /// How long an ended broadcast stays in the metrics: long enough for the alert on it to be seen.
    static let endedShownFor: TimeInterval = 3600

    private let factory: any MetricsFactory
    private let lateness: Metrics.Timer
    private let inFlight: Gauge
    private let sendRate: Gauge
    private let running: Gauge
    private let databaseReached: Gauge
    private let sentSinceTick = Mutex<(count: Int, since: Date?)>((0, nil))
    /// The per-broadcast series the last tick recorded: those missing from the next are removed.
    private let shown = Mutex<Set<Series>>([])
    private let shownHolds = Mutex<Set<Series>>([])

    /// - Parameters:
    ///   - factory: where the instruments go; the process's bootstrapped `MetricsSystem` when nil.
    ///   - started: when the process started, the database's "last reached" until it is.
    init(factory: (any MetricsFactory)? = nil, started: Date = Date()) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        lateness = Metrics.Timer(label: "paperboy_dispatch_lateness_seconds", dimensions: [], factory: factory)
        inFlight = Gauge(label: "paperboy_dispatch_batches_in_flight", dimensions: [], factory: factory)
        sendRate = Gauge(label: "paperboy_dispatch_send_rate", dimensions: [], factory: factory)
        running = Gauge(label: "paperboy_broadcasts_running", dimensions: [], factory: factory)
        databaseReached = Gauge(label: "paperboy_database_reached_timestamp_seconds", dimensions: [], factory: factory)
        databaseReached.record(started.timeIntervalSince1970)
    }

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

    func late(by seconds: TimeInterval) {
        lateness.recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }

    func batchesInFlight(_ count: Int) {
        inFlight.record(count)
    }

    /// A broadcast ended as failed, for `cause` (see the type's list).
    func failed(cause: String) {
        Counter(label: "paperboy_broadcasts_failed_total", dimensions: [("cause", cause)], factory: factory).increment()
    }

    /// The database answered a call. Wall-clock time, whatever the dispatcher's clock: Prometheus compares it
    /// with its own `time()`.
    func reachedDatabase() {
        databaseReached.record(Date().timeIntervalSince1970)
    }

    /// Once per advance: the send rate since the last one, and the broadcasts' gauges (running ones and those
    /// ended within ``endedShownFor``); the series of broadcasts no longer among them are removed.
    func tick(now: Date, broadcasts: [BroadcastGauges]) {
        let (count, since) = sentSinceTick.withLock { state in
            defer { state = (0, now) }
            return state
        }
        if let since, now > since { sendRate.record(Double(count) / now.timeIntervalSince(since)) }
        running.record(broadcasts.filter { $0.state == .running }.count)
        var series: [Series: Double] = [:]
        for broadcast in broadcasts {
            let labels = [("broadcast", broadcast.id.uuidString.lowercased()), ("app", "\(broadcast.appID)")]
            if broadcast.state == .running {
                series[Series("paperboy_broadcast_planned", labels)] = Double(broadcast.planned)
                series[Series("paperboy_broadcast_sent", labels)] = Double(broadcast.sent)
                series[Series("paperboy_broadcast_accepted", labels)] = Double(broadcast.accepted)
                series[Series("paperboy_broadcast_behind_seconds", labels)] = broadcast.behindSeconds
                series[Series("paperboy_broadcast_due", labels)] = Double(broadcast.due)
                series[Series("paperboy_broadcast_plan_rate", labels)] = broadcast.planRate
                for result in ReceiptResult.allCases {
                    series[Series("paperboy_broadcast_receipts", labels + [("result", result.rawValue)])] =
                        Double(broadcast.receipts[result] ?? 0)
                }
            } else {
                series[Series("paperboy_broadcast_unsent", labels + [("state", broadcast.state.rawValue)])] = Double(broadcast.unsent)
            }
        }
        for (key, value) in series {
            Gauge(label: key.label, dimensions: key.dimensions, factory: factory).record(value)
        }
        let gone = shown.withLock { shown in
            defer { shown = Set(series.keys) }
            return shown.subtracting(series.keys)
        }
        for key in gone {
            Gauge(label: key.label, dimensions: key.dimensions, factory: factory).destroy()
        }
    }

    /// Once per advance: the apps' providers held for a suspected misconfiguration (`paperboy_provider_held`, 1
    /// while held) and the deactivations each holds (`paperboy_deactivations_held`); the series of a hold that ended go.
    func holds(_ holds: [ProviderHold]) {
        var series: [Series: Double] = [:]
        for hold in holds {
            let labels = [("app", "\(hold.appID)"), ("environment", hold.environment.rawValue), ("provider", hold.provider.rawValue)]
            series[Series("paperboy_provider_held", labels + [("answer", hold.answer)])] = 1
            series[Series("paperboy_deactivations_held", labels)] = Double(hold.heldDeactivations)
        }
        for (key, value) in series {
            Gauge(label: key.label, dimensions: key.dimensions, factory: factory).record(value)
        }
        let gone = shownHolds.withLock { shown in
            defer { shown = Set(series.keys) }
            return shown.subtracting(series.keys)
        }
        for key in gone {
            Gauge(label: key.label, dimensions: key.dimensions, factory: factory).destroy()
        }
    }

    /// One gauge series: its name and labels.
    private struct Series: Hashable {
        var label: String
        var names: [String]
        var values: [String]

        init(_ label: String, _ dimensions: [(String, String)]) {
            self.label = label
            names = dimensions.map(\.0)
            values = dimensions.map(\.1)
        }

        var dimensions: [(String, String)] { Array(zip(names, values)) }
    }
}
