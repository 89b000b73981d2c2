import ArgumentParser
import Foundation
import Logging
import PaperboyStore

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the database migrations that are not applied yet (safe to run again, and from several processes at once)."
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Only show which migrations are applied and which are pending.")
    var status = false

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let logger = Logger(label: "paperboy.migrate")
        let configuration = try database.requiredConfiguration()
        let migrator = Migrator()
        try await withDatabase(configuration, logger: logger) { client in
            if status {
                let status = try await migrator.status(client: client, logger: logger)
                if output.json {
                    try printJSON(["applied": status.applied, "pending": status.pending])
                } else {
                    for name in status.applied { print("applied  \(name)") }
                    for name in status.pending { print("pending  \(name)") }
                    print(status.isCurrent ? "database is current" : "\(status.pending.count) pending: run `paperboy migrate`")
                }
            } else {
                let applied = try await migrator.migrate(client: client, logger: logger)
                if output.json {
                    try printJSON(["applied": applied])
                } else {
                    for name in applied { print("applied  \(name)") }
                    print(applied.isEmpty ? "database is current; nothing to apply" : "applied \(applied.count) migration(s)")
                }
            }
        }
    }
}
