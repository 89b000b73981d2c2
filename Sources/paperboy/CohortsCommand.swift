import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyText
import PostgresNIO

struct CohortsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cohorts",
        abstract: "Plan how a publication's devices are split into cohorts and when each cohort is woken.",
        subcommands: [Plan.self, Show.self]
    )

    struct Plan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Count a publication's targets per cohort and show the send plan: a table and a chart of sends per minute, "
                + "and what the readers' habits do to the order (in --time-zone's morning)."
        )

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var plan: CohortPlanOptions

        @OptionGroup var output: OutputOptions

        func validate() throws {
            _ = try plan.request(requiringPlan: true)
        }

        func run() async throws {
            guard let request = try plan.request(requiringPlan: true) else { return }
            let logger = Logger(label: "paperboy.cohorts")
            let planned = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                try await request.plan(client: client, logger: logger)
            }
            if output.json { return try printJSON(PlanWithOrder(plan: planned.plan, habitOrder: planned.habitOrder)) }
            print(planned.summary(request))
            if let order = planned.habitOrder, planned.devices > 0 { print(order.summary(timeZone: request.timeZone)) }
            guard planned.devices > 0 else { return }
            print()
            print(planned.plan.table(timeZone: request.timeZone))
            print()
            print(planned.plan.chart(timeZone: request.timeZone))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A device's cohort, and with --publication and --window or --capacity, its cohort's slot in that plan."
        )

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The device token, in hex.")
        var token: String

        @OptionGroup var plan: CohortPlanOptions

        @OptionGroup var output: OutputOptions

        func validate() throws {
            _ = try deviceToken()
            _ = try plan.request(requiringPlan: false)
        }

        func run() async throws {
            let token = try deviceToken()
            let cohort = token.cohort(count: plan.cohorts)
            let keys = DeviceToken.cohortKeyRange(index: cohort, count: plan.cohorts)
            var shown = Shown(
                token: token.hex,
                cohortKey: token.cohortKey,
                cohorts: plan.cohorts,
                cohort: cohort,
                cohortKeys: .init(lower: keys.lowerBound, upper: keys.upperBound)
            )
            let request = try plan.request(requiringPlan: false)
            var planned: PlannedCohorts?
            if let request {
                let logger = Logger(label: "paperboy.cohorts")
                let (result, device) = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
                    let result = try await request.plan(client: client, logger: logger)
                    let device = try await DeviceRepository(client: client).find(appID: result.publication.appID, token: token, logger: logger)
                    return (result, device)
                }
                planned = result
                shown.slot = result.plan.cohorts[cohort]
                shown.target = Shown.Target(device, publication: result.publication, environment: request.environment)
            }
            if output.json { return try printJSON(shown) }
            print("token \(token.hex)")
            print(
                "cohort \(cohort) of \(plan.cohorts) (cohort key \(token.cohortKey); cohort \(cohort) holds keys \(keys.lowerBound)..<\(keys.upperBound))"
            )
            guard let request, let planned, let slot = shown.slot, let target = shown.target else { return }
            print(planned.summary(request))
            let zone = request.timeZone
            print(
                "its slot: \(TerminalText.clock(slot.start, timeZone: zone, fraction: true)) – \(TerminalText.clock(slot.end, timeZone: zone, fraction: true)) "
                    + "\(zone.identifier), \(TerminalText.grouped(slot.devices)) devices at \(String(format: "%.1f", slot.rate))/s"
            )
            print("the device: \(target.reason)")
        }

        private func deviceToken() throws -> DeviceToken {
            do {
                return try DeviceToken(hex: token)
            } catch {
                throw ValidationError("<token>: \(error)")
            }
        }

        /// What `show --json` prints.
        struct Shown: Encodable {
            struct KeyRange: Encodable {
                var lower: UInt64
                var upper: UInt64
            }

            /// Whether the plan's broadcast would send to this device, and why.
            struct Target: Encodable {
                var registered: Bool
                var target: Bool
                var reason: String

                init(_ device: Device?, publication: Publication, environment: APNsEnvironment) {
                    guard let device else {
                        self.init(registered: false, target: false, reason: "not registered with app \(publication.appID): not a target")
                        return
                    }
                    let registration = device.registration
                    let missing: String? =
                        if registration.environment != environment {
                            "registered in \(registration.environment.rawValue), not \(environment.rawValue)"
                        } else if !device.active {
                            "inactive (deleted, or unregistered by APNs)"
                        } else if !registration.autoDownload {
                            "auto-download is off"
                        } else if !registration.subscriptions.contains(publication.slug) {
                            "does not subscribe to \(publication.slug)"
                        } else {
                            nil
                        }
                    if let missing {
                        self.init(registered: true, target: false, reason: "\(missing): not a target")
                    } else {
                        self.init(registered: true, target: true, reason: "a target (active, auto-download, subscribes to \(publication.slug))")
                    }
                }

                init(registered: Bool, target: Bool, reason: String) {
                    self.registered = registered
                    self.target = target
                    self.reason = reason
                }
            }

            var token: String
            var cohortKey: UInt32
            var cohorts: Int
            var cohort: Int
            var cohortKeys: KeyRange
            var slot: StaggerPlan.Cohort?
            var target: Target?
        }
    }
}

