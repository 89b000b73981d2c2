import ArgumentParser
import Foundation
import Logging
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore

extension AppsCommand {
    struct SetAlertText: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-alert-text",
            abstract: "Set the words of an app's edition alerts (the ready alert, the alert last resort), in the app's language.",
            discussion: """
                Placeholders: {publication} (the publication's title, else its id), {date} (2026-11-23), {year}, {month}, \
                {day} (as numbers). The words are shown as they are when the app's Notification Service Extension could \
                not fetch the edition, so say the edition is out, not that it is on the phone. The default: \
                "{publication}" and "The edition of {date} is out. Open the app to read it." A flag left out keeps the \
                app's current words; --standard goes back to the default. Checked against every edition of the app \
                whose deadline is ahead (each alert must still fit APNs' 4096 bytes). The dispatchers use the new words \
                from their next batch.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @Option(help: ArgumentHelp("The alert's title, e.g. \"{publication}\".", valueName: "text"))
        var title: String?

        @Option(help: ArgumentHelp("The alert's body, e.g. \"{year}年{month}月{day}日号を公開しました\".", valueName: "text"))
        var body: String?

        @Flag(help: "Go back to Paperboy's English words.")
        var standard = false

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard app >= 1 else { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
            if standard {
                guard title == nil, body == nil else { throw ValidationError("--standard takes neither --title nor --body") }
            } else {
                guard title != nil || body != nil else { throw ValidationError("give --title, --body (or both), or --standard") }
            }
            _ = try Self.checked(title: title ?? EditionAlertText.standard.title, body: body ?? EditionAlertText.standard.body)
        }

        /// The words, or a `ValidationError` naming the flag at fault.
        static func checked(title: String, body: String) throws -> EditionAlertText {
            do {
                return try EditionAlertText(title: title, body: body)
            } catch {
                throw ValidationError("--\(error.field): \(error.message)")
            }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let flag = body != nil ? "--body" : "--title"
            let updated = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                let apps = AppRepository(client: client)
                guard let current = try await apps.find(id: app, logger: logger) else {
                    throw CommandError("--app: no app \(app) (see `paperboy apps list`)")
                }
                var text: EditionAlertText?
                if !standard {
                    let base = current.alertText ?? .standard
                    text = try Self.checked(title: title ?? base.title, body: body ?? base.body)
                }
                // The app's editions still to be sent must fit APNs' limit in the new words, as they did in the old.
                let now = Date()
                for var edition in try await EditionRepository(client: client).list(appID: app, limit: 200, logger: logger)
                where edition.deadline > now {
                    edition.alertText = text ?? .standard
                    do throws(StoreError) {
                        try BroadcastPreflight.checkPushes(edition)
                    } catch {
                        let name = edition.id.uuidString.lowercased()
                        let day = "\(edition.manifest.publication) \(edition.manifest.issueDate)"
                        throw CommandError("\(flag): the edition \(name) (\(day)) could not be sent in these words: \(error.message)")
                    }
                }
                return try await apps.setAlertText(appID: app, text, audit: CLIAudit.entry("set alert text", appID: app), logger: logger)
            }
            if output.json { return try printJSON(updated) }
            let words = updated.alertText ?? .standard
            let example = words.filled(publication: "Morning edition", issueDate: "2026-11-23")
            print(
                "app \(updated.id) (\(updated.bundleID)): alerts read \"\(example.title)\" / \"\(example.body)\" (for a publication titled Morning edition, 2026-11-23)"
            )
        }
    }
}
