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
        abstract: "Register and list the apps Paperboy pushes to, their providers and their device API keys.",
        subcommands: [
            Add.self, List.self, SetAPNs.self, RemoveAPNs.self, SetFCM.self, RemoveFCM.self, SetBundleID.self, SetAlertText.self, AddKey.self,
            RevokeKey.self, Keys.self, Holds.self, Release.self, ConfirmDeactivations.self,
        ]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an app and print its id and a new device API key (shown only once).",
            discussion: """
                An app needs at least one provider: APNs (--team-id, --key-id and --key-file, all three) or FCM \
                (--fcm-service-account), or both. An Android-only app has FCM alone. With --json: {"id": ..., "apiKey": ...}.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(name: .customLong("bundle-id"), help: "The app's bundle id (its APNs topic), or its Android package name.")
        var bundleID: String

        @OptionGroup var apns: APNsCredentialOptions

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
            let credentials = try apns.checkedIfGiven()
            let fcm = try fcmServiceAccount.map { try checkedServiceAccount($0, flag: "--fcm-service-account") }
            guard credentials != nil || fcm != nil else {
                throw ValidationError(
                    "an app needs at least one provider: APNs (--team-id, --key-id and --key-file) or FCM (--fcm-service-account)"
                )
            }
            do {
                _ = try NewApp(bundleID: bundleID, apns: credentials, fcm: fcm)
            } catch {
                throw ValidationError("--\(flagName(error.field)): \(error.message)")
            }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let newApp: NewApp
            do {
                let fcm = try fcmServiceAccount.map { try checkedServiceAccount($0, flag: "--fcm-service-account") }
                newApp = try NewApp(bundleID: bundleID, apns: try apns.checkedIfGiven(), fcm: fcm)
            } catch let error as StoreError {
                throw CommandError("--\(flagName(error.field)): \(error.message)")
            }
            let (app, key) = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await AppRepository(client: client).create(
                        newApp,
                        audit: CLIAudit.entry("add app", detail: newApp.bundleID),
                        logger: logger
                    )
                } catch let error as StoreError {
                    throw CommandError("--\(flagName(error.field)): \(error.message)")
                }
            }
            if output.json {
                try printJSON(CreatedApp(id: app.id, apiKey: key.secret))
            } else {
                print("app \(app.id) registered: \(app.bundleID)")
                printProviders(app)
                print("device API key (shown only now; the app sends it as X-API-Key): \(key.secret)")
            }
        }

        struct CreatedApp: Encodable {
            var id: Int
            var apiKey: String
        }

        private func flagName(_ field: String?) -> String {
            switch field {
            case "fcmServiceAccount": "fcm-service-account"
            case "apns": "team-id"
            default: APNsCredentialOptions.flagName(field) ?? "bundle-id"
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the registered apps and their providers.",
            discussion: "With --json: the apps, each with `apns` and `fcm` when it has them, and its `credentialsVersion`."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let apps = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await AppRepository(client: client).list(logger: logger)
            }
            if output.json { return try printJSON(apps) }
            if apps.isEmpty { return print("no apps; register one with `paperboy apps add`") }
            print(
                TerminalText.row(
                    [("ID", 5), ("BUNDLE ID", 36), ("PROVIDERS", 10), ("TEAM", 12), ("KEY", 12), ("FCM PROJECT", 32)],
                    last: "KEY FILE"
                )
            )
            for app in apps {
                let providers = [app.apns.map { _ in "APNs" }, app.fcm.map { _ in "FCM" }].compactMap { $0 }.joined(separator: "+")
                print(
                    TerminalText.row(
                        [
                            ("\(app.id)", 5), (app.bundleID, 36), (providers, 10), (app.apns?.teamID ?? "-", 12), (app.apns?.keyID ?? "-", 12),
                            (app.fcm?.projectID ?? "-", 32),
                        ],
                        last: app.apns?.keyReference ?? "-"
                    )
                )
            }
        }
    }

    struct SetAPNs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-apns",
            abstract: "Add or replace an app's APNs key (rotating it, or adding APNs to an FCM-only app).",
            discussion: """
                The key is checked first, as `apps add` checks it (it exists, is readable, and is a P-256 private \
                key). Only its path, team id and key id are stored, never the key. Running workers load the new \
                key without a restart (the app's credentials version goes up). Keep the old .p8 where it is until \
                the command has succeeded.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @OptionGroup var apns: APNsCredentialOptions

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard app >= 1 else { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
            guard try apns.checkedIfGiven() != nil else {
                throw ValidationError("set-apns needs --team-id, --key-id and --key-file")
            }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            guard let credentials = try apns.checkedIfGiven() else { throw CommandError("set-apns needs --team-id, --key-id and --key-file") }
            let updated = try await withApps(logger: logger, database: database) { apps in
                try await apps.setAPNs(appID: app, credentials, audit: CLIAudit.entry("set APNs", appID: app), logger: logger)
            }
            if output.json { return try printJSON(updated) }
            print(
                "app \(updated.id) (\(updated.bundleID)): APNs team \(credentials.teamID), key \(credentials.keyID), key file \(credentials.keyReference)"
            )
        }
    }

    struct RemoveAPNs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-apns",
            abstract: "Remove an app's APNs key; refused when APNs is its only provider.",
            discussion: """
                Its APNs devices stay registered but are not sent to: a broadcast whose audience has APNs devices \
                is refused until `apps set-apns` adds a key again.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let updated = try await withApps(logger: logger, database: database) { apps in
                try await apps.removeAPNs(appID: app, audit: CLIAudit.entry("remove APNs", appID: app), logger: logger)
            }
            if output.json { return try printJSON(updated) }
            print("app \(updated.id) (\(updated.bundleID)): APNs removed; it sends through FCM only")
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
            let updated = try await withApps(logger: logger, database: database) { apps in
                try await apps.setFCM(appID: app, credentials, audit: CLIAudit.entry("set FCM", appID: app), logger: logger)
            }
            if output.json { return try printJSON(updated) }
            print("app \(updated.id) (\(updated.bundleID)): FCM project \(credentials.projectID), service account \(credentials.serviceAccount)")
        }
    }

    struct RemoveFCM: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-fcm",
            abstract: "Remove an app's FCM service account; refused when FCM is its only provider.",
            discussion: "Its FCM devices stay registered and are skipped (fcmNotConfigured) until `apps set-fcm` adds one again."
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let updated = try await withApps(logger: logger, database: database) { apps in
                try await apps.removeFCM(appID: app, audit: CLIAudit.entry("remove FCM", appID: app), logger: logger)
            }
            if output.json { return try printJSON(updated) }
            print("app \(updated.id) (\(updated.bundleID)): FCM removed; it sends through APNs only")
        }
    }

    struct AddKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-key",
            abstract: "Make a new device API key for an app and print it (shown only once).",
            discussion: """
                The app's other keys keep working. To retire a key (leaked, say): add a key, ship it in the app, \
                and revoke the old one (`apps revoke-key`) once the app versions that send it have aged out. \
                With --json: {"key": {"id": ..., "appId": ..., "createdAt": ...}, "apiKey": ...}.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let (key, secret) = try await withApps(logger: logger, database: database) { apps in
                try await apps.addAPIKey(appID: app, audit: CLIAudit.entry("add key", appID: app), logger: logger)
            }
            if output.json { return try printJSON(NewKey(key: key, apiKey: secret.secret)) }
            print("key \(key.id) of app \(key.appID) (shown only now; the app sends it as X-API-Key): \(secret.secret)")
        }

        struct NewKey: Encodable {
            var key: AppAPIKey
            var apiKey: String
        }
    }

    struct RevokeKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-key",
            abstract: "Revoke one of an app's device API keys: requests with it answer 401 (within 30 s).",
            discussion: """
                The app's last active key is not revoked (every installed copy of the app would answer 401, with no \
                key to ship instead): add a key first. Revoked keys stay listed by `apps keys`.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @Option(name: .customLong("key"), help: "The key's id (see `paperboy apps keys --app ID`).")
        var keyID: Int

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let key = try await withApps(logger: logger, database: database) { apps in
                try await apps.revokeAPIKey(
                    appID: app,
                    keyID: keyID,
                    audit: CLIAudit.entry("revoke key", appID: app, detail: "key \(keyID)"),
                    logger: logger
                )
            }
            if output.json { return try printJSON(key) }
            let at = key.revokedAt?.formatted(.iso8601) ?? "-"
            print("key \(key.id) of app \(key.appID) revoked (at \(at)); requests with it answer 401 within 30 s")
        }
    }

    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List an app's device API keys: when each was made, last used and revoked (never the keys).",
            discussion: """
                LAST USED is when a server last looked the key up, to within about 10 minutes (a key in use is \
                recorded at most every 10 minutes); - when no server has seen it since it was made or since \
                migration 0013.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let keys = try await withApps(logger: logger, database: database) { apps in
                try await apps.apiKeys(appID: app, logger: logger)
            }
            if output.json { return try printJSON(keys) }
            print(TerminalText.row([("ID", 6), ("CREATED", 22), ("LAST USED", 22)], last: "REVOKED"))
            for key in keys {
                print(
                    TerminalText.row(
                        [("\(key.id)", 6), (key.createdAt.formatted(.iso8601), 22), (key.lastUsedAt?.formatted(.iso8601) ?? "-", 22)],
                        last: key.revokedAt?.formatted(.iso8601) ?? "-"
                    )
                )
            }
        }
    }
}

