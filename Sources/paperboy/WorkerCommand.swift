import APNs
import ArgumentParser
import Foundation
import Logging
import PaperboyStore
import PostgresNIO
import ServiceLifecycle
import UnixSignals

struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Send broadcasts (no HTTP API) until SIGTERM or SIGINT; then finish the batches held and exit 0.",
        discussion: """
            Run as many workers as you like, on any machines, against one database: they lease batches of
            cohorts from PostgreSQL and pace against the same plan, so the rate holds in total. A worker that
            dies is replaced by the others once its leases expire (--lease).
            """
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var dispatch: DispatchOptions

    func run() async throws {
        LoggingSystem.bootstrapPaperboy()
        let logger = Logger(label: "paperboy.worker")
        let configuration = try database.requiredConfiguration()
        let status = try await withDatabase(configuration, logger: logger) { client in
            try await Migrator().status(client: client, logger: logger)
        }
        guard status.isCurrent else {
            throw CommandError("the database is missing migrations \(status.pending.joined(separator: ", ")): run `paperboy migrate` first")
        }
        let client = configuration.makeClient(logger: logger)
        let (dispatcher, clients) = try dispatch.makeDispatcher(client: client, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: client),
                    .init(service: dispatcher, successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        do {
            try await group.run()
        } catch {
            await clients.shutdown()
            throw error
        }
        await clients.shutdown()
    }
}
