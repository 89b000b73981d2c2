import APNs
import ArgumentParser
import FCM
import Foundation
import Logging
import PaperboyStore
import PaperboyText

struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "Register and list the apps Paperboy pushes to.",
        subcommands: [Add.self, SetFCM.self, List.self]
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

        @Option(
            name: .customLong("fcm-service-account"),
            help: ArgumentHelp(
                "The app's Firebase service-account JSON, for its FCM devices. Only the path and project id are stored, never the key.",
                valueName: "file"
            )
        )
        var fcmServiceAccount: String?

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
            if let fcmServiceAccount { _ = try checkedServiceAccount(fcmServiceAccount, flag: "--fcm-service-account") }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let newApp: NewApp
            do {
                let path = URL(fileURLWithPath: keyFile).standardizedFileURL.path
                let fcm = try fcmServiceAccount.map { try checkedServiceAccount($0, flag: "--fcm-service-account") }
                newApp = try NewApp(bundleID: bundleID, teamID: teamID, keyID: keyID, keyReference: path, fcm: fcm)
            } catch let error as StoreError {
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
                if let fcm = app.fcm { print("FCM: project \(fcm.projectID), service account \(fcm.serviceAccount)") }
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
            case "fcmServiceAccount": "fcm-service-account"
            default: field ?? "bundle-id"
            }
        }
    }

    struct SetFCM: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-fcm",
            abstract: "Add or replace an app's FCM service account (the Firebase service-account JSON).",
            discussion: """
                The file is checked first (a service account, its project id, an RSA private key that parses, the \
                client email and an https token URI). Only its path and project id are stored, never the key; the \
                sender reads the file when it sends.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @Option(
            name: .customLong("service-account"),
            help: ArgumentHelp("The Firebase service-account JSON file.", valueName: "file")
        )
        var serviceAccount: String

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard app >= 1 else { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
            _ = try checkedServiceAccount(serviceAccount, flag: "--service-account")
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let credentials = try checkedServiceAccount(serviceAccount, flag: "--service-account")
            let updated = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await AppRepository(client: client).setFCM(appID: app, credentials, logger: logger)
                } catch let error as StoreError where error.field == "app" {
                    throw CommandError("--app: \(error.message) (see `paperboy apps list`)")
                }
            }
            if output.json { return try printJSON(updated) }
            print("app \(updated.id) (\(updated.bundleID)): FCM project \(credentials.projectID), service account \(credentials.serviceAccount)")
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
            print(TerminalText.row([("ID", 5), ("BUNDLE ID", 36), ("TEAM", 12), ("KEY", 12), ("FCM PROJECT", 32)], last: "KEY FILE"))
            for app in apps {
                print(
                    TerminalText.row(
                        [("\(app.id)", 5), (app.bundleID, 36), (app.teamID, 12), (app.keyID, 12), (app.fcm?.projectID ?? "-", 32)],
                        last: app.keyReference
                    )
                )
            }
        }
    }
}

/// Reads and checks a service-account file as the FCM sender will, and returns what is stored of it: the
/// absolute path and the project id.
/// - Throws: `ValidationError` naming `flag`, the file and the field at fault; never the key.
private func checkedServiceAccount(_ path: String, flag: String) throws -> FCMCredentials {
    let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
    let account: FCMServiceAccount
    do {
        account = try FCMServiceAccount(contentsOf: absolute)
    } catch {
        throw ValidationError("\(flag): \(error.field == nil ? "" : "\(absolute): ")\(error)")
    }
    do {
        return try FCMCredentials(serviceAccount: absolute, projectID: account.projectID)
    } catch {
        throw ValidationError("\(flag): \(error.message)")
    }
}
