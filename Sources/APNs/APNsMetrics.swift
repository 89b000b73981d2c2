import Metrics
import PushTransport
import Synchronization

/// The client's swift-metrics instruments. Whatever backend the process bootstrapped (Prometheus in
/// `paperboy serve`) receives them; without one they cost nothing.
///
/// - `apns_requests_total{status, reason}`: answers, and transport failures as status `0` with the
///   failure as reason (`fateUnknown`, `notSent`).
/// - `apns_request_duration_seconds`: from the first write to the final answer, retries included.
/// - `apns_connections`, `apns_streams_in_flight`, `apns_connection_events_total{event}`: the pool's
///   (``PushConnectionMetrics``).
/// - `apns_provider_token_refreshes_total{key_id}`.
/// - `apns_retries_total{reason}`.
final class APNsMetrics: Sendable {
    private let factory: any MetricsFactory
    private let requests = Mutex<[String: Counter]>([:])
    private let retries = Mutex<[String: Counter]>([:])
    private let duration: Metrics.Timer
    private let accepted: Counter
    /// The connection pool's instruments.
    let connections: PushConnectionMetrics

    init(factory: (any MetricsFactory)? = nil) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        duration = Metrics.Timer(label: "apns_request_duration_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
        connections = PushConnectionMetrics(prefix: "apns", factory: factory)
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
