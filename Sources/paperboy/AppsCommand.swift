import APNs
import ArgumentParser
import Foundation
import Logging
import PaperboyStore
import PaperboyText

struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "Register and list the apps Paperboy pushes to.",
        subcommands: [Add.self, List.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an app and print its id and a new device API key (shown only once).",
            discussion: "With --json: {\"id\": ..., \"apiKey\": ...}."
        )

        @OptionGroup var database: DatabaseOptions

        @Option(name: .customLong("bundle-id"), help: "The app's bundle id, which is its APNs topic.")
        var bundleID: String

        @Option(name: .customLong("team-id"), help: "The Apple developer team id (10 characters).")
        var teamID: String

        @Option(name: .customLong("key-id"), help: "The APNs auth key id (10 characters).")
        var keyID: String

        @Option(
            name: .customLong("key-file"),
            help: "Path of the APNs auth key (.p8). Only the path is stored, never the key."
        )
        var keyFile: String

        @OptionGroup var output: OutputOptions

        func validate() throws {
            do {
                _ = try NewApp(bundleID: bundleID, teamID: teamID, keyID: keyID, keyReference: keyFile)
            } catch {
                throw ValidationError("--\(flagName(error.field)): \(error.message)")
            }
            do {
                // The same check the sender makes when it loads the key: exists, readable, P-256.
                _ = try APNsSigningKey(pemFile: keyFile, keyID: keyID, teamID: teamID)
            } catch {
                throw ValidationError("--key-file: \(error)")
            }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let newApp: NewApp
            do {
                let path = URL(fileURLWithPath: keyFile).standardizedFileURL.path
                newApp = try NewApp(bundleID: bundleID, teamID: teamID, keyID: keyID, keyReference: path)
            } catch {
                throw CommandError("--\(flagName(error.field)): \(error.message)")
            }
            let (app, key) = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await AppRepository(client: client).create(newApp, logger: logger)
                } catch let error as StoreError {
                    throw CommandError("--\(flagName(error.field)): \(error.message)")
                }
            }
            if output.json {
                try printJSON(CreatedApp(id: app.id, apiKey: key.secret))
            } else {
                print("app \(app.id) registered: \(app.bundleID) (team \(app.teamID), key \(app.keyID))")
                print("device API key (shown only now; the app sends it as X-API-Key): \(key.secret)")
            }
        }

        struct CreatedApp: Encodable {
            var id: Int
            var apiKey: String
        }

        private func flagName(_ field: String?) -> String {
            switch field {
            case "bundleId": "bundle-id"
            case "teamId": "team-id"
            case "keyId": "key-id"
            case "keyFile": "key-file"
            default: field ?? "bundle-id"
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registered apps.")

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let apps = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await AppRepository(client: client).list(logger: logger)
            }
            if output.json { return try printJSON(apps) }
            if apps.isEmpty { return print("no apps; register one with `paperboy apps add`") }
            print(TerminalText.row([("ID", 5), ("BUNDLE ID", 36), ("TEAM", 12), ("KEY", 12)], last: "KEY FILE"))
            for app in apps {
                print(TerminalText.row([("\(app.id)", 5), (app.bundleID, 36), (app.teamID, 12), (app.keyID, 12)], last: app.keyReference))
            }
        }
    }
}
