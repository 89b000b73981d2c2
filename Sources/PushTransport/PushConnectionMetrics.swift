import Metrics
import Synchronization

/// The connection instruments of one push client, named after its service (`apns`, `fcm`):
///
/// - `<service>_connections`, `<service>_streams_in_flight`: gauges, sampled every 250 ms and on each change.
/// - `<service>_connection_events_total{event}`: `opened`, `closed`, `connect_failed`, `goaway`.
package final class PushConnectionMetrics: Sendable {
    private let connections: Gauge
    private let inFlight: Gauge
    private let opened: Counter
    private let closed: Counter
    private let failed: Counter
    private let goAways: Counter
    private let openConnections = Mutex(0)

    package init(prefix: String, factory: any MetricsFactory) {
        connections = Gauge(label: "\(prefix)_connections", dimensions: [], factory: factory)
        inFlight = Gauge(label: "\(prefix)_streams_in_flight", dimensions: [], factory: factory)
        let events = "\(prefix)_connection_events_total"
        opened = Counter(label: events, dimensions: [("event", "opened")], factory: factory)
        closed = Counter(label: events, dimensions: [("event", "closed")], factory: factory)
        failed = Counter(label: events, dimensions: [("event", "connect_failed")], factory: factory)
        goAways = Counter(label: events, dimensions: [("event", "goaway")], factory: factory)
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
}