/// The flags that describe a plan, shared by `cohorts plan` and `cohorts show`.
struct CohortPlanOptions: ParsableArguments {
    @Option(help: "The publication whose subscribers are planned, e.g. morning.")
    var publication: String?

    @Option(help: "The app's id (default: the only registered app).")
    var app: Int?

    @Option(help: ArgumentHelp("Send every target within this window, e.g. 30m, 1h, 90s.", valueName: "duration"))
    var window: String?

    @Option(help: ArgumentHelp("The content API's capacity in wake-ups per second, e.g. 2000/s; the window follows.", valueName: "rate"))
    var capacity: String?

    @Option(help: "How many cohorts the audience is split into (1 to 1024); broadcast's default too.")
    var cohorts = BroadcastOptions.defaultCohorts

    @Option(help: ArgumentHelp("When to begin: 05:00 (the next 05:00), or 2026-11-23T05:00:00+09:00 (default: now).", valueName: "time"))
    var start: String?

    @OptionGroup var timeZone: TimeZoneOptions

    @Option(help: "production or sandbox.")
    var environment = "production"

    @Option(help: ArgumentHelp("The start moves later by up to this much, off the round minute.", valueName: "duration"))
    var jitter = "90s"

    @Option(help: "Makes the jitter repeatable (default: derived from the app, publication, environment and start).")
    var seed: UInt64?

    /// What the flags ask for; nil when they describe no plan and `requiringPlan` is false.
    /// - Throws: `ValidationError` naming the flag at fault.
    func request(requiringPlan: Bool, now: Date = Date()) throws -> CohortPlanRequest? {
        guard CohortRepository.cohortCounts.contains(cohorts) else {
            throw ValidationError(
                "--cohorts: between \(CohortRepository.cohortCounts.lowerBound) and \(CohortRepository.cohortCounts.upperBound), got \(cohorts)"
            )
        }
        let describesPlan = publication != nil || window != nil || capacity != nil || start != nil || seed != nil || app != nil
        guard requiringPlan || describesPlan else { return nil }
        guard let publication else { throw ValidationError("--publication: name the publication to plan, e.g. --publication morning") }
        let pace: StaggerPlan.Pace
        switch (window, capacity) {
        case (let window?, nil):
            do { pace = try StaggerPlan.Pace(window: window) } catch { throw ValidationError("--window: \(error)") }
        case (nil, let capacity?):
            do { pace = try StaggerPlan.Pace(capacity: capacity) } catch { throw ValidationError("--capacity: \(error)") }
        case (nil, nil):
            throw ValidationError("--window or --capacity: give one, e.g. --window 30m or --capacity 2000/s")
        case (.some, .some):
            throw ValidationError("--window and --capacity: give only one; each follows from the other and the device count")
        }
        let zone = try timeZone.zone()
        let environment = try APNsEnvironment(flag: environment)
        let jitterSeconds: TimeInterval
        do { jitterSeconds = try StaggerPlan.seconds(parsing: jitter, allowingZero: true) } catch { throw ValidationError("--jitter: \(error)") }
        guard jitterSeconds >= 1 else { throw ValidationError("--jitter: at least 1s, so that the start leaves the round minute") }
        let requestedStart: Date
        if let start {
            do {
                requestedStart = try StaggerPlan.requestedStart(parsing: start, timeZone: zone, now: now)
            } catch {
                throw ValidationError("--start: \(error)")
            }
        } else {
            requestedStart = now
        }
        return CohortPlanRequest(
            publication: publication,
            app: app,
            pace: pace,
            cohorts: cohorts,
            requestedStart: requestedStart,
            timeZone: zone,
            environment: environment,
            jitter: jitterSeconds,
            seed: seed
        )
    }
}

