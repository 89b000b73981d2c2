import Foundation
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import Prometheus
import Testing

@testable import PaperboyBroadcast

/// The dispatcher's gauges as `GET /metrics` shows them (a Prometheus registry of the test's own): what the alert
/// rules and the dashboard read.
@Suite("The dispatcher's metrics")
struct DispatchMetricsTests {
    static func text(_ registry: PrometheusCollectorRegistry) -> String {
        String(decoding: registry.emitToBuffer(), as: UTF8.self)
    }

    /// The value of the series `name` with exactly `labels` (in the order given), nil when it is not shown.
    static func value(_ text: String, _ name: String, _ labels: [(String, String)]) -> Double? {
        let prefix = name + (labels.isEmpty ? "" : "{" + labels.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ",") + "}") + " "
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
    }

    @Test(
        "a running broadcast's gauges name it and its app; when it ends they go and its unsent targets show, by how it ended, until it leaves the hour"
    )
    func broadcastGaugesFollowTheBroadcasts() throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = DispatchMetrics(factory: PrometheusMetricsFactory(registry: registry))
        let morning = UUID()
        let evening = UUID()
        let labels = [("broadcast", morning.uuidString.lowercased()), ("app", "3")]
        let eveningLabels = [("broadcast", evening.uuidString.lowercased()), ("app", "4")]
        let now = Date()
        let running = BroadcastGauges(
            id: morning,
            appID: 3,
            state: .running,
            planned: 1000,
            sent: 400,
            accepted: 380,
            behindSeconds: 12.5,
            due: 7,
            planRate: 50
        )
        let other = BroadcastGauges(id: evening, appID: 4, state: .running, planned: 10, behindSeconds: 0, planRate: 2)

        metrics.tick(now: now, broadcasts: [running, other])
        var text = Self.text(registry)
        #expect(Self.value(text, "paperboy_broadcast_behind_seconds", labels) == 12.5, "\(text)")
        #expect(Self.value(text, "paperboy_broadcast_due", labels) == 7)
        #expect(Self.value(text, "paperboy_broadcast_plan_rate", labels) == 50)
        #expect(Self.value(text, "paperboy_broadcast_planned", labels) == 1000)
        #expect(Self.value(text, "paperboy_broadcast_sent", labels) == 400)
        #expect(Self.value(text, "paperboy_broadcast_accepted", labels) == 380)
        #expect(Self.value(text, "paperboy_broadcasts_running", []) == 2)
        #expect(!text.contains("paperboy_broadcast_unsent"))

        // The morning broadcast expired with 25 wave-1 targets never pushed: its running gauges go at once.
        metrics.tick(now: now.addingTimeInterval(1), broadcasts: [BroadcastGauges(id: morning, appID: 3, state: .expired, unsent: 25), other])
        text = Self.text(registry)
        for name in ["behind_seconds", "due", "plan_rate", "planned", "sent", "accepted"] {
            #expect(Self.value(text, "paperboy_broadcast_\(name)", labels) == nil, "\(name) of an ended broadcast is gone")
            #expect(Self.value(text, "paperboy_broadcast_\(name)", eveningLabels) != nil, "\(name) of the running one stays")
        }
        #expect(Self.value(text, "paperboy_broadcast_unsent", labels + [("state", "expired")]) == 25)
        #expect(Self.value(text, "paperboy_broadcasts_running", []) == 1)

        // An hour later the database no longer returns it: nothing of it is left.
        metrics.tick(now: now.addingTimeInterval(3601), broadcasts: [other])
        text = Self.text(registry)
        #expect(!text.contains(morning.uuidString.lowercased()), "\(text)")
        metrics.tick(now: now.addingTimeInterval(3602), broadcasts: [])
        text = Self.text(registry)
        #expect(!text.contains("broadcast=\""), "no broadcast's series left: \(text)")
        #expect(Self.value(text, "paperboy_broadcasts_running", []) == 0)
    }

    @Test("the database's last answer: the process's start until the first, then the wall-clock time of each")
    func databaseReached() throws {
        let registry = PrometheusCollectorRegistry()
        let started = Date(timeIntervalSince1970: 1_700_000_000.5)
        let metrics = DispatchMetrics(factory: PrometheusMetricsFactory(registry: registry), started: started)
        #expect(Self.value(Self.text(registry), "paperboy_database_reached_timestamp_seconds", []) == 1_700_000_000.5, "\(Self.text(registry))")
        let before = Date().timeIntervalSince1970
        metrics.reachedDatabase()
        let value = try #require(Self.value(Self.text(registry), "paperboy_database_reached_timestamp_seconds", []))
        #expect(value >= before && value <= Date().timeIntervalSince1970, "\(value)")
    }
}
