import Foundation
import PaperboyTesting
import Testing

/// The alert rules (`docker/prometheus/alerts.yml`), their unit tests, Prometheus' configuration and the Grafana
/// dashboard, checked with the real `promtool` (Debian's `prometheus` package; `.ci/run` installs it): the rules
/// and every PromQL expression of the dashboard parse, the rules' tests pass and cover every alert firing and not
/// firing, each alert says what the person on call needs and links a runbook section that exists, and the metrics
/// they read are ones Paperboy exports. A real Prometheus evaluates the rules against a real worker in
/// `PaperboyBroadcastTests.PrometheusAlertTests`.
@Suite("Prometheus rules and the Grafana dashboard")
struct MonitoringFilesTests {
    static let root = PaperboyBinary.repositoryRoot
    static let prometheusDirectory = root.appendingPathComponent("docker/prometheus")
    static let rulesURL = prometheusDirectory.appendingPathComponent("alerts.yml")
    static let rulesTestURL = prometheusDirectory.appendingPathComponent("alerts.test.yml")
    static let configURL = prometheusDirectory.appendingPathComponent("prometheus.yml")
    static let dashboardURL = root.appendingPathComponent("docker/grafana/dashboards/paperboy.json")
    static let datasourceURL = root.appendingPathComponent("docker/grafana/provisioning/datasources/prometheus.yml")
    static let dashboardProviderURL = root.appendingPathComponent("docker/grafana/provisioning/dashboards/paperboy.yml")
    static let runbookURL = root.appendingPathComponent("docs/operations.md")

