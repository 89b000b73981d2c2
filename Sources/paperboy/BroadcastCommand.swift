import ArgumentParser
import Foundation
import Logging
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyText
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

struct BroadcastCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast",
        abstract: "Start a broadcast of an edition, follow it, or cancel it.",
        discussion: """
            `paperboy broadcast --edition ID` starts the broadcast (or attaches to the one the edition already \
            has: safe to run from cron twice) and exits 0; the workers (`paperboy serve`, `paperboy worker`) \
            send it. `--dry-run` prints the plan and stores nothing.
            """,
        subcommands: [Start.self, Status.self, Cancel.self, List.self],
        defaultSubcommand: Start.self
    )

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a broadcast of an edition (the default subcommand): exit 0 when it is accepted."
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The edition's id, as `paperboy editions publish` printed it.")
        var edition: String

        @Option(help: "production or sandbox.")
        var environment = "production"

        @OptionGroup var flags: BroadcastFlags

        @Flag(name: .customLong("dry-run"), help: "Print the plan; store and send nothing.")
        var dryRun = false

        @Flag(help: "Then follow the broadcast's progress until it ends.")
        var follow = false

        @OptionGroup var output: OutputOptions

        @OptionGroup var timeZone: TimeZoneOptions

        func validate() throws {
            _ = try editionID()
            _ = try apnsEnvironment()
            _ = try flags.options()
            _ = try timeZone.zone()
        }

        func run() async throws {
            let editionID = try editionID()
            let environment = try apnsEnvironment()
            let options = try flags.options()
            let zone = try timeZone.zone()
            let logger = Logger(label: "paperboy.broadcast")
            let now = Date()
            try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                let repository = BroadcastRepository(client: client)
                if dryRun {
                    let plan = try await storeCall {
                        try await repository.plan(editionID: editionID, environment: environment, options: options, now: now, logger: logger)
                    }
                    if output.json { return try printJSON(plan) }
                    let devices = plan.cohorts.reduce(0) { $0 + $1.devices }
                    print(
                        "dry run: wave 1 of edition \(editionID.uuidString.lowercased()) would wake \(TerminalText.grouped(devices)) devices; nothing is stored or sent"
                    )
                    if let note = plan.note { print("planned: \(note)") }
                    guard devices > 0 else { return }
                    print()
                    print(plan.table(timeZone: zone))
                    print()
                    print(plan.chart(timeZone: zone))
                    return
                }
                let start = try await storeCall {
                    try await BroadcastPreflight.check(
                        editionID: editionID,
                        environment: environment,
                        editions: EditionRepository(client: client),
                        apps: AppRepository(client: client),
                        logger: logger
                    )
                    return try await repository.start(
                        editionID: editionID,
                        environment: environment,
                        options: options,
                        origin: "cli",
                        now: now,
                        audit: CLIAudit.entry("start broadcast", editionID: editionID),
                        logger: logger
                    )
                }
                if output.json {
                    try printJSON(Started(start))
                } else if start.created, let plan = start.plan {
                    let devices = plan.cohorts.reduce(0) { $0 + $1.devices }
                    print(
                        "started broadcast \(start.broadcast.id.uuidString.lowercased()): \(TerminalText.grouped(devices)) devices in "
                            + "\(options.cohorts) cohorts from \(TerminalText.clock(plan.start, timeZone: zone, fraction: false)) over "
                            + "\(TerminalText.duration(plan.window)) at \(String(format: "%.1f", plan.rate))/s"
                    )
                    if let note = plan.note { print("planned: \(note)") }
                } else {
                    print(
                        "attached to broadcast \(start.broadcast.id.uuidString.lowercased()) (\(start.broadcast.state.rawValue)); nothing new is sent"
                    )
                }
                if follow {
                    try await Status.follow(start.broadcast.id, repository: repository, client: client, zone: zone, logger: logger)
                }
            }
        }

        private func editionID() throws -> UUID {
            guard let id = UUID(uuidString: edition) else { throw ValidationError("--edition: '\(edition)' is not an edition id (a UUID)") }
            return id
        }

        private func apnsEnvironment() throws -> APNsEnvironment {
            try APNsEnvironment(flag: environment)
        }

        /// What `broadcast --json` prints.
        struct Started: Encodable {
            var id: String
            var created: Bool
            var state: String
            var plan: StaggerPlan?

            init(_ start: BroadcastStart) {
                id = start.broadcast.id.uuidString.lowercased()
                created = start.created
                state = start.broadcast.state.rawValue
                plan = start.plan
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A broadcast's progress per wave (and cohort): a live bar in a terminal until it ends, then the report."
        )

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The broadcast's id.")
        var id: String

        @Flag(help: "Also show every cohort.")
        var cohorts = false

        @Flag(help: "Print the report once, without the live bar.")
        var once = false

        @Flag(
            help: """
                Recount the broadcast's receipts from every receipt, and its ready at open from every open, first \
                (seconds at millions of devices), instead of the tallies the workers keep (a few seconds behind while \
                it runs; recounted once it has ended).
                """
        )
        var exact = false

        @OptionGroup var output: OutputOptions

        @OptionGroup var timeZone: TimeZoneOptions

        func validate() throws {
            _ = try broadcastID(id)
            _ = try timeZone.zone()
        }

        func run() async throws {
            let id = try broadcastID(id)
            let zone = try timeZone.zone()
            let logger = Logger(label: "paperboy.broadcast")
            try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                let repository = BroadcastRepository(client: client)
                if !output.json && !once && isatty(STDOUT_FILENO) == 1 {
                    try await Self.follow(id, repository: repository, client: client, zone: zone, showCohorts: cohorts, exact: exact, logger: logger)
                    return
                }
                let progress = try await Self.progress(id, repository: repository, exact: exact, logger: logger)
                if output.json { return try printJSON(progress) }
                print(progress.report(timeZone: zone, width: terminalWidth(), showCohorts: cohorts))
                try await Self.printWakeRates(progress, client: client, logger: logger)
            }
        }

        /// Once a broadcast has ended, its wake rates by wave (`WakeRateRepository.waveRates`) after the report.
        static func printWakeRates(_ progress: BroadcastProgress, client: PostgresClient, logger: Logger) async throws {
            guard progress.state != .running else { return }
            let (waves, sample) = try await WakeRateRepository(client: client).waveRates(broadcastID: progress.id, logger: logger)
            print("")
            print(WakeRates.broadcastReport(waves, sample: sample))
        }

        static func progress(_ id: UUID, repository: BroadcastRepository, exact: Bool = false, logger: Logger) async throws -> BroadcastProgress {
            guard let progress = try await repository.progress(id: id, exact: exact, logger: logger) else {
                throw CommandError("there is no broadcast \(id.uuidString.lowercased())")
            }
            return progress
        }

        /// Redraws one progress line every second while the broadcast runs, then prints the report.
        /// - Parameters:
        ///   - client: when given, the wake rates by wave follow the report once the broadcast has ended.
        ///   - exact: the report's receipts are recounted first (the live line reads the tallies).
        static func follow(
            _ id: UUID,
            repository: BroadcastRepository,
            client: PostgresClient? = nil,
            zone: TimeZone,
            showCohorts: Bool = false,
            exact: Bool = false,
            logger: Logger
        ) async throws {
            let live = isatty(STDOUT_FILENO) == 1
            var progress = try await progress(id, repository: repository, logger: logger)
            var lastLine = ""
            while progress.state == .running {
                let line = progress.progressLine(width: terminalWidth() - 1, now: Date())
                if live {
                    FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + line).utf8))
                } else if line != lastLine {
                    print(line)
                }
                lastLine = line
                try await Task.sleep(for: .seconds(1))
                progress = try await Self.progress(id, repository: repository, logger: logger)
            }
            if live { FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8)) }
            if exact { progress = try await Self.progress(id, repository: repository, exact: true, logger: logger) }
            print(progress.report(timeZone: zone, width: terminalWidth(), showCohorts: showCohorts))
            if let client { try await printWakeRates(progress, client: client, logger: logger) }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Cancel a running broadcast: nothing more is sent (batches in flight finish).")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The broadcast's id.")
        var id: String

        @OptionGroup var output: OutputOptions

        func validate() throws {
            _ = try broadcastID(id)
        }

        func run() async throws {
            let id = try broadcastID(id)
            let logger = Logger(label: "paperboy.broadcast")
            let broadcast = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await storeCall {
                    try await BroadcastRepository(client: client).cancel(
                        id: id,
                        now: Date(),
                        audit: CLIAudit.entry("cancel broadcast", broadcastID: id),
                        logger: logger
                    )
                }
            }
            if output.json { return try printJSON(["id": broadcast.id.uuidString.lowercased(), "state": broadcast.state.rawValue]) }
            print("cancelled broadcast \(broadcast.id.uuidString.lowercased())")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Broadcasts, newest first.")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "How many to show.")
        var limit = 20

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.broadcast")
            let broadcasts = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await BroadcastRepository(client: client).list(limit: limit, logger: logger)
            }
            if output.json {
                return try printJSON(
                    broadcasts.map { broadcast in
                        [
                            "id": broadcast.id.uuidString.lowercased(), "edition": broadcast.editionID.uuidString.lowercased(),
                            "environment": broadcast.environment.rawValue, "state": broadcast.state.rawValue, "origin": broadcast.origin,
                            "createdAt": broadcast.createdAt.formatted(.iso8601),
                        ]
                    }
                )
            }
            guard !broadcasts.isEmpty else { return print("no broadcasts") }
            print("ID                                    EDITION                               ENV         STATE      ORIGIN       CREATED")
            for b in broadcasts {
                let columns = [
                    b.id.uuidString.lowercased(), b.editionID.uuidString.lowercased(),
                    b.environment.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0),
                    b.state.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0), b.origin.padding(toLength: 11, withPad: " ", startingAt: 0),
                    b.createdAt.formatted(.iso8601),
                ]
                print(columns.joined(separator: "  "))
            }
        }
    }
}

private func broadcastID(_ text: String) throws -> UUID {
    guard let id = UUID(uuidString: text) else { throw ValidationError("<id>: '\(text)' is not a broadcast id (a UUID)") }
    return id
}

/// Runs a store call; a refusal (unknown edition, deadline passed, …) becomes a one-line command error.
func storeCall<Result>(_ body: () async throws -> Result) async throws -> Result {
    do {
        return try await body()
    } catch let error as StoreError {
        throw CommandError(error.description)
    }
}

/// The terminal's width in columns: $COLUMNS, else the terminal's, else 80.
func terminalWidth() -> Int {
    if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 20 { return columns }
    #if canImport(Glibc)
    var size = winsize()
    if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
    #endif
    return 80
}
