import Foundation
import Metrics
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import Synchronization

/// The gauges of the broadcasts and holds as the per-second duties read them from PostgreSQL.
extension DispatchMetrics {
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
}
