import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyTesting
import Prometheus
import Testing

@Suite("Metrics and listeners")
struct MetricsRoutesTests {
    @Test("GET /metrics serves the registry in Prometheus' text format; without a registry there is no such route")
    func metrics() async throws {
        try await TestDatabase.with { db in
            let registry = PrometheusCollectorRegistry()
            registry.makeCounter(
                descriptor: MetricNameDescriptor(namespace: "paperboy", metricName: "test", unitName: "total", helpText: ""),
                labels: [("result", "newData")]
            ).increment(by: Int64(3))
            var configuration = APIConfiguration(host: "127.0.0.1", port: 0)
            configuration.metrics = registry
            try await buildApplication(client: db.client, configuration: configuration, logger: db.logger).test(.router) { client in
                let response = try await client.send(.get, "/metrics")
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                #expect(response.text.contains(#"paperboy_test_total{result="newData"} 3"#))
            }
            try await buildApplication(client: db.client, configuration: APIConfiguration(host: "127.0.0.1", port: 0), logger: db.logger)
                .test(.router) { client in
                    let response = try await client.send(.get, "/metrics")
                    #expect(response.status == .notFound)
                }
        }
    }

    @Test("a listener serves only its surfaces: admin routes split off, operations only")
    func surfaces() async throws {
        try await TestDatabase.with { db in
            var devicesOnly = APIConfiguration(host: "127.0.0.1", port: 0, adminToken: APIFixture.adminToken)
            devicesOnly.surfaces = [.devices, .operations]
            try await buildApplication(client: db.client, configuration: devicesOnly, logger: db.logger).test(.router) { client in
                let admin: HTTPFields = [.authorization: "Bearer \(APIFixture.adminToken)"]
                let apps = try await client.send(.get, "/v1/apps", headers: admin)
                #expect(apps.status == .notFound)
                let live = try await client.send(.get, "/health/live")
                #expect(live.status == .ok)
                let device = try await client.send(.get, "/v1/devices/\(token())")
                #expect(device.status == .unauthorized)
            }
            var adminOnly = APIConfiguration(host: "127.0.0.1", port: 0, adminToken: APIFixture.adminToken)
            adminOnly.surfaces = [.admin]
            try await buildApplication(client: db.client, configuration: adminOnly, logger: db.logger).test(.router) { client in
                let admin: HTTPFields = [.authorization: "Bearer \(APIFixture.adminToken)"]
                let apps = try await client.send(.get, "/v1/apps", headers: admin)
                #expect(apps.status == .ok)
                let live = try await client.send(.get, "/health/live")
                #expect(live.status == .notFound)
                let device = try await client.send(.get, "/v1/devices/\(token())")
                #expect(device.status == .notFound)
            }
        }
    }
}