/// A plan to make from the database's counts.
struct CohortPlanRequest {
    var publication: String
    var app: Int?
    var pace: StaggerPlan.Pace
    var cohorts: Int
    var requestedStart: Date
    var timeZone: TimeZone
    var environment: APNsEnvironment
    var jitter: TimeInterval
    var seed: UInt64?

    /// Resolves the app and publication, counts the targets per cohort and plans their sends.
    /// - Throws: `CommandError` naming the flag at fault (an unknown publication, an app to choose).
    func plan(client: PostgresClient, logger: Logger) async throws -> PlannedCohorts {
        let appID = try await resolveApp(client: client, logger: logger)
        guard let found = try await PublicationRepository(client: client).find(appID: appID, slug: publication, logger: logger) else {
            throw CommandError("--publication: no publication '\(publication)' for app \(appID) (see `paperboy publications list --app \(appID)`)")
        }
        let counts = try await CohortRepository(client: client).targetCounts(
            publication: found,
            environment: environment,
            cohorts: cohorts,
            logger: logger
        )
        // Without --seed the jitter still repeats for the same question, so two runs print the same plan.
        let seed = seed ?? StaggerPlan.seed(for: "\(appID)/\(found.slug)/\(environment.rawValue)/\(Int(requestedStart.timeIntervalSince1970))")
        let plan: StaggerPlan
        do {
            plan = try StaggerPlan(cohortCounts: counts, pace: pace, requestedStart: requestedStart, jitter: jitter, seed: seed)
        } catch {
            throw CommandError("the plan cannot be made: \(error)")
        }
        let orderCounts = try await HabitRepository(client: client).orderCounts(
            of: .targets(of: found, environment: environment),
            cohorts: cohorts,
            logger: logger
        )
        let order = HabitOrder(counts: orderCounts, plan: plan, dayStart: HabitOrder.dayStart(of: plan.start, timeZone: timeZone))
        return PlannedCohorts(publication: found, plan: plan, habitOrder: order)
    }

    private func resolveApp(client: PostgresClient, logger: Logger) async throws -> Int {
        if let app { return app }
        let apps = try await AppRepository(client: client).list(logger: logger)
        switch apps.count {
        case 1: return apps[0].id
        case 0: throw CommandError("--app: no apps are registered; register one with `paperboy apps add`")
        default: throw CommandError("--app: \(apps.count) apps are registered; choose one with --app (see `paperboy apps list`)")
        }
    }
}

/// A plan with what it was made for.
struct PlannedCohorts {
    var publication: Publication
    var plan: StaggerPlan
    /// What the readers' habits do to the order of the plan's slots.
    var habitOrder: HabitOrder?

    var devices: Int { plan.cohorts.reduce(0) { $0 + $1.devices } }

    /// Two or three lines for people: what was planned, the window, the rate and the jittered start.
    func summary(_ request: CohortPlanRequest) -> String {
        let what = "\(publication.slug) (app \(publication.appID), \(request.environment.rawValue))"
        guard devices > 0 else {
            return "no targets: no active \(request.environment.rawValue) devices with auto-download subscribe to \(publication.slug) "
                + "of app \(publication.appID); the plan is empty and nothing would be sent"
        }
        let zone = request.timeZone
        let jitter = Int(plan.start.timeIntervalSince(request.requestedStart).rounded())
        let end = plan.start.addingTimeInterval(plan.window)
        return """
            \(what): \(TerminalText.grouped(devices)) devices in \(plan.cohorts.count) cohorts
            window \(TerminalText.duration(plan.window)) at \(String(format: "%.1f", plan.rate)) sends/s: \
            \(TerminalText.clock(plan.start, timeZone: zone, fraction: false)) to \(TerminalText.clock(end, timeZone: zone, fraction: false)) \
            on \(Self.day(plan.start, zone))
            requested start \(TerminalText.clock(request.requestedStart, timeZone: zone, fraction: false)), moved +\(jitter)s off the round minute
            """
    }

    /// `2026-11-24 (Asia/Tokyo, +09:00)`.
    private static func day(_ date: Date, _ zone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = "yyyy-MM-dd"
        let dayText = formatter.string(from: date)
        formatter.dateFormat = "xxx"
        return "\(dayText) (\(zone.identifier), \(formatter.string(from: date)))"
    }
}

/// `cohorts plan --json`: the plan's fields as before, and `habitOrder` beside them.
struct PlanWithOrder: Encodable {
    var plan: StaggerPlan
    var habitOrder: HabitOrder?

    enum CodingKeys: CodingKey {
        case habitOrder
    }

    func encode(to encoder: any Encoder) throws {
        try plan.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(habitOrder, forKey: .habitOrder)
    }
}