    /// `promtool` on the PATH (or where Debian puts it); nil when Prometheus is not installed here.
    static let promtool: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = path.split(separator: ":").map { "\($0)/promtool" } + ["/usr/bin/promtool"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }.map(URL.init(fileURLWithPath:))
    }()
    static let promtoolMissing = "promtool is not installed here (apt-get install prometheus; .ci/run installs it)"

    static func runPromtool(_ arguments: [String]) async throws -> CommandRun {
        let promtool = try #require(promtool)
        return try await CommandRun.run(promtool, arguments, environment: ProcessInfo.processInfo.environment)
    }

    // MARK: promtool

    @Test(
        "promtool check rules: alerts.yml is valid, its 12 rules and their PromQL",
        .enabled(if: promtool != nil, Comment(rawValue: promtoolMissing))
    )
    func rulesCheck() async throws {
        let result = try await Self.runPromtool(["check", "rules", Self.rulesURL.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("SUCCESS: \(try Self.alertRules().count) rules found"), "\(result.output)")
    }

    @Test("promtool test rules: alerts.test.yml passes", .enabled(if: promtool != nil, Comment(rawValue: promtoolMissing)))
    func rulesUnitTests() async throws {
        let result = try await Self.runPromtool(["test", "rules", Self.rulesTestURL.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("SUCCESS"), "\(result.output)")
    }

    @Test(
        "promtool check config: prometheus.yml is valid and loads alerts.yml",
        .enabled(if: promtool != nil, Comment(rawValue: promtoolMissing))
    )
    func configCheck() async throws {
        let result = try await Self.runPromtool(["check", "config", Self.configURL.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("1 rule files found"), "\(result.output)")
    }

    @Test(
        "the dashboard: promtool parses every PromQL expression of every panel",
        .enabled(if: promtool != nil, Comment(rawValue: promtoolMissing))
    )
    func dashboardExpressionsParse() async throws {
        let targets = try Self.dashboardTargets()
        #expect(targets.count >= 15)
        // Each expression as a recording rule: `check rules` parses it with Prometheus' own parser.
        var rules = "groups:\n  - name: dashboard\n    rules:\n"
        for target in targets {
            rules += "      - record: dashboard:panel_\(target.panel)_\(target.refID)\n"
            rules += "        expr: \(try Self.jsonString(target.expr))\n"
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-dashboard-rules-\(UUID().uuidString).yml")
        try rules.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await Self.runPromtool(["check", "rules", file.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("SUCCESS: \(targets.count) rules found"), "\(result.output)")

        // The check can fail: a broken expression is refused.
        try "groups:\n  - name: broken\n    rules:\n      - record: broken\n        expr: \"sum by (le (rate(x[5m]))\"\n"
            .write(to: file, atomically: true, encoding: .utf8)
        let broken = try await Self.runPromtool(["check", "rules", file.path])
        #expect(broken.status != 0, "\(broken.output)")
    }

    // MARK: what each alert says

    @Test("every alert has a severity, a summary and a description naming its subject, and a runbook section that exists")
    func alertsAreComplete() throws {
        let rules = try Self.alertRules()
        #expect(rules.count >= 12)
        let anchors = try Self.runbookAnchors()
        let firingLabels = try Self.firingLabels()
        #expect(firingLabels["PaperboyBroadcastBehindPlan"] == ["broadcast", "app", "severity"])
        let required = [
            "PaperboyBroadcastBehindPlan", "PaperboyBroadcastNotSending", "PaperboyBroadcastFailed", "PaperboyBroadcastExpiredUnsent",
            "PaperboyWorkerUnableToSend", "PaperboyAPNsErrors", "PaperboyFCMErrors", "PaperboyDatabaseUnreachable", "PaperboyReceiptsStopped",
        ]
        #expect(Set(required).isSubset(of: Set(rules.map(\.name))), "the alerts the on-call runbook promises: \(rules.map(\.name))")
        for rule in rules {
            #expect(["critical", "warning"].contains(rule.node["labels"]?["severity"]?.scalar ?? ""), "\(rule.name): severity critical or warning")
            let annotations = rule.node["annotations"]?.map ?? [:]
            for key in ["summary", "description", "runbook_url"] {
                let text = annotations[key]?.scalar ?? ""
                #expect(!text.isEmpty, "\(rule.name): a \(key) annotation")
            }
            // The subject's labels that the alert carries (as its unit tests see them firing) are named in the summary:
            // the broadcast, the app, the worker.
            let summary = annotations["summary"]?.scalar ?? ""
            for label in firingLabels[rule.name, default: []] where ["broadcast", "app", "instance"].contains(label) {
                #expect(summary.contains("$labels.\(label)"), "\(rule.name): its summary names the \(label)")
            }
            let url = annotations["runbook_url"]?.scalar ?? ""
            #expect(url.hasPrefix("docs/operations.md#"), "\(rule.name): runbook_url points into docs/operations.md: \(url)")
            let anchor = String(url.split(separator: "#", maxSplits: 1).last ?? "")
            #expect(anchors.contains(anchor), "\(rule.name): docs/operations.md has a section #\(anchor)")
            #expect(anchor == rule.name.lowercased(), "\(rule.name): its runbook section is named after it")
        }
    }

    @Test("alerts.test.yml sees every alert firing and not firing, and every severity of an alert firing")
    func rulesTestsCoverEveryAlert() throws {
        let tests = try YAMLNode.parse(String(contentsOf: Self.rulesTestURL, encoding: .utf8))
        #expect(tests["rule_files"]?.list?.compactMap(\.scalar) == ["alerts.yml"])
        var firing: [String: Set<String>] = [:]
        var quiet = Set<String>()
        for group in tests["tests"]?.list ?? [] {
            for check in group["alert_rule_test"]?.list ?? [] {
                let name = try #require(check["alertname"]?.scalar)
                let expected = check["exp_alerts"]?.list ?? []
                if expected.isEmpty { quiet.insert(name) }
                for alert in expected {
                    firing[name, default: []].insert(alert["exp_labels"]?["severity"]?.scalar ?? "")
                }
            }
        }
        for rule in try Self.alertRules() {
            let severity = rule.node["labels"]?["severity"]?.scalar ?? ""
            #expect(firing[rule.name]?.contains(severity) == true, "\(rule.name) (\(severity)) is seen firing")
            #expect(quiet.contains(rule.name), "\(rule.name) is seen not firing")
        }
    }

    @Test("the metrics the rules and the dashboard read are exported by Paperboy (or Hummingbird's middleware, or Prometheus)")
    func metricsExist() throws {
        var text = try String(contentsOf: Self.rulesURL, encoding: .utf8)
        text += try Self.dashboardTargets().map(\.expr).joined(separator: "\n")
        let sources = try Self.swiftSources()
        let names = Set(
            text.matches(of: /\b(?:paperboy|apns|fcm)_[a-z_]+\b/).map { match in
                String(match.output).replacing(/_(bucket|sum|count)$/, with: "")
            }
        )
        #expect(names.count >= 15, "\(names.sorted())")
        // The providers' client metrics are one generic's, named `<service>_<metric>` (PushClientMetrics), with the
        // service `APNs` or `FCM` lowercased.
        let services = ["apns": "APNs", "fcm": "FCM"]
        for name in names.sorted() {
            if let (service, metric) = name.firstMatch(of: /^(apns|fcm)_(.+)$/).map({ (String($0.1), String($0.2)) }),
                !sources.contains("\"\(name)\"")
            {
                #expect(sources.contains("static let service = \"\(services[service] ?? "")\""), "\(name): a provider \(service)")
                #expect(
                    sources.contains("\\(prefix)_\(metric)\"") || sources.contains("counter(\"\(metric)\""),
                    "\(name) is a metric the providers' generic client records"
                )
            } else {
                #expect(sources.contains("\"\(name)\""), "\(name) is a metric some source file records")
            }
        }
        // Hummingbird's MetricsMiddleware, which the API installs, records the request metrics (dots become underscores).
        #expect(sources.contains("MetricsMiddleware()"))
        let hummingbird = ["hb_requests", "http_server_request_duration"]
        for name in hummingbird {
            #expect(text.contains(name), "the dashboard shows \(name)")
        }
        let unknown = Set(text.matches(of: /\b(?:hb|http_server)_[a-z_]+\b/).map { String($0.output).replacing(/_(bucket|sum|count)$/, with: "") })
            .subtracting(hummingbird)
        #expect(unknown.isEmpty, "request metrics Hummingbird does not record: \(unknown.sorted())")
    }

    // MARK: the dashboard and its provisioning

    @Test("the dashboard: JSON Grafana provisions, panels with unique ids and places, every query on the provisioned data source")
    func dashboardStructure() throws {
        let dashboard = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.dashboardURL)) as? [String: Any])
        #expect(dashboard["uid"] as? String == "paperboy")
        #expect(!(dashboard["title"] as? String ?? "").isEmpty)
        #expect(dashboard["schemaVersion"] as? Int ?? 0 >= 36)
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let ids = panels.compactMap { $0["id"] as? Int }
        #expect(ids.count == panels.count && Set(ids).count == ids.count, "every panel has its own id")
        for panel in panels {
            let title = panel["title"] as? String ?? ""
            #expect(!title.isEmpty, "every panel has a title")
            let place = panel["gridPos"] as? [String: Int] ?? [:]
            #expect(["h", "w", "x", "y"].allSatisfy { place[$0] != nil }, "\(title): a grid position")
            #expect((place["x"] ?? 0) + (place["w"] ?? 0) <= 24, "\(title): within the 24 columns")
        }
        let datasource = try YAMLNode.parse(String(contentsOf: Self.datasourceURL, encoding: .utf8))
        let source = try #require(datasource["datasources"]?.list?.first)
        #expect(source["type"]?.scalar == "prometheus")
        #expect(source["url"]?.scalar == "http://prometheus:9090", "the compose service's Prometheus")
        let uid = try #require(source["uid"]?.scalar)
        for target in try Self.dashboardTargets() {
            #expect(target.datasourceUID == uid, "panel \(target.panel) \(target.refID) queries the provisioned data source \(uid)")
        }
        // What the person on call asked for, each in a panel.
        let titles = panels.compactMap { $0["title"] as? String }.joined(separator: "\n")
        for wanted in [
            "against the plan", "Progress", "Behind plan", "APNs", "FCM", "Receipts", "unable to send", "API requests", "API latency", "PostgreSQL",
        ] {
            #expect(titles.contains(wanted), "a panel for \(wanted)")
        }

        let provider = try YAMLNode.parse(String(contentsOf: Self.dashboardProviderURL, encoding: .utf8))
        let path = try #require(provider["providers"]?.list?.first?["options"]?["path"]?.scalar)
        let compose = try YAMLNode.parse(String(contentsOf: Self.root.appendingPathComponent("docker/compose.yaml"), encoding: .utf8))
        let grafanaVolumes = compose["services"]?["grafana"]?["volumes"]?.list?.compactMap(\.scalar) ?? []
        #expect(grafanaVolumes.contains("./grafana/dashboards:\(path):ro"), "compose mounts the dashboards where the provider reads them, read-only")
        #expect(grafanaVolumes.contains("./grafana/provisioning:/etc/grafana/provisioning:ro"))
    }

    @Test(
        "compose.yaml: Prometheus and Grafana pinned, their files read-only, no admin password in the file, the scrape ports those serve and worker listen on"
    )
    func composeMonitoring() throws {
        let compose = try YAMLNode.parse(String(contentsOf: Self.root.appendingPathComponent("docker/compose.yaml"), encoding: .utf8))
        let services = try #require(compose["services"]?.map)
        let prometheus = try #require(services["prometheus"])
        let grafana = try #require(services["grafana"])
        for (name, service) in [("prometheus", prometheus), ("grafana", grafana)] {
            let image = service["image"]?.scalar ?? ""
            #expect(image.range(of: #":v?\d+\.\d+\.\d+$"#, options: .regularExpression) != nil, "\(name): image pinned to a version: \(image)")
        }
        #expect(prometheus["volumes"]?.list?.compactMap(\.scalar).contains("./prometheus:/etc/prometheus:ro") == true)
        #expect(prometheus["command"]?.list?.compactMap(\.scalar).contains("--config.file=/etc/prometheus/prometheus.yml") == true)

        let environment = grafana["environment"]?.map ?? [:]
        #expect(environment["GF_SECURITY_ADMIN_PASSWORD"] == nil, "no admin password in compose.yaml")
        let passwordFile = try #require(environment["GF_SECURITY_ADMIN_PASSWORD__FILE"]?.scalar)
        #expect(passwordFile.hasPrefix("/run/secrets/"))
        let secret = String(passwordFile.dropFirst("/run/secrets/".count))
        #expect(grafana["secrets"]?.list?.compactMap(\.scalar).contains(secret) == true, "grafana mounts the \(secret) secret")
        #expect(compose["secrets"]?[secret]?["file"]?.scalar == "./secrets/\(secret)", "kept in docker/secrets/ like the others")

        // Prometheus scrapes each paperboy service on the port its command listens on, as jobs the rules expect.
        let config = try YAMLNode.parse(String(contentsOf: Self.configURL, encoding: .utf8))
        #expect(config["rule_files"]?.list?.compactMap(\.scalar) == ["alerts.yml"])
        let jobs = config["scrape_configs"]?.list ?? []
        for name in ["serve", "worker"] {
            let command = DockerFilesTests.command(of: try #require(services[name]))
            // /metrics moves to --admin-port when there is one (it names apps and broadcasts: not for the public port).
            let port = try #require((command.firstIndex(of: "--admin-port") ?? command.firstIndex(of: "--port")).map { command[$0 + 1] })
            let job = jobs.first { $0["dns_sd_configs"]?.list?.first?["names"]?.list?.compactMap(\.scalar) == [name] }
            #expect(job?["job_name"]?.scalar == "paperboy-\(name)", "a job paperboy-\(name)")
            #expect(job?["dns_sd_configs"]?.list?.first?["port"]?.scalar == port, "\(name) scraped on its metrics port \(port)")
        }
    }

    @Test(
        "alerts.yml, alerts.test.yml, prometheus.yml and the provisioning files: PyYAML reads them as the tests' own reader does",
        .enabled("python3 with PyYAML") { await DockerFilesTests.pyYAMLAvailable }
    )
    func filesAgreeWithPyYAML() async throws {
        for url in [Self.rulesURL, Self.rulesTestURL, Self.configURL, Self.datasourceURL, Self.dashboardProviderURL] {
            let ours = try YAMLNode.parse(String(contentsOf: url, encoding: .utf8))
            let python = try await CommandRun.run(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["python3", "-c", DockerFilesTests.pyYAMLScript, url.path],
                environment: ProcessInfo.processInfo.environment
            )
            #expect(python.status == 0, "\(python.output)")
            #expect(try YAMLNode(json: JSONSerialization.jsonObject(with: Data(python.output.utf8))) == ours, "\(url.lastPathComponent)")
        }
    }

    // MARK: helpers

    struct AlertRule {
        var name: String
        var node: YAMLNode
    }

    /// The alerting rules of alerts.yml, in order.
    static func alertRules() throws -> [AlertRule] {
        let rules = try YAMLNode.parse(String(contentsOf: rulesURL, encoding: .utf8))
        return (rules["groups"]?.list ?? []).flatMap { $0["rules"]?.list ?? [] }.compactMap { rule in
            rule["alert"]?.scalar.map { AlertRule(name: $0, node: rule) }
        }
    }

    /// Per alert, the labels its firing alerts carry in alerts.test.yml (which promtool checks are exactly theirs).
    static func firingLabels() throws -> [String: Set<String>] {
        let tests = try YAMLNode.parse(String(contentsOf: rulesTestURL, encoding: .utf8))
        var labels: [String: Set<String>] = [:]
        for group in tests["tests"]?.list ?? [] {
            for check in group["alert_rule_test"]?.list ?? [] {
                let name = try #require(check["alertname"]?.scalar)
                for alert in check["exp_alerts"]?.list ?? [] {
                    labels[name, default: []].formUnion((alert["exp_labels"]?.map ?? [:]).keys)
                }
            }
        }
        return labels
    }

    struct Target {
        var panel: Int
        var refID: String
        var expr: String
        var datasourceUID: String?
    }

    /// Every query of every panel of the dashboard.
    static func dashboardTargets() throws -> [Target] {
        let dashboard = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dashboardURL)) as? [String: Any])
        var targets: [Target] = []
        for panel in dashboard["panels"] as? [[String: Any]] ?? [] {
            let id = panel["id"] as? Int ?? -1
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                let expr = try #require(target["expr"] as? String, "panel \(id): every query has a PromQL expr")
                let datasource = (target["datasource"] as? [String: Any] ?? panel["datasource"] as? [String: Any])?["uid"] as? String
                targets.append(Target(panel: id, refID: target["refId"] as? String ?? "?", expr: expr, datasourceUID: datasource))
            }
        }
        return targets
    }

    /// The anchors GitHub gives docs/operations.md's headings: lower case, punctuation dropped, spaces as hyphens.
    static func runbookAnchors() throws -> Set<String> {
        let text = try String(contentsOf: runbookURL, encoding: .utf8)
        var anchors = Set<String>()
        for line in text.split(separator: "\n") where line.hasPrefix("#") {
            let heading = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            let slug = heading.lowercased().filter { $0.isLetter || $0.isNumber || $0 == " " || $0 == "-" || $0 == "_" }
            anchors.insert(slug.replacingOccurrences(of: " ", with: "-"))
        }
        return anchors
    }

    /// Every Swift file under Sources, concatenated.
    static func swiftSources() throws -> String {
        let sources = root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        return try files.filter { $0.pathExtension == "swift" }.map { try String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
    }

    /// `text` as a double-quoted YAML (and JSON) string.
    static func jsonString(_ text: String) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed, .withoutEscapingSlashes]), as: UTF8.self)
    }
}
