import Foundation
import Hummingbird
import Logging
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyText

/// Plan and start: a publication's cohort plan for a window or a capacity (the numbers `paperboy cohorts plan`
/// prints, as a table and a chart), then a broadcast of one of its editions with the options, or a dry run.
extension ConsoleRoutes {
    struct PlanPage: Sendable {
        struct Option: Sendable {
            var value: String
            var label: String
            var selected: Bool
        }

        struct Form: Sendable {
            var environment = "production"
            var window = "30m"
            var capacity = ""
            var cohorts = "16"
            var start = ""
            var waveInterval = "30m"
            var maxPushes = "auto"
            var dormantAfter = "\(BroadcastOptions.defaultDormantAfter)"
        }

        struct Plan: Sendable {
            struct Cohort: Sendable {
                var index: Int
                var devices: String
                var start: String
                var end: String
                var rate: String
            }

            var summary: String
            var hasTargets: Bool
            var unit: String
            var chart: String
            var cohorts: [Cohort]
            /// How old the audience counts are: they are kept a minute.
            var counted = ""
        }

        struct Start: Sendable {
            struct Has: Sendable {
                var editions: Bool
            }

            var editions: [Option]
            var has: Has
        }

        var frame: Frame
        var error: String?
        var publications: [Option]
        var environments: [Option]
        var form: Form
        var plan: Plan?
        var start: Start?
    }

