import Metrics
import Synchronization

/// The client's swift-metrics instruments. Whatever backend the process bootstrapped (Prometheus in
/// `paperboy serve`) receives them; without one they cost nothing.
///
/// - `apns_requests_total{status, reason}`: answers, and transport failures as status `0` with the
///   failure as reason (`fateUnknown`, `notSent`).
/// - `apns_request_duration_seconds`: from the first write to the final answer, retries included.
/// - `apns_connections`, `apns_streams_in_flight`: gauges, sampled every 250 ms and on each change.
/// - `apns_connection_events_total{event}`: `opened`, `closed`, `connect_failed`, `goaway`.
/// - `apns_provider_token_refreshes_total{key_id}`.
/// - `apns_retries_total{reason}`.
final class APNsMetrics: Sendable {
    private let factory: any MetricsFactory
    private let requests = Mutex<[String: Counter]>([:])
    private let retries = Mutex<[String: Counter]>([:])
    private let duration: Metrics.Timer
    private let connections: Gauge
    private let inFlight: Gauge
    private let opened: Counter
    private let closed: Counter
    private let failed: Counter
    private let goAways: Counter
    private let accepted: Counter
    private let openConnections = Mutex(0)

    init(factory: (any MetricsFactory)? = nil) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        duration = Metrics.Timer(label: "apns_request_duration_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
        connections = Gauge(label: "apns_connections", dimensions: [], factory: factory)
        inFlight = Gauge(label: "apns_streams_in_flight", dimensions: [], factory: factory)
        opened = Counter(label: "apns_connection_events_total", dimensions: [("event", "opened")], factory: factory)
        closed = Counter(label: "apns_connection_events_total", dimensions: [("event", "closed")], factory: factory)
        failed = Counter(label: "apns_connection_events_total", dimensions: [("event", "connect_failed")], factory: factory)
        goAways = Counter(label: "apns_connection_events_total", dimensions: [("event", "goaway")], factory: factory)
        accepted = Counter(label: "apns_requests_total", dimensions: [("status", "200"), ("reason", "")], factory: factory)
    }

    func record(_ outcome: APNsOutcome, nanoseconds: Int64) {
        duration.recordNanoseconds(nanoseconds)
        switch outcome {
        case .accepted: accepted.increment()
        case .rejected(let rejection): counter(status: String(rejection.status), reason: rejection.reason.rawValue).increment()
        case .fateUnknown: counter(status: "0", reason: "fateUnknown").increment()
        case .notSent: counter(status: "0", reason: "notSent").increment()
        }
    }

    func retried(_ reason: APNsReason) {
        let counter = retries.withLock { counters in
            if let counter = counters[reason.rawValue] { return counter }
            let counter = Counter(label: "apns_retries_total", dimensions: [("reason", reason.rawValue)], factory: factory)
            counters[reason.rawValue] = counter
            return counter
        }
        counter.increment()
    }

    func tokenRefreshed(keyID: String) {
        Counter(label: "apns_provider_token_refreshes_total", dimensions: [("key_id", keyID)], factory: factory).increment()
    }

    func connectionOpened() {
        opened.increment()
        connections.record(
            openConnections.withLock {
                $0 += 1
                return $0
            }
        )
    }

    func connectionClosed() {
        closed.increment()
        connections.record(
            openConnections.withLock {
                $0 = max(0, $0 - 1)
                return $0
            }
        )
    }

    func connectFailed() { failed.increment() }
    func goAway() { goAways.increment() }

    func sample(inFlight: Int) {
        self.inFlight.record(inFlight)
    }

    private func counter(status: String, reason: String) -> Counter {
        let key = status + " " + reason
        return requests.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: "apns_requests_total", dimensions: [("status", status), ("reason", reason)], factory: factory)
            counters[key] = counter
            return counter
        }
    }
}
