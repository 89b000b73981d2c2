import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyText

struct InsightsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "insights",
        abstract: "What the delivery ledger says about the fleet.",
        subcommands: [WakeRatesCommand.self, ReadyAtOpenCommand.self]
    )

    struct WakeRatesCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "wake-rates",
            abstract: "Observed wake rates: receipts per accepted background push, by wave, platform, model, OS, network, charging and local hour.",
            discussion: """
                Reads the broadcasts created in the last --days days (the ledger keeps the retention, 7 days by default). A push \
                woke the app when the device's receipt for the edition names the push's wave (the payload's `wave`, echoed), or, \
                without one, when it is the device's last push of the broadcast before the receipt (after the alert wave: none). \
                Network, charging, Low Power Mode and Background App Refresh are as the device reported them with its receipt for the publication's previous \
                edition ("unknown" without one). Model family: an Apple identifier up to its comma (iPhone15,2 is iPhone15), any \
                other model as reported. Groups under 200 pushes are merged into "other"; one still under 200 shows no rate. \
                Each rate has its counts and a Wilson 95% interval. A window of more than --sample pushes (by the broadcasts' \
                counters) is read from a sample of the devices: every push of the devices in 1,024 id ranges spread over all ids, \
                about --sample pushes in all; the report says so.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "Only this publication's broadcasts, e.g. morning (default: every publication).")
        var publication: String?

        @Option(help: "The app, when more than one has the publication (or: only this app's publications).")
        var app: Int?

        @Option(help: "The window: broadcasts created in the last N days, 1 to \(WakeRateRepository.maxDays).")
        var days = 14

        @Option(
            help: ArgumentHelp(
                "About how many pushes to count: a window with more is read from a sample of the devices; `all` counts every push (about 6 µs a push: 75 s for a morning broadcast at 10 million devices).",
                valueName: "pushes|all"
            ),
            transform: { text in
                guard let target = WakeRates.SampleTarget(text) else { throw ValidationError("--sample must be \(WakeRates.SampleTarget.rule)") }
                return target
            }
        )
        var sample = WakeRates.SampleTarget.pushes(WakeRates.defaultSamplePushes)

        @OptionGroup var output: OutputOptions

        @OptionGroup var timeZone: TimeZoneOptions

        func validate() throws {
            try InsightsCommand.validate(days: days, app: app, publication: publication, timeZone: timeZone)
        }

        func run() async throws {
            let zone = try timeZone.zone()
            let logger = Logger(label: "paperboy.insights")
            let rates = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await WakeRateRepository(client: client).wakeRates(
                        publication: publication,
                        appID: app,
                        days: days,
                        now: Date(),
                        samplePushes: sample.pushes,
                        logger: logger
                    )
                } catch let error as StoreError {
                    throw CommandError(error.field.map { "--\($0): \(error.message)" } ?? error.message)
                }
            }
            if output.json { return try printJSON(rates) }
            print(rates.report(timeZone: zone))
        }
    }

    struct ReadyAtOpenCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ready-at-open",
            abstract: "Ready at open per broadcast: the share of readers' first opens after the edition's publication that found it held.",
            discussion: """
                One line per broadcast created in the last --days days (the first opens are kept with the ledger, 7 days by \
                default): of its targets whose app reported an open (POST /v1/devices/{token}/opens) after the edition's \
                publication and before its deadline, the share whose first such open found the edition held (a successful \
                receipt stored before it), and how long the others waited for it. No share under 200 opens, no waits under \
                200 waiters, as wake rates.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "Only this publication's broadcasts, e.g. morning (default: every publication).")
        var publication: String?

        @Option(help: "Only this app's broadcasts.")
        var app: Int?

        @Option(help: "The window: broadcasts created in the last N days, 1 to \(WakeRateRepository.maxDays).")
        var days = 14

        @OptionGroup var output: OutputOptions

        @OptionGroup var timeZone: TimeZoneOptions

        func validate() throws {
            try InsightsCommand.validate(days: days, app: app, publication: publication, timeZone: timeZone)
        }

        func run() async throws {
            let zone = try timeZone.zone()
            let logger = Logger(label: "paperboy.insights")
            let rows = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await HabitRepository(client: client).readyAtOpen(publication: publication, appID: app, days: days, now: Date(), logger: logger)
            }
            if output.json { return try printJSON(rows) }
            guard !rows.isEmpty else { return print("no broadcasts in the last \(days) days") }
            for row in rows {
                let started = TerminalText.clock(row.createdAt, timeZone: zone, fraction: false)
                print(
                    "\(row.publication) \(row.issueDate) (app \(row.appID), \(row.environment.rawValue), started \(started)): "
                        + row.readyAtOpen.textItems.joined(separator: "; ")
                )
            }
        }
    }
}

extension InsightsCommand {
    /// The filters every insight takes: `--days`, `--app`, `--publication`, `--time-zone`.
    static func validate(days: Int, app: Int?, publication: String?, timeZone: TimeZoneOptions) throws {
        guard (1...WakeRateRepository.maxDays).contains(days) else {
            throw ValidationError("--days must be a whole number of days from 1 to \(WakeRateRepository.maxDays)")
        }
        if let app, app < 1 { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
        if let publication, publication.isEmpty { throw ValidationError("--publication must be a publication's id, like morning") }
        _ = try timeZone.zone()
    }
}
