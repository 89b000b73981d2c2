import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete deliveries and receipts older than the retention, in small batches (`paperboy serve` does it hourly).",
        discussion: """
            Kept whatever their age: the deliveries of broadcasts that are running, finished less than the retention ago, \
            or whose edition's deadline has not passed, and the receipts of editions whose deadline has not passed. \
            The audit log is kept for --audit-retention (a year unless told); where it was made append-only for the \
            role (docs/operations.md), it is left to its owner and the run says so.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: ArgumentHelp("Keep rows younger than this, e.g. 7d or 36h (at least 2h).", valueName: "duration"))
    var retention = "7d"

    @Option(
        name: .customLong("audit-retention"),
        help: ArgumentHelp("Keep audit entries younger than this, e.g. 365d (at least 1d), or `forever`.", valueName: "duration")
    )
    var auditRetention = "365d"

    @Option(name: .customLong("batch-size"), help: "Rows per DELETE statement.")
    var batchSize = 10_000

    @Flag(name: .customLong("dry-run"), help: "Count what would be deleted; delete nothing.")
    var dryRun = false

    @OptionGroup var output: OutputOptions

    func validate() throws {
        _ = try Self.retention(retention)
        _ = try Self.auditRetention(auditRetention)
        guard batchSize > 0 else { throw ValidationError("--batch-size: \(batchSize) is not a positive number of rows") }
    }

    /// `--retention` as a duration. - Throws: `ValidationError` naming the flag.
    static func retention(_ text: String) throws -> Duration {
        let seconds = try DurationFlag.seconds(text, refusal: "--retention: \(text) is not a duration like 7d, 36h or 90m")
        let retention = Duration.seconds(seconds)
        guard retention >= LedgerPruner.minimumRetention else {
            throw ValidationError("--retention: \(text) is shorter than 2h; the hourly push budget reads the last hour of deliveries")
        }
        return retention
    }

    /// `--audit-retention` as a duration, nil for `forever`. - Throws: `ValidationError` naming the flag.
    static func auditRetention(_ text: String) throws -> Duration? {
        if text.trimmingCharacters(in: .whitespaces).lowercased() == "forever" { return nil }
        let seconds = try DurationFlag.seconds(text, refusal: "--audit-retention: \(text) is not a duration like 365d or 90d, nor forever")
        let retention = Duration.seconds(seconds)
        guard retention >= LedgerPruner.Configuration.minimumAuditRetention else {
            throw ValidationError("--audit-retention: \(text) is shorter than 1d")
        }
        return retention
    }

    func run() async throws {
        let logger = Logger(label: "paperboy.prune")
        let configuration = LedgerPruner.Configuration(
            retention: try Self.retention(retention),
            batchSize: batchSize,
            auditRetention: try Self.auditRetention(auditRetention)
        )
        let result = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
            let pruner = try LedgerPruner(client: client, configuration: configuration)
            return try await pruner.prune(
                now: Date(),
                dryRun: dryRun,
                progress: { so in
                    FileHandle.standardError.write(
                        Data(
                            "pruned \(so.deliveries.formatted()) deliveries, \(so.receipts.formatted()) receipts, \(so.batches.formatted()) batch rows\n"
                                .utf8
                        )
                    )
                },
                logger: logger
            )
        }
        if output.json { return try printJSON(result) }
        let verb = dryRun ? "would delete" : "deleted"
        print(
            "\(verb) \(result.deliveries.formatted()) deliveries and \(result.receipts.formatted()) receipts older than \(result.cutoff.formatted(.iso8601)), and \(result.batches.formatted()) batch rows of the broadcasts they belonged to"
                + (result.waveMembers > 0 ? "; \(result.waveMembers.formatted()) recorded members of follow-up waves that ended" : "")
                + (result.opens > 0 ? "; \(result.opens.formatted()) first opens counted for those broadcasts (ready at open)" : "")
        )
        if configuration.auditRetention == nil {
            print("the audit log is kept forever (--audit-retention forever)")
        } else if result.auditKept {
            print("the audit log is append-only for this role: not pruned (prune it as the table's owner)")
        } else {
            print("\(verb) \(result.auditEntries.formatted()) audit entries older than \(auditRetention)")
        }
        if !dryRun {
            let done =
                "\(result.deliveries) deliveries, \(result.receipts) receipts, \(result.auditEntries) audit entries older than \(auditRetention)"
            try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await AuditRepository(client: client).record(CLIAudit.entry("prune", detail: done), logger: logger)
            }
        }
    }
}
