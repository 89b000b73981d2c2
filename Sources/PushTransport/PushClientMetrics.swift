import Metrics
import Synchronization

/// A push client's swift-metrics instruments, named after its service (`apns`, `fcm`). Whatever backend the
/// process bootstrapped (Prometheus in `paperboy serve`) receives them; without one they cost nothing.
///
/// - `<service>_requests_total{status, <reason>}`: answers, and transport failures as status `0` with the failure
///   as reason (`fateUnknown`, `notSent`); the reason dimension is the provider's word for it (`reason`, `code`).
/// - `<service>_request_duration_seconds`: from the call to the final answer, retries included.
/// - `<service>_retries_total{<reason>}`.
/// - `<service>_connections`, `<service>_streams_in_flight`, `<service>_connection_events_total{event}`: the pool's
///   (``PushConnectionMetrics``).
final class PushClientMetrics: Sendable {
    private let factory: any MetricsFactory
    private let prefix: String
    private let reasonDimension: String
    private let counters = Mutex<[String: Counter]>([:])
    private let duration: Metrics.Timer
    private let accepted: Counter
    /// The connection pool's instruments.
    let connections: PushConnectionMetrics

    init(prefix: String, reasonDimension: String, factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        self.prefix = prefix
        self.reasonDimension = reasonDimension
        duration = Metrics.Timer(label: "\(prefix)_request_duration_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
        accepted = Counter(label: "\(prefix)_requests_total", dimensions: [("status", "200"), (reasonDimension, "")], factory: factory)
        connections = PushConnectionMetrics(prefix: prefix, factory: factory)
    }

    func record(_ outcome: PushOutcomeSummary, nanoseconds: Int64) {
        duration.recordNanoseconds(nanoseconds)
        switch outcome {
        case .accepted: accepted.increment()
        case .rejected(let status, let reason, _): counter("requests_total", [("status", String(status)), (reasonDimension, reason)]).increment()
        case .fateUnknown: counter("requests_total", [("status", "0"), (reasonDimension, "fateUnknown")]).increment()
        case .notSent: counter("requests_total", [("status", "0"), (reasonDimension, "notSent")]).increment()
        }
    }

    /// A delivery that ended in `outcome` is sent again.
    func retried(_ outcome: PushOutcomeSummary) {
        let reason =
            switch outcome {
            case .rejected(_, let reason, _): reason
            case .accepted, .fateUnknown, .notSent: outcome.name
            }
        counter("retries_total", [(reasonDimension, reason)]).increment()
    }

    private func counter(_ name: String, _ dimensions: [(String, String)]) -> Counter {
        let key = name + dimensions.map { " " + $0.1 }.joined()
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: "\(prefix)_\(name)", dimensions: dimensions, factory: factory)
            counters[key] = counter
            return counter
        }
    }
}
