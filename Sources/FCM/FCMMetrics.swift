import Metrics
import PushTransport
import Synchronization

/// The FCM client's swift-metrics instruments, named like the APNs client's:
///
/// - `fcm_requests_total{status, code}`: answers, and transport failures as status `0` with the failure as
///   code (`fateUnknown`, `notSent`).
/// - `fcm_request_duration_seconds`: from the first write to the final answer, retries included.
/// - `fcm_connections`, `fcm_streams_in_flight`, `fcm_connection_events_total{event}`: the pool's.
/// - `fcm_token_fetches_total{result}`: access tokens fetched (`ok`, `failed`); about one an hour.
/// - `fcm_retries_total{code}`.
final class FCMMetrics: Sendable {
    private let factory: any MetricsFactory
    private let counters = Mutex<[String: Counter]>([:])
    private let duration: Metrics.Timer
    private let accepted: Counter
    let connections: PushConnectionMetrics

    init(factory: (any MetricsFactory)? = nil) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        duration = Metrics.Timer(label: "fcm_request_duration_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
        accepted = Counter(label: "fcm_requests_total", dimensions: [("status", "200"), ("code", "")], factory: factory)
        connections = PushConnectionMetrics(prefix: "fcm", factory: factory)
    }

    func record(_ outcome: FCMOutcome, nanoseconds: Int64) {
        duration.recordNanoseconds(nanoseconds)
        switch outcome {
        case .accepted: accepted.increment()
        case .rejected(let rejection):
            counter("fcm_requests_total", [("status", String(rejection.status)), ("code", "\(rejection.code)")]).increment()
        case .fateUnknown: counter("fcm_requests_total", [("status", "0"), ("code", "fateUnknown")]).increment()
        case .notSent: counter("fcm_requests_total", [("status", "0"), ("code", "notSent")]).increment()
        }
    }

    func retried(_ code: FCMErrorCode) {
        counter("fcm_retries_total", [("code", "\(code)")]).increment()
    }

    func tokenFetched(succeeded: Bool) {
        counter("fcm_token_fetches_total", [("result", succeeded ? "ok" : "failed")]).increment()
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        let key = label + dimensions.map { " " + $0.1 }.joined()
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: label, dimensions: dimensions, factory: factory)
            counters[key] = counter
            return counter
        }
    }
}
