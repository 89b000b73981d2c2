import ArgumentParser
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyText

struct OriginsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "origins",
        abstract: "Name the content APIs that woken devices download from, and the capacity each serves.",
        discussion: """
            Every broadcast of a publication that points at an origin (`paperboy publications add --origin`, \
            `publications set-origin`) shares the origin's capacity with every other: first waves, follow-ups, alert \
            waves and catch-up after a stall, across all workers, never above it in total. A broadcast started while \
            others hold the capacity is planned into what is left, first come first served; its plan says when it runs \
            and why.
            """,
        subcommands: [Add.self, Set.self, List.self]
    )

    /// The capacity a `--capacity` flag names: `2000/s` or `2000`.
    static func capacity(_ text: String) throws -> Double {
        do {
            guard case .capacity(let perSecond) = try StaggerPlan.Pace(capacity: text) else { throw ValidationError("--capacity") }
            return perSecond
        } catch {
            throw ValidationError("--capacity: \(error)")
        }
    }

    /// `add` and `set`: `--capacity` read, the origin written by `operation`, the store's refusal named by its flag
    /// or argument, the result printed (its line, or its JSON).
    static func write(
        database: DatabaseOptions,
        capacity: String,
        output: OutputOptions,
        _ operation: @escaping @Sendable (OriginRepository, Double, Logger) async throws -> (ContentOrigin, String)
    ) async throws {
        let logger = Logger(label: "paperboy.origins")
        let perSecond = try OriginsCommand.capacity(capacity)
        let (origin, line) = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
            do {
                return try await operation(OriginRepository(client: client), perSecond, logger)
            } catch let error as StoreError {
                throw CommandError((error.field == "capacity" ? "--capacity: " : "<name>: ") + error.message)
            }
        }
        if output.json { return try printJSON(origin) }
        print(line)
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Declare a content origin and its capacity.")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "Its name, e.g. content-api: lower-case letters, digits, '-' and '_'.")
        var name: String

        @Option(help: ArgumentHelp("The wake-ups per second it serves, e.g. 2000/s.", valueName: "rate"))
        var capacity: String

        @OptionGroup var output: OutputOptions

        func validate() throws {
            _ = try OriginsCommand.capacity(capacity)
        }

        func run() async throws {
            try await OriginsCommand.write(database: database, capacity: capacity, output: output) { origins, perSecond, logger in
                let origin = try await origins.add(
                    name: name,
                    capacity: perSecond,
                    audit: CLIAudit.entry("add origin", detail: "\(name) at \(perSecond)/s"),
                    logger: logger
                )
                return (origin, "origin \(origin.name) added: \(TerminalText.grouped(Int(origin.capacity)))/s")
            }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change an origin's capacity; running broadcasts pace at it from their next batch."
        )

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The origin's name.")
        var name: String

        @Option(help: ArgumentHelp("The wake-ups per second it serves now, e.g. 3000/s.", valueName: "rate"))
        var capacity: String

        @OptionGroup var output: OutputOptions

        func validate() throws {
            _ = try OriginsCommand.capacity(capacity)
        }

        func run() async throws {
            try await OriginsCommand.write(database: database, capacity: capacity, output: output) { origins, perSecond, logger in
                let origin = try await origins.setCapacity(
                    name: name,
                    capacity: perSecond,
                    audit: CLIAudit.entry("set origin capacity", detail: "\(name) at \(perSecond)/s"),
                    logger: logger
                )
                return (origin, "origin \(origin.name): \(TerminalText.grouped(Int(origin.capacity)))/s")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the origins, their capacity and their publications.")

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.origins")
            let origins = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await OriginRepository(client: client).list(logger: logger)
            }
            if output.json { return try printJSON(origins) }
            if origins.isEmpty { return print("no origins; add one with `paperboy origins add content-api --capacity 2000/s`") }
            print(TerminalText.row([("NAME", 20), ("CAPACITY", 12)], last: "PUBLICATIONS (app/id)"))
            for origin in origins {
                print(
                    TerminalText.row(
                        [(origin.name, 20), ("\(TerminalText.grouped(Int(origin.capacity)))/s", 12)],
                        last: origin.publications.isEmpty ? "-" : origin.publications.joined(separator: ", ")
                    )
                )
            }
        }
    }
}
