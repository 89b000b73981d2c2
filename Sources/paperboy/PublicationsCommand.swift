import ArgumentParser
import Logging
import PaperboyStore
import PaperboyText

struct PublicationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publications",
        abstract: "Declare and list what devices subscribe to (e.g. morning, evening).",
        subcommands: [Add.self, List.self]
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

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.publications")
            let publication = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await PublicationRepository(client: client).add(appID: app, slug: id, title: title, logger: logger)
                } catch let error as StoreError {
                    throw CommandError((error.field == "app" ? "--app: " : "<id>: ") + error.message)
                }
            }
            if output.json { return try printJSON(publication) }
            print("publication \(publication.slug) added to app \(publication.appID)")
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
            print(TerminalText.row([("APP", 6), ("ID", 20)], last: "TITLE"))
            for publication in publications {
                print(TerminalText.row([("\(publication.appID)", 6), (publication.slug, 20)], last: publication.title ?? ""))
            }
        }
    }
}
