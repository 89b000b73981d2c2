import Foundation
import Logging
import Metrics
import Prometheus

extension LoggingSystem {
    /// Logs to standard error at `LOG_LEVEL` (trace, debug, info, notice, warning, error; default info),
    /// as text, or with `LOG_FORMAT=json` as one JSON object per line for log shippers.
    static func bootstrapPaperboy() {
        let environment = ProcessInfo.processInfo.environment
        let level = environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        let json = environment["LOG_FORMAT"]?.lowercased() == "json"
        bootstrap { label in
            if json {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

extension MetricsSystem {
    /// Makes Prometheus the metrics backend of the process and returns its registry, which `GET /metrics`
    /// serves.
    static func bootstrapPrometheus() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }
}

/// One JSON object per line on standard error: `time`, `level`, `label`, `message`, `source`, and the
/// metadata (e.g. `hb.request.id`, which Hummingbird puts on every line of a request).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(metadataProvider?.get() ?? [:], uniquingKeysWith: { $1 }) { fields[key] = "\(value)" }
        for (key, value) in event.metadata ?? [:] { fields[key] = "\(value)" }
        fields["time"] = Date().formatted(.iso8601)
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = "\(event.message)"
        fields["source"] = event.source
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(fields) else { return }
        line.append(UInt8(ascii: "\n"))
        FileHandle.standardError.write(line)
    }
}
