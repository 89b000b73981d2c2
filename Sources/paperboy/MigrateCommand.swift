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

    @Option(
        name: .customLong("audit-append-only-for"),
        help: ArgumentHelp(
            "After migrating, make the audit log append-only for this role: the one serve connects as, not the owner migrating (docs/operations.md).",
            valueName: "role"
        )
    )
    var auditAppendOnlyFor: String?

    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let role = auditAppendOnlyFor, role.range(of: #"^[a-z_][a-z0-9_]{0,62}$"#, options: .regularExpression) == nil {
            throw ValidationError("--audit-append-only-for: \(role) is not a role name of lower-case letters, digits and _")
        }
        if status, auditAppendOnlyFor != nil { throw ValidationError("--audit-append-only-for: not with --status, which changes nothing") }
    }

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
                if let role = auditAppendOnlyFor {
                    do {
                        try await AuditRepository(client: client).makeAppendOnly(for: role, logger: logger)
                    } catch let error as StoreError {
                        throw CommandError("--audit-append-only-for: \(error.message)")
                    }
                    if !output.json { print("the audit log is append-only for \(role): it adds and reads entries, and changes or deletes none") }
                }
            }
        }
    }
}
