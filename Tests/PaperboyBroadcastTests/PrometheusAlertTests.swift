import APNsSimulator
import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The alert rules (`docker/prometheus/alerts.yml`) evaluated by a real Prometheus (Debian's `prometheus`; `.ci/run`
/// installs it) that scrapes a real `paperboy worker` every second while it sends a broadcast to the APNs simulator:
/// what the person on call would see in Prometheus' alerts, through its HTTP API. Only the rule under test is changed,
/// its threshold and hold shortened to seconds (the rest of the file loads as it is). Loopback only; Prometheus and
/// the worker are killed on every path.
@Suite(
    "alert rules on a real Prometheus scraping a real worker",
    .serialized,
    .enabled(if: FileManager.default.isExecutableFile(atPath: FaultRig.binary.path), "the paperboy binary is built beside the tests"),
    .enabled(if: PrometheusServer.binary != nil, "prometheus is not installed here (apt-get install prometheus; .ci/run installs it)")
)
struct PrometheusAlertTests {
    static let rulesURL = PaperboyBinary.repositoryRoot.appendingPathComponent("docker/prometheus/alerts.yml")

    /// alerts.yml with PaperboyBroadcastBehindPlan's warning at `threshold` seconds held `hold`, instead of 120 s held 3
    /// minutes; fails when the rule is not written as the test expects (then the test would test something else).
    static func rules(behindPlanAbove threshold: Int, hold: String) throws -> String {
        let rules = try String(contentsOf: rulesURL, encoding: .utf8)
        let original = "expr: max by (broadcast, app) (paperboy_broadcast_behind_seconds) > 120\n        for: 3m\n"
        let shortened = "expr: max by (broadcast, app) (paperboy_broadcast_behind_seconds) > \(threshold)\n        for: \(hold)\n"
        try #require(rules.components(separatedBy: original).count == 2, "alerts.yml has the behind-plan warning as the test expects")
        return rules.replacingOccurrences(of: original, with: shortened)
    }

    @Test(
        "APNs hangs mid-broadcast: PaperboyBroadcastBehindPlan, quiet while the worker keeps to the plan, fires in Prometheus naming the broadcast and its app",
        .timeLimit(.minutes(2))
    )
    func behindPlanFiresWhenAPNsHangs() async throws {
        let devices = 3000
        let threshold = 8
        try await FaultRig.with { rig in
            try await FaultTests.withSimulator { simulator in
                _ = try await rig.seed(devices)
                let port = try reserveLoopbackPort()
                let worker = try rig.worker("alerts", endpoint: simulator.url, arguments: ["--port", "\(port)"])
                defer { worker.stop() }
                let prometheus = try PrometheusServer(target: "127.0.0.1:\(port)", rules: try Self.rules(behindPlanAbove: threshold, hold: "2s"))
                defer { prometheus.stop() }
                try await prometheus.waitUntilReady(seconds: 20)
                // The worker is up before the broadcast starts: its first sends are on time.
                try await WorkerProcessTests.waitUntil(seconds: 20) { await prometheus.value(of: #"up{job="paperboy-worker"}"#) == 1 }
                let id = try await rig.startBroadcast(window: 60, cohorts: 1)
                let broadcast = id.uuidString.lowercased()
                let behind = #"max(paperboy_broadcast_behind_seconds{broadcast="\#(broadcast)"})"#

                // On plan (50 a second): the worker's gauge reaches Prometheus, and the alert is neither pending nor firing.
                try await WorkerProcessTests.waitUntil(seconds: 30) { simulator.stats().accepted >= 300 }
                try await WorkerProcessTests.waitUntil(seconds: 20) { await prometheus.value(of: behind) != nil }
                let onPlan = try #require(await prometheus.value(of: behind))
                #expect(onPlan < Double(threshold), "on plan, \(onPlan) s behind")
                #expect(await prometheus.alerts(named: "PaperboyBroadcastBehindPlan") == [], "no alert while on plan")

                // APNs hangs: the worker holds its sends, the devices falling due pile up and the broadcast falls behind.
                await simulator.freeze()
                let frozen = ContinuousClock.now
                var firing: [PrometheusServer.Alert] = []
                do {
                    try await WorkerProcessTests.waitUntil(seconds: 45) {
                        firing = (await prometheus.alerts(named: "PaperboyBroadcastBehindPlan") ?? []).filter { $0.state == "firing" }
                        return !firing.isEmpty
                    }
                } catch {
                    print("[alerts] never fired; behind: \(await prometheus.value(of: behind).map { "\($0) s" } ?? "no value")")
                    print("[alerts] the worker's last lines:\n\(worker.output.split(separator: "\n").suffix(20).joined(separator: "\n"))")
                    print("[alerts] Prometheus' log:\n\(prometheus.output.split(separator: "\n").suffix(20).joined(separator: "\n"))")
                    await simulator.thaw()
                    throw error
                }
                let after = ContinuousClock.now - frozen
                let seen = await prometheus.value(of: behind)
                await simulator.thaw()
                print("[alerts] behind plan: \(onPlan) s on plan; firing \(after) after APNs froze, \(seen ?? -1) s behind")

                let alert = try #require(firing.first)
                #expect(firing.count == 1, "one alert, for the one broadcast: \(firing)")
                #expect(alert.labels["broadcast"] == broadcast)
                #expect(alert.labels["app"] == "\(rig.app.id)")
                #expect(alert.labels["severity"] == "warning")
                #expect(alert.labels["instance"] == nil, "every worker shows the broadcast: the rule keeps none of them")
                #expect(alert.annotations["summary"]?.hasPrefix("Broadcast \(broadcast) (app \(rig.app.id)) is ") == true, "\(alert.annotations)")
                #expect(alert.annotations["summary"]?.hasSuffix(" behind its plan") == true, "\(alert.annotations)")
                #expect(alert.annotations["runbook_url"] == "docs/operations.md#paperboybroadcastbehindplan")
                #expect((alert.value ?? 0) > Double(threshold), "the alert's value is the seconds behind: \(alert.value ?? -1)")
                #expect(await worker.terminate(within: 30) != nil && worker.process.terminationStatus == 0, "SIGTERM still drains and exits 0")
            }
        }
    }
}

/// Debian's `prometheus` on a free loopback port, its configuration, rules and storage in a temporary directory that
/// ``stop()`` removes: it scrapes one target every second (job `paperboy-worker`) and evaluates the rules every second.
final class PrometheusServer: @unchecked Sendable {
    /// `prometheus` on the PATH, or where Debian puts it; nil when it is not installed.
    static let binary: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = path.split(separator: ":").map { "\($0)/prometheus" } + ["/usr/bin/prometheus"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }.map(URL.init(fileURLWithPath:))
    }()

    struct Alert: Sendable, Equatable, CustomStringConvertible {
        var labels: [String: String]
        var annotations: [String: String]
        var state: String
        var value: Double?
        var description: String { "\(state) \(labels)" }
    }

    let process = Process()
    let directory: URL
    let port: Int
    let log: URL

    init(target: String, rules: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-prometheus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try rules.write(to: directory.appendingPathComponent("alerts.yml"), atomically: true, encoding: .utf8)
        try """
        global:
          scrape_interval: 1s
          scrape_timeout: 1s
          evaluation_interval: 1s
        rule_files:
          - alerts.yml
        scrape_configs:
          - job_name: paperboy-worker
            static_configs:
              - targets: ["\(target)"]
        """.write(to: directory.appendingPathComponent("prometheus.yml"), atomically: true, encoding: .utf8)
        port = try reserveLoopbackPort()
        log = directory.appendingPathComponent("prometheus.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        guard let binary = Self.binary else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "prometheus is not installed here"])
        }
        process.executableURL = binary
        process.arguments = [
            "--config.file=\(directory.path)/prometheus.yml",
            "--storage.tsdb.path=\(directory.path)/data",
            "--web.listen-address=127.0.0.1:\(port)",
            "--log.level=warn",
        ]
        process.environment = ["PATH": "/usr/bin:/bin"]
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    /// SIGKILL (a child started from async code cannot receive SIGTERM: its signal mask blocks it), then the directory
    /// goes, unless FAULT_TEST_KEEP_LOGS is set.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if ProcessInfo.processInfo.environment["FAULT_TEST_KEEP_LOGS"] == nil {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    func waitUntilReady(seconds: Int) async throws {
        try await WorkerProcessTests.waitUntil(seconds: seconds) {
            guard process.isRunning, let url = URL(string: "http://127.0.0.1:\(port)/-/ready"),
                let (_, response) = try? await URLSession.shared.data(from: url)
            else { return false }
            return (response as? HTTPURLResponse)?.statusCode == 200
        }
    }

    /// The `data` of an API answer, nil when Prometheus does not answer `success`.
    func api(_ path: String, _ query: [URLQueryItem] = []) async -> Any? {
        var components = URLComponents(string: "http://127.0.0.1:\(port)\(path)")
        components?.queryItems = query.isEmpty ? nil : query
        guard let url = components?.url, let (body, _) = try? await URLSession.shared.data(from: url),
            let answer = try? JSONSerialization.jsonObject(with: body) as? [String: Any], answer["status"] as? String == "success"
        else { return nil }
        return answer["data"]
    }

    /// The value of an instant query that yields one series; nil when it yields none.
    func value(of query: String) async -> Double? {
        guard let data = await api("/api/v1/query", [URLQueryItem(name: "query", value: query)]) as? [String: Any],
            let result = data["result"] as? [[String: Any]], let sample = result.first?["value"] as? [Any], sample.count == 2,
            let text = sample[1] as? String
        else { return nil }
        return Double(text)
    }

    /// The alerts named `name` that are pending or firing (`/api/v1/alerts`); nil when Prometheus does not answer.
    func alerts(named name: String) async -> [Alert]? {
        guard let data = await api("/api/v1/alerts") as? [String: Any], let alerts = data["alerts"] as? [[String: Any]] else { return nil }
        return alerts.compactMap { alert in
            let labels = alert["labels"] as? [String: String] ?? [:]
            guard labels["alertname"] == name else { return nil }
            return Alert(
                labels: labels,
                annotations: alert["annotations"] as? [String: String] ?? [:],
                state: alert["state"] as? String ?? "",
                value: (alert["value"] as? String).flatMap(Double.init)
            )
        }
    }
}
