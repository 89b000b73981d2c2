import Hummingbird
import NIOCore
import Prometheus

/// `GET /metrics`: every swift-metrics instrument of the process (APNs client, dispatcher, receipts, HTTP
/// requests) in Prometheus' text format, from the registry the process bootstrapped.
struct MetricsRoutes {
    let registry: PrometheusCollectorRegistry

    func add(to router: Router<APIRequestContext>) {
        router.get("metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
            )
        }
    }
}
