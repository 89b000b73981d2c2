import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyText

struct SchedulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedules",
        abstract: "Broadcast a publication's newest edition on a cron schedule in an IANA time zone (fired by `paperboy serve`).",
        subcommands: [Add.self, List.self, Remove.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Schedule a publication's broadcasts, e.g. --cron \"0 5 * * *\" --time-zone Asia/Tokyo.",
            discussion: """
                At each instant the newest edition of the publication is broadcast, unless it was broadcast \
                already or is past its deadline. An instant missed while no `paperboy serve` ran fires late, \
                within the edition's life.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The publication to broadcast, e.g. morning.")
        var publication: String

        @Option(help: "The app's id, when more than one app has the publication.")
        var app: Int?

        @Option(help: ArgumentHelp("minute hour day-of-month month day-of-week, e.g. \"0 5 * * *\".", valueName: "expression"))
        var cron: String

        @Option(
            name: .customLong("time-zone"),
            help: ArgumentHelp("The IANA time zone the expression is read in, e.g. Asia/Tokyo.", valueName: "zone")
        )
        var timeZone: String

        @Option(help: "production or sandbox.")
        var environment = "production"

        @OptionGroup var flags: BroadcastFlags

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let app, app < 1 { throw ValidationError("--app must be an app id (see `paperboy apps list`)") }
            do {
                _ = try CronSchedule(parsing: cron)
            } catch {
                throw ValidationError("--cron: \(error)")
            }
            _ = try TimeZone(flag: timeZone)
            _ = try scheduleEnvironment()
            _ = try options()
        }

        func run() async throws {
            let environment = try scheduleEnvironment()
            let options = try options()
            let logger = Logger(label: "paperboy.schedules")
            let schedule = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    return try await ScheduleRepository(client: client).add(
                        publication: publication,
                        appID: app,
                        environment: environment,
                        cron: cron,
                        timeZone: timeZone,
                        options: options,
                        audit: CLIAudit.entry("add schedule"),
                        logger: logger
                    )
                } catch let error as StoreError {
                    let flag = error.field.map { Self.scheduleFlags[$0] ?? BroadcastFlags.flag(forField: $0) }
                    throw CommandError((flag.map { "\($0): " } ?? "") + error.message)
                }
            }
            if output.json { return try printJSON(ShownSchedule(schedule, now: Date())) }
            print(
                "schedule \(schedule.id) added: \(schedule.publication) (app \(schedule.appID), \(schedule.environment.rawValue)) at '\(schedule.cron)' in \(schedule.timeZone)"
            )
            if let next = schedule.next(after: Date()) {
                print("next firing \(SchedulesCommand.local(next, schedule.timeZone)) (\(SchedulesCommand.utc(next)))")
            }
        }

        /// The flag for each schedule field a `StoreError` may name (option fields: ``BroadcastFlags``).
        static let scheduleFlags = ["publication": "--publication", "app": "--app", "cron": "--cron", "timeZone": "--time-zone"]

        private func scheduleEnvironment() throws -> APNsEnvironment {
            try APNsEnvironment(flag: environment)
        }

        private func options() throws -> BroadcastOptions {
            try flags.options()
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List schedules with their next firing, in their zone and in UTC.")

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var output: OutputOptions

        func run() async throws {
            let logger = Logger(label: "paperboy.schedules")
            let schedules = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await ScheduleRepository(client: client).list(logger: logger)
            }
            let now = Date()
            if output.json { return try printJSON(schedules.map { ShownSchedule($0, now: now) }) }
            if schedules.isEmpty {
                return print("no schedules; add one with `paperboy schedules add --publication morning --cron \"0 5 * * *\" --time-zone Asia/Tokyo`")
            }
            print(TerminalText.row([("ID", 6), ("APP", 6), ("PUBLICATION", 14), ("ENV", 12), ("CRON", 18), ("TIME ZONE", 22)], last: "NEXT FIRING"))
            for schedule in schedules {
                let next =
                    schedule.next(after: now).map { "\(SchedulesCommand.local($0, schedule.timeZone)) (\(SchedulesCommand.utc($0)))" } ?? "never"
                print(
                    TerminalText.row(
                        [
                            ("\(schedule.id)", 6), ("\(schedule.appID)", 6), (schedule.publication, 14), (schedule.environment.rawValue, 12),
                            (schedule.cron, 18), (schedule.timeZone, 22),
                        ],
                        last: next
                    )
                )
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a schedule; broadcasts it started go on.")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The schedule's id (see `paperboy schedules list`).")
        var id: Int

        func run() async throws {
            let logger = Logger(label: "paperboy.schedules")
            try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                do {
                    try await ScheduleRepository(client: client).remove(
                        id: id,
                        audit: CLIAudit.entry("remove schedule", detail: "schedule \(id)"),
                        logger: logger
                    )
                } catch let error as StoreError where error.code == .notFound {
                    throw CommandError("<id>: \(error.message)")
                }
            }
            print("schedule \(id) removed")
        }
    }

    /// What `--json` prints for a schedule: the stored schedule and its next firing.
    struct ShownSchedule: Encodable {
        var schedule: Schedule
        var nextFiring: Date?
        var nextFiringLocal: String?

        init(_ schedule: Schedule, now: Date) {
            self.schedule = schedule
            nextFiring = schedule.next(after: now)
            nextFiringLocal = nextFiring.map { SchedulesCommand.local($0, schedule.timeZone) }
        }

        enum CodingKeys: String, CodingKey {
            case nextFiring, nextFiringLocal
        }

        func encode(to encoder: any Encoder) throws {
            try schedule.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(nextFiring, forKey: .nextFiring)
            try container.encodeIfPresent(nextFiringLocal, forKey: .nextFiringLocal)
        }
    }

    /// `2026-11-24 05:00 +09:00` in the schedule's zone.
    static func local(_ date: Date, _ zone: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: zone)
        formatter.dateFormat = "yyyy-MM-dd HH:mm xxx"
        return formatter.string(from: date)
    }

    /// `2026-11-23T20:00:00Z`.
    static func utc(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
