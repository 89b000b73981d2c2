import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyText

extension PushProvider: ExpressibleByArgument {}

extension AppsCommand {
    /// `paperboy apps holds`: the apps' providers held for a suspected misconfiguration.
    struct Holds: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the apps' providers held for a suspected misconfiguration, and the deactivations each holds.",
            discussion: """
                A provider is held, in one environment, when most answers through it for the app's broadcasts in \
                that environment said the device's token is not valid for the app (DeviceTokenNotForTopic, \
                BadDeviceToken, SENDER_ID_MISMATCH, an invalid registration token): more than half of one worker's \
                latest, or of every worker's since the oldest held one. A wrong bundle id, tokens of the other APNs \
                environment, or a service account of another Firebase project, not a fleet of dead tokens. Its sends \
                wait (given back, not failed) and no device is deactivated. Fix the configuration (`apps set-apns`, `set-fcm`, \
                `set-bundle-id`, or `apps release` once fixed otherwise), or, if the tokens really are dead, \
                `apps confirm-deactivations`.
                """
        )

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let holds = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await ProviderHoldRepository(client: client).all(logger: logger)
            }
            if output.json { return try printJSON(holds) }
            guard !holds.isEmpty else {
                print("no app's provider is held")
                return
            }
            print(TerminalText.row([("APP", 5), ("ENVIRONMENT", 12), ("PROVIDER", 9), ("SINCE", 22), ("HELD", 7)], last: "WHY"))
            for hold in holds {
                print(
                    TerminalText.row(
                        [
                            ("\(hold.appID)", 5), (hold.environment.rawValue, 12), (hold.provider.rawValue, 9),
                            (hold.raisedAt.formatted(.iso8601), 22),
                            ("\(hold.heldDeactivations)", 7),
                        ],
                        last: hold.reason
                    )
                )
            }
        }
    }

    /// `paperboy apps release`: the configuration was at fault and is fixed.
    struct Release: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "End a provider's hold once its configuration is fixed: sends resume, and no device is deactivated.",
            discussion: """
                The deactivations held for "token not valid" answers of the app's provider are dropped: those devices \
                stay active and are sent again. `apps set-apns`, `set-fcm` and `set-bundle-id` do this by themselves; \
                use this command when the fix was elsewhere (the Firebase project, Apple's developer account, the \
                endpoint). If the answers come back the same, the provider is held again.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @Option(help: "The provider held: apns or fcm (see `paperboy apps holds`).")
        var provider: PushProvider

        @Option(help: "The environment held: production or sandbox (default: both; see `paperboy apps holds`).")
        var environment: String?

        @OptionGroup var output: OutputOptions

        func validate() throws { _ = try environment.map(APNsEnvironment.init(flag:)) }

        struct Released: Encodable {
            var app: Int
            var provider: PushProvider
            var released: Bool
            var dropped: Int
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let (released, dropped) = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await ProviderHoldRepository(client: client).release(
                    appID: app,
                    provider: provider,
                    environment: try environment.map(APNsEnvironment.init(flag:)),
                    audit: CLIAudit.entry("release hold \(provider.rawValue)\(environment.map { " " + $0 } ?? "")", appID: app),
                    logger: logger
                )
            }
            if output.json { return try printJSON(Released(app: app, provider: provider, released: released, dropped: dropped)) }
            guard released || dropped > 0 else {
                throw AppsCommand.notHeld(app: app, provider: provider)
            }
            print("app \(app) \(provider.rawValue): released; \(dropped) held deactivations dropped, those devices stay active and are sent again")
        }
    }

    /// The error of `release` and `confirm-deactivations` for a provider of an app that no hold stops.
    static func notHeld(app: Int, provider: PushProvider) -> CommandError {
        CommandError("--app, --provider: app \(app) \(provider.rawValue) is not held (see `paperboy apps holds`)")
    }

    /// `paperboy apps confirm-deactivations`: the tokens really are dead.
    struct ConfirmDeactivations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "confirm-deactivations",
            abstract: "Apply the deactivations a provider's hold kept, and end the hold: the tokens really are not valid for the app.",
            discussion: """
                For when the configuration is right and most tokens of the app really are of another app or \
                environment (an import of old tokens, say). A device registered again after its answer stays active.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @Option(help: "The provider held: apns or fcm (see `paperboy apps holds`).")
        var provider: PushProvider

        @Option(help: "The environment held: production or sandbox (default: both; see `paperboy apps holds`).")
        var environment: String?

        @OptionGroup var output: OutputOptions

        func validate() throws { _ = try environment.map(APNsEnvironment.init(flag:)) }

        struct Confirmed: Encodable {
            var app: Int
            var provider: PushProvider
            var released: Bool
            var deactivated: Int
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let (released, deactivated) = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await ProviderHoldRepository(client: client).confirm(
                    appID: app,
                    provider: provider,
                    environment: try environment.map(APNsEnvironment.init(flag:)),
                    audit: CLIAudit.entry("confirm deactivations \(provider.rawValue)\(environment.map { " " + $0 } ?? "")", appID: app),
                    logger: logger
                )
            }
            if output.json { return try printJSON(Confirmed(app: app, provider: provider, released: released, deactivated: deactivated)) }
            guard released || deactivated > 0 else {
                throw AppsCommand.notHeld(app: app, provider: provider)
            }
            print("app \(app) \(provider.rawValue): \(deactivated) devices deactivated\(released ? "; the hold ended and sends resume" : "")")
        }
    }

    /// `paperboy apps set-bundle-id`: the fix for a wrong bundle id.
    struct SetBundleID: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-bundle-id",
            abstract: "Change an app's bundle id (its APNs topic): the fix when APNs answers DeviceTokenNotForTopic for every device.",
            discussion: "An APNs hold of the app ends and the deactivations it held are dropped; running workers use the new topic at once."
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (see `paperboy apps list`).")
        var app: Int

        @Option(name: .customLong("bundle-id"), help: "The app's bundle id, e.g. com.example.news.")
        var bundleID: String

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard app >= 1 else { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
            guard (1...255).contains(bundleID.utf8.count), !bundleID.contains(where: \.isWhitespace) else {
                throw ValidationError("--bundle-id must be 1 to 255 characters without spaces, e.g. com.example.news")
            }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.apps")
            let updated = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await AppRepository(client: client).setBundleID(
                        appID: app,
                        bundleID,
                        audit: CLIAudit.entry("set bundle id", appID: app, detail: bundleID),
                        logger: logger
                    )
                } catch let error as StoreError {
                    throw CommandError("--\(error.field == "bundleId" ? "bundle-id" : "app"): \(error.message)")
                }
            }
            if output.json { return try printJSON(updated) }
            print("app \(updated.id): bundle id \(updated.bundleID); an APNs hold, if there was one, is released")
        }
    }
}
