import APNs
import ArgumentParser
import Foundation
import Logging
import Metrics
import PaperboyAPI
import PaperboyBroadcast
import PaperboyDispatch
import PaperboyStore
import PostgresNIO

struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Send broadcasts (no HTTP API) until SIGTERM or SIGINT; then finish the batches held and exit 0.",
        discussion: """
            Run as many workers as you like, on any machines, against one database: they lease batches of \
            cohorts from PostgreSQL and pace against the same plan, so the rate holds in total. A worker that \
            dies is replaced by the others once its leases expire (--lease).
            """
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var dispatch: DispatchOptions

    @Option(help: "The address of --port.")
    var host = "127.0.0.1"

    @Option(help: "Serve /health/live, /health/ready and /metrics on this port (default: no listener).")
    var port: Int?

    func validate() throws {
        if let port, !(0...65535).contains(port) { throw ValidationError("--port: \(port) is not a TCP port (0-65535)") }
    }

    func run() async throws {
        LoggingSystem.bootstrapPaperboy()
        let registry = MetricsSystem.bootstrapPrometheus()
        let logger = Logger(label: "paperboy.worker")
        let configuration = try database.requiredConfiguration()
        let status = try await withDatabase(configuration, logger: logger) { client in
            try await Migrator().status(client: client, logger: logger)
        }
        guard status.isCurrent else {
            throw CommandError("the database is missing migrations \(status.pending.joined(separator: ", ")): run `paperboy migrate` first")
        }
        let client = configuration.makeClient(logger: logger)
        let (dispatcher, clients, fcmClients) = try dispatch.makeDispatcher(client: client, logger: logger)
        // The group stops services in reverse order: the dispatcher finishes its batches before the APNs and
        // FCM connections close.
        var services: [ProcessServices.Entry] = [
            .init(name: "postgres", service: client),
            .init(name: "apns", service: clients),
            .init(name: "fcm", service: fcmClients),
            .init(name: "dispatcher", service: dispatcher, endsProcess: true),
        ]
        if let port {
            var operations = APIConfiguration(host: host, port: port)
            // /health/ready says up or down only; why is in the log, the metrics and the console's Workers page.
            operations.surfaces = [.operations, .metrics]
            operations.metrics = registry
            operations.senderProblems = { [health = dispatcher.health] in health.problems }
            let listener = buildApplication(client: client, configuration: operations, logger: logger) { [host] port in
                logger.info("listening", metadata: ["address": "http://\(host):\(port)"])
            }
            services.append(.init(name: "http", service: listener))
        }
        try await ProcessServices.run(services, gracefulStop: try dispatch.gracefulStop(), logger: logger)
    }
}
