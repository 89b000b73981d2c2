import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PostgresNIO

struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Seed a synthetic fleet of devices for benchmarks and the demo, and count an app's devices.",
        subcommands: [Seed.self, Count.self]
    )

    struct Seed: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bulk-insert synthetic devices (deterministic tokens from --seed), far faster than registering them through the API.",
            discussion: """
                Devices are stored as registration stores them: active, subscribed to every --publication, \
                with 32-byte tokens derived from --seed and their index, so the same command inserts nothing \
                the second time. --prefix gives a share of the tokens a hex prefix, e.g. --prefix dead=0.05 \
                with `paperboy apns-sim --token-outcome dead=410:Unregistered`. --fcm gives a share of the \
                fleet to Android devices registered with FCM (152-character FCM tokens; production only), for \
                mixed fleets; it is 0 by default, so the same command seeds the same APNs fleet as before.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (default: the only registered app).")
        var app: Int?

        @Option(help: "A publication the devices subscribe to, e.g. morning; repeat for more.")
        var publication: [String] = []

        @Option(help: "How many devices to seed (1 to 50000000).")
        var count: Int

        @Option(help: "production or sandbox.")
        var environment = "production"

        @Option(help: "Makes the tokens and attributes repeatable.")
        var seed: UInt64 = 1

        @Option(help: ArgumentHelp("The share of devices with alerts authorized (0 to 1).", valueName: "share"))
        var alerts = 0.3

        @Option(name: .customLong("auto-download"), help: ArgumentHelp("The share of devices with auto-download on (0 to 1).", valueName: "share"))
        var autoDownload = 1.0

        @Option(help: ArgumentHelp("Image tier shares, e.g. small=0.2,medium=0.3,large=0.5 (relative).", valueName: "shares"))
        var tiers = "small=0.2,medium=0.3,large=0.5"

        @Option(name: .customLong("token-prefix"), help: ArgumentHelp("A hex prefix for every token not given a --prefix.", valueName: "hex"))
        var tokenPrefix = ""

        @Option(
            name: .customLong("prefix"),
            help: ArgumentHelp("A hex prefix for a share of the tokens, e.g. dead=0.05; repeat for more.", valueName: "hex=share")
        )
        var prefixes: [String] = []

        @Option(name: .customLong("time-zone"), help: ArgumentHelp("The IANA time zone the devices report.", valueName: "zone"))
        var timeZone = "Asia/Tokyo"

        @Option(
            name: .customLong("fcm"),
            help: ArgumentHelp("The share of devices that are Android devices registered with FCM (0 to 1; production only).", valueName: "share")
        )
        var fcm = 0.0

        @OptionGroup var output: OutputOptions

        func validate() throws {
            _ = try options()
        }

        /// The validated flags. - Throws: `ValidationError` naming the flag at fault.
        func options() throws -> Options {
            guard (1...DeviceSeeder.maximumCount).contains(count) else {
                throw ValidationError("--count must be between 1 and \(DeviceSeeder.maximumCount), got \(count)")
            }
            if let app, app < 1 { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
            guard !publication.isEmpty else {
                throw ValidationError("--publication: name at least one publication the devices subscribe to, e.g. --publication morning")
            }
            let environment = try APNsEnvironment(flag: environment)
            guard alerts.isFinite, (0...1).contains(alerts) else { throw ValidationError("--alerts must be a share between 0 and 1, got \(alerts)") }
            guard autoDownload.isFinite, (0...1).contains(autoDownload) else {
                throw ValidationError("--auto-download must be a share between 0 and 1, got \(autoDownload)")
            }
            guard fcm.isFinite, (0...1).contains(fcm) else { throw ValidationError("--fcm must be a share between 0 and 1, got \(fcm)") }
            guard fcm == 0 || environment == .production else {
                throw ValidationError("--fcm: FCM devices are production devices (FCM has no sandbox); seed them with --environment production")
            }
            _ = try TimeZone(flag: timeZone)
            try Self.checkHex(tokenPrefix, flag: "--token-prefix")
            var parsedPrefixes: [DeviceSeeder.TokenPrefix] = []
            for text in prefixes {
                let parts = text.split(separator: "=", omittingEmptySubsequences: false)
                guard parts.count == 2, let share = Double(parts[1]), share.isFinite, (0...1).contains(share) else {
                    throw ValidationError("--prefix: HEX=SHARE with a share between 0 and 1, e.g. dead=0.05, got '\(text)'")
                }
                try Self.checkHex(String(parts[0]), flag: "--prefix")
                parsedPrefixes.append(.init(hex: String(parts[0]), share: share))
            }
            guard parsedPrefixes.reduce(0, { $0 + $1.share }) <= 1 + 1e-9 else {
                throw ValidationError("--prefix: the shares add up to more than 1")
            }
            return Options(environment: environment, tiers: try Self.tierShares(tiers), prefixes: parsedPrefixes)
        }

        struct Options {
            var environment: APNsEnvironment
            var tiers: DeviceSeeder.TierShares
            var prefixes: [DeviceSeeder.TokenPrefix]
        }

        static func checkHex(_ text: String, flag: String) throws {
            guard text.count <= DeviceSeeder.maximumPrefixLength, text.allSatisfy(\.isHexDigit) else {
                throw ValidationError("\(flag): up to \(DeviceSeeder.maximumPrefixLength) hex digits, got '\(text)'")
            }
        }

        static func tierShares(_ text: String) throws -> DeviceSeeder.TierShares {
            var shares = DeviceSeeder.TierShares(small: 0, medium: 0, large: 0)
            for part in text.split(separator: ",") {
                let pair = part.split(separator: "=", omittingEmptySubsequences: false)
                guard pair.count == 2, let value = Double(pair[1].trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0 else {
                    throw ValidationError("--tiers: TIER=SHARE pairs, e.g. small=0.2,medium=0.3,large=0.5, got '\(text)'")
                }
                switch ImageTier(rawValue: pair[0].trimmingCharacters(in: .whitespaces)) {
                case .small: shares.small = value
                case .medium: shares.medium = value
                case .large: shares.large = value
                case nil: throw ValidationError("--tiers: '\(pair[0])' is not a tier (small, medium, large)")
                }
            }
            guard shares.small + shares.medium + shares.large > 0 else { throw ValidationError("--tiers: the shares must not all be 0") }
            return shares
        }

        /// What `seed --json` prints.
        struct Seeded: Encodable {
            var app: Int
            var environment: APNsEnvironment
            var requested: Int
            var inserted: Int
            var skipped: Int
            var seconds: Double
            var rowsPerSecond: Double
        }

        func run() async throws {
            let options = try options()
            let logger = Logger(label: "paperboy.devices")
            let reporter = ProgressReporter(total: count, terminal: isatty(STDERR_FILENO) == 1)
            let seeded = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                let appID = try await resolveApp(app, client: client, logger: logger)
                let start = ContinuousClock.now
                let inserted: Int
                do {
                    inserted = try await DeviceSeeder(client: client).seed(
                        appID: appID,
                        publicationSlugs: publication,
                        count: count,
                        environment: options.environment,
                        seed: seed,
                        tokenPrefix: tokenPrefix,
                        prefixes: options.prefixes,
                        alertsShare: alerts,
                        autoDownloadShare: autoDownload,
                        fcmShare: fcm,
                        tiers: options.tiers,
                        timeZone: timeZone,
                        progress: { reporter.update($0) },
                        logger: logger
                    )
                } catch let error as StoreError {
                    reporter.finish()
                    if error.field == "publication" {
                        throw CommandError("--publication: \(error.message) (see `paperboy publications list --app \(appID)`)")
                    }
                    throw CommandError("\(error)")
                }
                reporter.finish()
                // Seeding writes in many batches, each its own transaction: its audit entry follows them.
                try await AuditRepository(client: client).record(
                    CLIAudit.entry("seed devices", appID: appID, detail: "\(inserted) of \(count) \(options.environment.rawValue) devices inserted"),
                    logger: logger
                )
                let elapsed = start.duration(to: .now)
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                return Seeded(
                    app: appID,
                    environment: options.environment,
                    requested: count,
                    inserted: inserted,
                    skipped: count - inserted,
                    seconds: seconds,
                    rowsPerSecond: seconds > 0 ? Double(count) / seconds : 0
                )
            }
            if output.json { return try printJSON(seeded) }
            let skipped = seeded.skipped > 0 ? " (\(seeded.skipped.formatted()) already stored, skipped)" : ""
            print(
                "inserted \(seeded.inserted.formatted()) of \(seeded.requested.formatted()) \(seeded.environment.rawValue) devices into app \(seeded.app)\(skipped)"
            )
            print(String(format: "%.1f s, %.0f rows/s", seeded.seconds, seeded.rowsPerSecond))
        }
    }

    struct Count: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count an app's devices: active and total, per environment, and those registered with FCM."
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The app's id (default: the only registered app).")
        var app: Int?

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let app, app < 1 { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
        }

        func run() async throws {
            let logger = Logger(label: "paperboy.devices")
            let counts = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                let appID = try await resolveApp(app, client: client, logger: logger)
                return try await DeviceRepository(client: client).counts(appID: appID, logger: logger)
            }
            if output.json { return try printJSON(counts) }
            print("app \(counts.appID): \(counts.active.formatted()) active of \(counts.total.formatted()) devices")
            for (name, row) in [("production", counts.production), ("sandbox", counts.sandbox), ("FCM", counts.fcm)] {
                print(
                    "  \(name.padding(toLength: 10, withPad: " ", startingAt: 0))  \(row.active.formatted()) active "
                        + "(\(row.activeAutoDownload.formatted()) with auto-download) of \(row.total.formatted())"
                )
            }
        }
    }
}

/// `--app`, else the only registered app. - Throws: `CommandError` naming `--app`.
private func resolveApp(_ app: Int?, client: PostgresClient, logger: Logger) async throws -> Int {
    let apps = try await AppRepository(client: client).list(logger: logger)
    if let app {
        guard apps.contains(where: { $0.id == app }) else {
            throw CommandError("--app: no app \(app) (see `paperboy apps list`)")
        }
        return app
    }
    switch apps.count {
    case 1: return apps[0].id
    case 0: throw CommandError("--app: no apps are registered; register one with `paperboy apps add`")
    default: throw CommandError("--app: \(apps.count) apps are registered; choose one with --app (see `paperboy apps list`)")
    }
}

/// Progress on stderr: a percentage updated in place on a terminal, else a line every 10%.
private final class ProgressReporter: @unchecked Sendable {
    let total: Int
    let terminal: Bool
    private let start = ContinuousClock.now
    private var lastTenth = 0
    private var shown = false

    init(total: Int, terminal: Bool) {
        self.total = total
        self.terminal = terminal
    }

    func update(_ done: Int) {
        let percent = total > 0 ? Double(done) * 100 / Double(total) : 100
        let elapsed = start.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let text =
            "seeding: " + String(format: "%5.1f%%", percent) + "  \(done.formatted()) / \(total.formatted())  ("
            + String(format: "%.0f", rate) + " rows/s)"
        if terminal {
            write("\r\u{1B}[K" + text)
            shown = true
        } else {
            let tenth = total > 0 ? done * 10 / total : 10
            guard tenth > lastTenth else { return }
            lastTenth = tenth
            write(text + "\n")
        }
    }

    func finish() {
        if terminal && shown { write("\r\u{1B}[K") }
        shown = false
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