/// `--team-id`, `--key-id` and `--key-file`: an app's APNs credentials, all three or none.
struct APNsCredentialOptions: ParsableArguments {
    @Option(name: .customLong("team-id"), help: "The Apple developer team id (10 characters).")
    var teamID: String?

    @Option(name: .customLong("key-id"), help: "The APNs auth key id (10 characters).")
    var keyID: String?

    @Option(
        name: .customLong("key-file"),
        help: "Path of the APNs auth key (.p8). Only the path is stored, never the key."
    )
    var keyFile: String?

    /// The credentials, checked as the sender will load them (the key file exists, is readable and holds a
    /// P-256 key), or nil when none of the three flags is given.
    /// - Throws: `ValidationError` naming the flag: one missing, a malformed value, or a key that does not load.
    func checkedIfGiven() throws -> APNsCredentials? {
        let given = [("--team-id", teamID), ("--key-id", keyID), ("--key-file", keyFile)]
        let missing = given.filter { $0.1 == nil }.map(\.0)
        if missing.count == 3 { return nil }
        guard missing.isEmpty, let teamID, let keyID, let keyFile else {
            throw ValidationError("--team-id, --key-id and --key-file go together (APNs); missing \(missing.joined(separator: ", "))")
        }
        let credentials: APNsCredentials
        do {
            credentials = try APNsCredentials(teamID: teamID, keyID: keyID, keyReference: URL(fileURLWithPath: keyFile).standardizedFileURL.path)
        } catch {
            throw ValidationError("--\(Self.flagName(error.field) ?? "key-file"): \(error.message)")
        }
        do {
            // The same check the sender makes when it loads the key: exists, readable, P-256.
            _ = try APNsSigningKey(pemFile: credentials.keyReference, keyID: keyID, teamID: teamID)
        } catch {
            throw ValidationError("--key-file: \(error)")
        }
        return credentials
    }

    /// The flag of a ``StoreError``'s field, for the APNs fields.
    static func flagName(_ field: String?) -> String? {
        switch field {
        case "teamId": "team-id"
        case "keyId": "key-id"
        case "keyFile": "key-file"
        default: nil
        }
    }
}

/// Prints which providers an app has, one line each.
private func printProviders(_ app: App) {
    if let apns = app.apns { print("APNs: team \(apns.teamID), key \(apns.keyID), key file \(apns.keyReference)") }
    if let fcm = app.fcm { print("FCM: project \(fcm.projectID), service account \(fcm.serviceAccount)") }
}

/// Runs `body` with the apps of the configured database, turning the store's refusals into messages that name
/// the flag: `--app` for an unknown app, `--key` for an unknown key or the app's last active one.
private func withApps<Result: Sendable>(
    logger: Logger,
    database: DatabaseOptions,
    _ body: (AppRepository) async throws -> Result
) async throws -> Result {
    try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
        do {
            return try await body(AppRepository(client: client))
        } catch let error as StoreError {
            switch error.field {
            case "app": throw CommandError("--app: \(error.message) (see `paperboy apps list`)")
            case "key": throw CommandError("--key: \(error.message)")
            default: throw CommandError(error.message)
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
