import ArgumentParser
import Foundation
import Logging
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyText

struct EditionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "editions",
        abstract: "Publish and inspect editions (manifests of bundles per image tier).",
        subcommands: [Publish.self, List.self, Show.self]
    )

    struct Publish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Publish an edition file; prints the id Paperboy assigned.")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The edition file (JSON: publication, issueDate, deadline, tiers, pages).")
        var file: String

        @Option(help: "The app's id, when more than one app has the publication.")
        var app: Int?

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let app, app < 1 { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
        }

        func run() async throws {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw CommandError("\(file): cannot read the file")
            }
            let manifest: EditionManifest
            do {
                manifest = try JSONDecoder().decode(EditionManifest.self, from: data)
            } catch let error as DecodingError {
                throw CommandError("\(file): \(Self.describe(error))")
            }
            let logger = Logger(label: "paperboy.editions")
            let edition = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await EditionRepository(client: client).publish(
                        manifest,
                        appID: app,
                        check: BroadcastPreflight.checkPushes,
                        audit: CLIAudit.entry("publish edition"),
                        logger: logger
                    )
                } catch let error as StoreError {
                    throw CommandError(error.field == "app" ? "--app: \(error.message)" : "\(file): \(error)")
                }
            }
            if output.json { return try printJSON(edition) }
            print(edition.id.uuidString.lowercased())
        }

        /// The field at fault as a JSON path, as the API names it.
        static func describe(_ error: DecodingError) -> String {
            func path(_ keys: [any CodingKey]) -> String {
                keys.reduce("") { path, key in
                    if let index = key.intValue { return path + "[\(index)]" }
                    return path.isEmpty ? key.stringValue : path + "." + key.stringValue
                }
            }
            switch error {
            case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])) is required"
            case .valueNotFound(_, let context): return "\(path(context.codingPath)) must not be null"
            case .typeMismatch(_, let context): return "\(path(context.codingPath)) has the wrong type"
            case .dataCorrupted(let context) where context.codingPath.isEmpty: return "not valid JSON"
            case .dataCorrupted(let context): return "\(path(context.codingPath)) has a value that is not allowed"
            @unknown default: return "cannot be read as an edition"
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List editions, newest first.")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "Only this publication's editions, e.g. morning.")
        var publication: String?

        @Option(help: "Only this app's editions.")
        var app: Int?

        @Option(help: "At most this many editions.")
        var limit = 50

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard (1...1000).contains(limit) else { throw ValidationError("--limit must be between 1 and 1000") }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.editions")
            let editions = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await EditionRepository(client: client).list(appID: app, publication: publication, limit: limit, logger: logger)
            }
            if output.json { return try printJSON(editions) }
            if editions.isEmpty { return print("no editions; publish one with `paperboy editions publish FILE.json`") }
            print(TerminalText.row([("ID", 38), ("APP", 6), ("PUBLICATION", 14), ("ISSUE", 12)], last: "DEADLINE"))
            for edition in editions {
                print(
                    TerminalText.row(
                        [
                            (edition.id.uuidString.lowercased(), 38), ("\(edition.appID)", 6), (edition.manifest.publication, 14),
                            (edition.manifest.issueDate, 12),
                        ],
                        last: edition.manifest.deadline
                    )
                )
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one edition: its tiers, bundles and pages.")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The edition's id.")
        var id: String

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard UUID(uuidString: id) != nil else { throw ValidationError("<id> must be an edition id (a UUID)") }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.editions")
            let editionID = UUID(uuidString: id)!
            let found = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await EditionRepository(client: client).find(id: editionID, logger: logger)
            }
            guard let edition = found else { throw CommandError("there is no edition \(id.lowercased())") }
            if output.json { return try printJSON(edition) }
            let manifest = edition.manifest
            print("edition \(edition.id.uuidString.lowercased())")
            print("  publication  \(manifest.publication) (app \(edition.appID))")
            print("  issue date   \(manifest.issueDate)")
            print("  deadline     \(manifest.deadline)")
            for tier in ImageTier.allCases {
                guard let bundles = manifest.tiers[tier.rawValue]?.bundles else { continue }
                let total = bundles.reduce(Int64(0)) { $0 + $1.bytes }
                print("  \(TerminalText.column(tier.rawValue, 7)) \(bundles.count) bundle(s), \(total) bytes")
                for bundle in bundles { print("    \(bundle.url)  \(bundle.bytes)  sha256 \(bundle.sha256)") }
            }
            print("  pages        \(manifest.pages.count)")
        }
    }
}
