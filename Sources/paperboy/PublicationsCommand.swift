import ArgumentParser
import Logging
import PaperboyStore
import PaperboyText

struct PublicationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publications",
        abstract: "Declare and list what devices subscribe to (e.g. morning, evening).",
        subcommands: [Add.self, SetOrigin.self, List.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Declare a publication of an app.")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The publication id devices subscribe with, e.g. morning.")
        var id: String

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @Option(help: "A human title, e.g. \"Morning edition\".")
        var title: String?

        @Option(help: "The content origin its broadcasts share (see `paperboy origins`); default: none, they pace alone.")
        var origin: String?

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.publications")
            let publication = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await PublicationRepository(client: client).add(
                        appID: app,
                        slug: id,
                        title: title,
                        origin: origin,
                        audit: CLIAudit.entry("add publication", appID: app, detail: id),
                        logger: logger
                    )
                } catch let error as StoreError {
                    throw CommandError(PublicationsCommand.flag(error.field) + error.message)
                }
            }
            if output.json { return try printJSON(publication) }
            print("publication \(publication.slug) added to app \(publication.appID)" + (publication.origin.map { ", sharing origin \($0)" } ?? ""))
        }
    }

    /// The flag of a ``StoreError`` field, for messages.
    static func flag(_ field: String?) -> String {
        switch field {
        case "app": "--app: "
        case "origin": "--origin: "
        default: "<id>: "
        }
    }

    struct SetOrigin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-origin",
            abstract: "Point a publication at a content origin (or at none); its broadcasts share it from their next batch."
        )

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The publication id, e.g. morning.")
        var id: String

        @Option(help: "The app's id (needed when several apps have the publication).")
        var app: Int?

        @Option(help: "The content origin (see `paperboy origins list`).")
        var origin: String?

        @Flag(help: "No origin: its broadcasts pace alone again.")
        var none = false

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard (origin == nil) != !none else { throw ValidationError("--origin or --none: give exactly one") }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.publications")
            let publication = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    let publications = PublicationRepository(client: client)
                    let found = try await publications.resolve(slug: id, appID: app, logger: logger)
                    return try await publications.setOrigin(
                        found,
                        origin: none ? nil : origin,
                        audit: CLIAudit.entry("set publication origin", appID: found.appID),
                        logger: logger
                    )
                } catch let error as StoreError {
                    throw CommandError(PublicationsCommand.flag(error.field == "publication" ? nil : error.field) + error.message)
                }
            }
            if output.json { return try printJSON(publication) }
            print("publication \(publication.slug) of app \(publication.appID): " + (publication.origin.map { "shares origin \($0)" } ?? "no origin"))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List publications.")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "Only this app's publications.")
        var app: Int?

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.publications")
            let publications = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await PublicationRepository(client: client).list(appID: app, logger: logger)
            }
            if output.json { return try printJSON(publications) }
            if publications.isEmpty { return print("no publications; add one with `paperboy publications add ID --app APP`") }
            print(TerminalText.row([("APP", 6), ("ID", 20), ("ORIGIN", 20)], last: "TITLE"))
            for publication in publications {
                print(
                    TerminalText.row(
                        [("\(publication.appID)", 6), (publication.slug, 20), (publication.origin ?? "-", 20)],
                        last: publication.title ?? ""
                    )
                )
            }
        }
    }
}