    @Sendable func planPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        _ = try session(context)
        let query = request.uri.queryParameters
        var form = PlanPage.Form()
        if let value = query.get("environment") { form.environment = value }
        if let value = query.get("window") { form.window = value }
        if let value = query.get("capacity"), !value.isEmpty {
            form.capacity = value
            if query.get("window")?.isEmpty ?? true { form.window = "" }
        }
        if let value = query.get("cohorts") { form.cohorts = value }
        if let value = query.get("start") { form.start = value }
        let page = try await planPage(context: context, publication: query.get("publication"), form: form, logger: context.logger)
        return ConsolePage.render("plan", page, status: page.error == nil ? .ok : .badRequest)
    }

    func planPage(
        context: ConsoleRequestContext,
        publication selected: String?,
        form: PlanPage.Form,
        error: String? = nil,
        logger: Logger
    ) async throws
        -> PlanPage
    {
        let now = self.now
        let publications = try await PublicationRepository(client: client).list(logger: logger)
        let apps = Dictionary(uniqueKeysWithValues: try await AppRepository(client: client).list(logger: logger).map { ($0.id, $0.bundleID) })
        var page = PlanPage(
            frame: frame(context, current: "/console/plan"),
            error: error,
            publications: publications.map { publication in
                .init(
                    value: "\(publication.id)",
                    label: "\(publication.slug) (\(apps[publication.appID] ?? "app \(publication.appID)"))",
                    selected: "\(publication.id)" == selected
                )
            },
            environments: APNsEnvironment.allCases.map { .init(value: $0.rawValue, label: $0.rawValue, selected: $0.rawValue == form.environment) },
            form: form
        )
        guard let selected, let publication = publications.first(where: { "\($0.id)" == selected }) else { return page }
        do {
            let environment = try Self.environment(form.environment)
            let pace = try Self.pace(window: form.window, capacity: form.capacity)
            let cohorts = try Self.integer(form.cohorts, field: "cohorts", in: CohortRepository.cohortCounts)
            let requestedStart: Date
            if form.start.trimmingCharacters(in: .whitespaces).isEmpty || form.start == "now" {
                requestedStart = now
            } else {
                do {
                    requestedStart = try StaggerPlan.requestedStart(parsing: form.start, timeZone: timeZone, now: now)
                } catch {
                    throw ConsolePageError.badRequest("start: \(error)")
                }
            }
            let client = self.client
            let (counted, countedAt) = try await planCounts.value(
                PlanCountCache.Key(publicationID: publication.id, environment: environment.rawValue, cohorts: cohorts),
                now: now
            ) {
                try await planCounting.run(PlanCountCache.Audience(publicationID: publication.id, environment: environment.rawValue)) {
                    let targets = try await CohortRepository(client: client).targetCounts(
                        publication: publication,
                        environment: environment,
                        cohorts: cohorts,
                        logger: logger
                    )
                    let habits = try await HabitRepository(client: client).orderCounts(
                        of: .targets(of: publication, environment: environment),
                        cohorts: cohorts,
                        logger: logger
                    )
                    return PlanCountCache.Counts(targets: targets, habits: habits)
                }
            }
            let counts = counted.targets
            let seed = StaggerPlan.seed(
                for: "\(publication.appID)/\(publication.slug)/\(environment.rawValue)/\(Int(requestedStart.timeIntervalSince1970))"
            )
            let plan: StaggerPlan
            do {
                plan = try StaggerPlan(cohortCounts: counts, pace: pace, requestedStart: requestedStart, jitter: 90, seed: seed)
            } catch {
                throw ConsolePageError.badRequest("The plan cannot be made: \(error)")
            }
            page.plan = Self.planModel(plan, publication: publication, environment: environment, requestedStart: requestedStart, timeZone: timeZone)
            // What the readers' habits do to the order (issue 37), as `cohorts plan` says it.
            if plan.rate > 0 {
                let order = HabitOrder(counts: counted.habits, plan: plan, dayStart: HabitOrder.dayStart(of: plan.start, timeZone: timeZone))
                page.plan?.summary += " " + order.summary(timeZone: timeZone).replacingOccurrences(of: "\n", with: "; ")
            }
            let age = Int(now.timeIntervalSince(countedAt).rounded(.down))
            page.plan?.counted =
                (age < 1 ? "Audience counted just now" : "Audience counted \(age) s ago")
                + " (counts are kept for \(Int(configuration.planCountsTimeToLive)) s)."
        } catch let error as ConsolePageError {
            page.error = error.message
        }
        let editions = try await EditionRepository(client: client).list(
            appID: publication.appID,
            publication: publication.slug,
            limit: 20,
            logger: logger
        )
        .filter { $0.deadline > now }
        page.start = PlanPage.Start(
            editions: editions.map { edition in
                .init(
                    value: edition.id.uuidString.lowercased(),
                    label: "\(edition.manifest.issueDate) (deadline \(TimeText.dateTime(edition.deadline, timeZone: timeZone)))",
                    selected: false
                )
            },
            has: .init(editions: !editions.isEmpty)
        )
        return page
    }

    /// The plan as the page shows it: the summary `cohorts plan` prints, the chart of sends per minute (or per
    /// several minutes when the window is long) and the cohorts' table.
    static func planModel(
        _ plan: StaggerPlan,
        publication: Publication,
        environment: APNsEnvironment,
        requestedStart: Date?,
        timeZone: TimeZone
    ) -> PlanPage.Plan {
        let devices = plan.cohorts.reduce(0) { $0 + $1.devices }
        guard devices > 0, plan.rate > 0 else {
            return PlanPage.Plan(
                summary:
                    "No targets: no active \(environment.rawValue) device with auto-download subscribes to \(publication.slug); nothing would be sent.",
                hasTargets: false,
                unit: "minute",
                chart: "",
                cohorts: []
            )
        }
        let minutesPerBar = max(1, Int((plan.window / 60 / 60).rounded(.up)))
        let bucket = Double(minutesPerBar * 60)
        let end = plan.start.addingTimeInterval(plan.window)
        var summary =
            "\(Numbers.grouped(devices)) devices in \(plan.cohorts.count) cohorts, window \(TerminalText.duration(plan.window)) at \(Numbers.rate((plan.rate * 10).rounded() / 10)) sends/s: "
            + "\(TimeText.dateTime(plan.start, timeZone: timeZone)) to \(TimeText.clock(end, timeZone: timeZone)) \(timeZone.identifier)"
        if let requestedStart {
            summary += ", moved +\(Int(plan.start.timeIntervalSince(requestedStart).rounded()))s off the requested start."
        }
        if let note = plan.note { summary += " " + note }
        let unit = minutesPerBar == 1 ? "minute" : "\(minutesPerBar) minutes"
        return PlanPage.Plan(
            summary: summary,
            hasTargets: true,
            unit: unit,
            chart: TimeChart.bars(
                counts: plan.sends(perBucketOf: bucket),
                start: plan.start,
                bucket: bucket,
                unit: "sends per \(unit)",
                name: "planned sends",
                timeZone: timeZone
            ).svg(title: "Planned sends per \(unit)"),
            cohorts: plan.cohorts.map { cohort in
                .init(
                    index: cohort.index,
                    devices: Numbers.grouped(cohort.devices),
                    start: TerminalText.clock(cohort.start, timeZone: timeZone, fraction: true),
                    end: TerminalText.clock(cohort.end, timeZone: timeZone, fraction: true),
                    rate: String(format: "%.1f", cohort.rate)
                )
            }
        )
    }

    // MARK: - Start

    struct StartForm: Decodable {
        var csrf: String?
        var edition: String?
        var environment: String?
        var window: String?
        var capacity: String?
        var cohorts: String?
        var waveInterval: String?
        var maxPushes: String?
        var dormantAfter: String?
        var alertLastResort: String?
        var dryRun: String?
    }

    @Sendable func startBroadcast(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = try await form(StartForm.self, request)
        let session = try formSession(request, context: context, form: form.csrf, doing: "start a broadcast")
        guard let editionID = form.edition.flatMap(UUID.init(uuidString:)) else {
            throw ConsolePageError.badRequest("edition: choose an edition.")
        }
        let environment = try Self.environment(form.environment ?? "production")
        var options = BroadcastOptions()
        options.pace = try Self.pace(window: form.window ?? "", capacity: form.capacity ?? "")
        options.cohorts = try Self.integer(form.cohorts ?? "16", field: "cohorts", in: CohortRepository.cohortCounts)
        if let text = form.waveInterval, !text.trimmingCharacters(in: .whitespaces).isEmpty {
            do {
                options.waveInterval = try StaggerPlan.seconds(parsing: text)
            } catch {
                throw ConsolePageError.badRequest("waveInterval: \(error)")
            }
        }
        let maxPushes = (form.maxPushes ?? "auto").trimmingCharacters(in: .whitespaces).lowercased()
        if maxPushes.isEmpty || maxPushes == "auto" {
            options.maxPushesPerDevice = .auto
        } else {
            options.maxPushesPerDevice = .fixed(try Self.integer(maxPushes, field: "maxPushes", in: BroadcastOptions.maxPushesPerDeviceRange))
        }
        options.dormantAfter = try Self.integer(
            form.dormantAfter ?? "\(options.dormantAfter)",
            field: "dormantAfter",
            in: BroadcastOptions.dormantAfterRange
        )
        options.alertLastResort = form.alertLastResort == "on"
        let now = self.now
        let logger = context.logger

        if form.dryRun == "on" {
            let plan = try await broadcasts.plan(editionID: editionID, environment: environment, options: options, now: now, logger: logger)
            guard let edition = try await EditionRepository(client: client).find(id: editionID, logger: logger) else {
                throw ConsolePageError.notFound("There is no edition \(editionID.uuidString.lowercased()).")
            }
            let publication = try await PublicationRepository(client: client).resolve(
                slug: edition.manifest.publication,
                appID: edition.appID,
                logger: logger
            )
            var page = try await planPage(
                context: context,
                publication: "\(publication.id)",
                form: PlanPage.Form(
                    environment: environment.rawValue,
                    window: form.window ?? "",
                    capacity: form.capacity ?? "",
                    cohorts: "\(options.cohorts)"
                ),
                logger: logger
            )
            var model = Self.planModel(plan, publication: publication, environment: environment, requestedStart: nil, timeZone: timeZone)
            model.summary = "Dry run of edition \(edition.manifest.issueDate): nothing is stored or sent. " + model.summary
            page.plan = model
            return ConsolePage.render("plan", page)
        }

        try await BroadcastPreflight.check(
            editionID: editionID,
            environment: environment,
            editions: EditionRepository(client: client),
            apps: AppRepository(client: client),
            logger: logger
        )
        let start = try await broadcasts.start(
            editionID: editionID,
            environment: environment,
            options: options,
            origin: "console",
            now: now,
            audit: auditEntry(
                session,
                request: request,
                action: "start broadcast",
                editionID: editionID,
                detail: "started \(environment.rawValue) with \(Self.optionsSummary(options))"
            ),
            logger: logger
        )
        let id = start.broadcast.id
        if !start.created {
            // Nothing changed; recorded all the same, so that the page says who tried.
            try await audit.record(
                auditEntry(
                    session,
                    request: request,
                    action: "start broadcast (attached)",
                    broadcastID: id,
                    editionID: editionID,
                    detail: "the edition had a broadcast in \(environment.rawValue) already; nothing new was started"
                ),
                logger: logger
            )
        }
        logger.notice(
            "console started a broadcast",
            metadata: [LogKey.broadcast: "\(id.uuidString.lowercased())", LogKey.role: "\(session.role.rawValue)"]
        )
        return ConsolePage.redirect(
            to: context.origin.link("/console/broadcasts/\(id.uuidString.lowercased())?done=\(start.created ? "started" : "attached")")
        )
    }

    // MARK: - Reading the forms' fields, naming the field at fault

    static func environment(_ text: String) throws -> APNsEnvironment {
        do {
            return try RequestValue.choice(text, field: "environment", as: APNsEnvironment.self)
        } catch {
            throw ConsolePageError.badRequest("\(error)")
        }
    }

    static func pace(window: String, capacity: String) throws -> StaggerPlan.Pace {
        let window = window.trimmingCharacters(in: .whitespaces)
        let capacity = capacity.trimmingCharacters(in: .whitespaces)
        switch (window.isEmpty, capacity.isEmpty) {
        case (false, true):
            do { return try StaggerPlan.Pace(window: window) } catch { throw ConsolePageError.badRequest("window: \(error)") }
        case (true, false):
            do { return try StaggerPlan.Pace(capacity: capacity) } catch { throw ConsolePageError.badRequest("capacity: \(error)") }
        case (true, true):
            throw ConsolePageError.badRequest("window or capacity: give one, e.g. 30m or 2000/s")
        case (false, false):
            throw ConsolePageError.badRequest("window and capacity: give only one; each follows from the other and the device count")
        }
    }

    static func integer(_ text: String, field: String, in range: ClosedRange<Int>) throws -> Int {
        do {
            return try RequestValue.integer(text, field: field, in: range)
        } catch {
            throw ConsolePageError.badRequest("\(error)")
        }
    }
}
