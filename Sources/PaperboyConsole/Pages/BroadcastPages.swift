import Foundation
import Hummingbird
import Logging
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyText
import PostgresNIO

/// The broadcasts: the list, one broadcast live, cancelling and starting.
extension ConsoleRoutes {
    struct ListPage: Sendable {
        struct Running: Sendable {
            var href: String
            var edition: String
            var environment: String
            var wave: String
            var percent: String
            var sent: String
            var accepted: String
            var received: String
            var offPlan: String
            var offPlanClass: String
            var rejected: String
        }

        struct Recent: Sendable {
            var href: String
            var edition: String
            var environment: String
            var state: String
            var failure: String?
            var created: String
            var sent: String
            var accepted: String
            var rejected: String
        }

        struct ScheduleRow: Sendable {
            var id: Int
            var publication: String
            var environment: String
            var cron: String
            var timeZone: String
            var next: String
            var nextRelative: String
            var last: String
            var options: String
        }

        struct Has: Sendable {
            var running: Bool
            var schedules: Bool
            var recent: Bool
        }

        var frame: Frame
        var running: [Running]
        var schedules: [ScheduleRow]
        var recent: [Recent]
        var has: Has
    }

    @Sendable func broadcastList(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        _ = try session(context)
        let now = self.now
        let listed = try await broadcasts.list(limit: 30, logger: context.logger)
        let runningIDs = listed.filter { $0.state == .running }.map(\.id)
        let snapshots = try await console.snapshots(broadcastIDs: runningIDs, logger: context.logger)
        let totals = try await console.totals(broadcastIDs: listed.map(\.id), logger: context.logger)
        var running: [ListPage.Running] = []
        var recent: [ListPage.Recent] = []
        for broadcast in listed {
            let counts = totals[broadcast.id] ?? .init()
            let edition = "\(broadcast.publication) \(broadcast.issueDate)"
            let href = "/console/broadcasts/\(broadcast.id.uuidString.lowercased())"
            if broadcast.state == .running {
                let progress = snapshots[broadcast.id]?.progress
                let current = progress?.currentWave
                let off = progress.flatMap { BroadcastTimeline(progress: $0).offPlan(now: now) }
                running.append(
                    .init(
                        href: href,
                        edition: edition,
                        environment: broadcast.environment.rawValue,
                        wave: current.map { "\($0.wave)/\(progress?.expectedWaves ?? $0.wave)" } ?? "-",
                        percent: current.map { Numbers.percent(done: $0.counts.done, of: $0.counts.planned) }
                            ?? Numbers.percent(done: counts.done, of: counts.planned),
                        sent: Numbers.grouped(counts.sent),
                        accepted: Numbers.grouped(counts.accepted),
                        received: progress.map { Numbers.grouped(BroadcastProgress.received($0.receipts)) } ?? "-",
                        offPlan: BroadcastTimeline.describe(offPlan: off),
                        offPlanClass: (off ?? 0) <= -2 ? "behind" : "good",
                        rejected: Numbers.tally(counts.rejected)
                    )
                )
            } else {
                recent.append(
                    .init(
                        href: href,
                        edition: edition,
                        environment: broadcast.environment.rawValue,
                        state: broadcast.state.rawValue,
                        failure: broadcast.failure,
                        created: TimeText.dateTime(broadcast.createdAt, timeZone: timeZone),
                        sent: Numbers.grouped(counts.sent),
                        accepted: Numbers.grouped(counts.accepted),
                        rejected: Numbers.tally(counts.rejected)
                    )
                )
            }
        }
        let schedules = try await scheduleRows(now: now, logger: context.logger)
        let page = ListPage(
            frame: frame(context, current: "/console/broadcasts"),
            running: running,
            schedules: schedules,
            recent: recent,
            has: .init(running: !running.isEmpty, schedules: !schedules.isEmpty, recent: !recent.isEmpty)
        )
        return ConsolePage.render("broadcasts", page)
    }

    func scheduleRows(now: Date, logger: Logger) async throws -> [ListPage.ScheduleRow] {
        try await ScheduleRepository(client: client).list(logger: logger).map { schedule in
            let next = schedule.next(after: now)
            return ListPage.ScheduleRow(
                id: schedule.id,
                publication: schedule.publication,
                environment: schedule.environment.rawValue,
                cron: schedule.cron,
                timeZone: schedule.timeZone,
                next: next.map { TimeText.dateTime($0, timeZone: TimeZone(identifier: schedule.timeZone) ?? timeZone) + " " + schedule.timeZone }
                    ?? "never",
                nextRelative: next.map { TimeText.relative($0, now: now) } ?? "",
                last: schedule.lastInstant.map { TimeText.dateTime($0, timeZone: timeZone) } ?? "-",
                options: Self.optionsSummary(schedule.options)
            )
        }
    }

    // MARK: - One broadcast

    struct BroadcastPage: Sendable {
        struct ActionRow: Sendable {
            var at: String
            var iso: String
            var who: String
            var action: String
            var detail: String
            var surface: String
        }

        struct WakeRatesTable: Sendable {
            struct Row: Sendable {
                var key: String
                var pushes: String
                var wakes: String
                var rate: String
                var interval: String
            }

            var rows: [Row]
            var sampleNote: String
        }

        struct Has: Sendable {
            var actions: Bool
        }

        var frame: Frame
        var id: String
        var editionID: String
        var edition: String
        var environment: String
        var origin: String
        var created: String
        var deadline: String
        var options: String
        var note: String?
        /// Ready at open, as `broadcast status` says it (issue 37); nil before any first open was counted.
        var readyAtOpen: String?
        var liveURL: String?
        var mayCancel: Bool
        var viewerOnly: Bool
        var live: LiveModel
        var wakeRates: WakeRatesTable?
        var wakeRatesPending: Bool
        var actions: [ActionRow]
        var has: Has
    }

    /// The broadcast's progress for a page: the sampler's snapshot when it is current (a running broadcast sampled
    /// lately, or an ended one sampled after it ended), else read now (a broadcast no sampler saw).
    func currentProgress(_ id: UUID, logger: Logger) async throws -> (BroadcastProgress, Date) {
        guard let broadcast = try await broadcasts.find(id: id, logger: logger) else {
            throw ConsolePageError.notFound("There is no broadcast \(id.uuidString.lowercased()).")
        }
        let now = self.now
        if let snapshot = try await console.snapshots(broadcastIDs: [id], logger: logger)[id], snapshot.progress.state == broadcast.state {
            let stale = ConsoleSampler.staleAfter(interval: configuration.sampleInterval, took: snapshot.took)
            if broadcast.state != .running || now.timeIntervalSince(snapshot.at) < stale {
                return (snapshot.progress, snapshot.at)
            }
        }
        guard let progress = try await broadcasts.progress(id: id, logger: logger) else {
            throw ConsolePageError.notFound("There is no broadcast \(id.uuidString.lowercased()).")
        }
        return (progress, now)
    }

    @Sendable func broadcastPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let session = try session(context)
        let id = try broadcastID(context)
        let now = self.now
        let (progress, asOf) = try await currentProgress(id, logger: context.logger)
        let samples = try await console.samples(broadcastID: id, logger: context.logger)
        let actions = try await audit.entries(broadcastID: id, logger: context.logger)
        var wakeTable: BroadcastPage.WakeRatesTable?
        if progress.state != .running {
            let (client, logger) = (self.client, context.logger)
            let rates = try await wakeRates.value(id, now: now) {
                let (waves, sample) = try await WakeRateRepository(client: client).waveRates(broadcastID: id, logger: logger)
                return WakeRateCache.Rates(waves: waves, sample: sample)
            }.value
            let (waves, sample) = (rates.waves, rates.sample)
            wakeTable = BroadcastPage.WakeRatesTable(
                rows: waves.groups.map { group in
                    .init(
                        key: group.key,
                        pushes: Numbers.grouped(group.pushes),
                        wakes: Numbers.grouped(group.wakes),
                        rate: group.rate.map(Numbers.share) ?? "too few",
                        interval: group.low.flatMap { low in group.high.map { "\(Numbers.share(low)) – \(Numbers.share($0))" } } ?? "-"
                    )
                },
                sampleNote: sample.map { "From a sample of \(Numbers.share($0.fraction)) of the devices." } ?? ""
            )
        }
        let flash: String? =
            switch request.uri.queryParameters.get("done") {
            case "cancelled": "Cancelled."
            case "started": "Started."
            case "attached": "This edition already had a broadcast in that environment: this is it, nothing new was started."
            default: nil
            }
        let running = progress.state == .running
        let page = BroadcastPage(
            frame: frame(context, current: nil, flash: flash),
            id: id.uuidString.lowercased(),
            editionID: progress.editionID.uuidString.lowercased(),
            edition: "\(progress.publication) \(progress.issueDate)",
            environment: progress.environment.rawValue,
            origin: progress.origin,
            created: TimeText.dateTime(progress.createdAt, timeZone: timeZone),
            deadline: TimeText.dateTime(progress.deadline, timeZone: timeZone) + " (" + TimeText.relative(progress.deadline, now: now) + ")",
            options: Self.optionsSummary(progress.options),
            note: progress.note,
            readyAtOpen: progress.readyAtOpen.flatMap { $0.opens > 0 ? $0.textItems.joined(separator: "; ") : nil },
            liveURL: running ? "/console/broadcasts/\(id.uuidString.lowercased())/live" : nil,
            mayCancel: running && session.role.mayAct,
            viewerOnly: running && !session.role.mayAct,
            live: LiveModel(progress: progress, samples: samples, asOf: asOf, now: now, timeZone: timeZone),
            wakeRates: wakeTable,
            wakeRatesPending: running,
            actions: actions.map(actionRow),
            has: .init(actions: !actions.isEmpty)
        )
        return ConsolePage.render("broadcast", page)
    }

    func actionRow(_ entry: AuditEntry) -> BroadcastPage.ActionRow {
        BroadcastPage.ActionRow(
            at: TimeText.dateTime(entry.at, timeZone: timeZone),
            iso: TimeText.iso(entry.at),
            who: entry.who,
            action: entry.action,
            detail: entry.detail,
            surface: entry.surface == .console ? "console" : "admin API"
        )
    }

    /// `window 30m, 16 cohorts, waves every 30m, …`: the options as operators write them.
    static func optionsSummary(_ options: BroadcastOptions) -> String {
        let pace =
            switch options.pace {
            case .window(let seconds): "window \(TerminalText.duration(seconds))"
            case .capacity(let perSecond): "capacity \(Numbers.rate(perSecond))/s"
            }
        return [
            pace,
            options.cohorts == 1 ? "1 cohort" : "\(options.cohorts) cohorts",
            "waves every \(TerminalText.duration(options.waveInterval))",
            options.maxPushesPerDevice == .auto ? "pushes per device: auto" : "at most \(options.maxPushesPerDevice) pushes per device",
            options.alertLastResort ? "alert as last resort" : nil,
            options.dormantAfter == 0 ? "dormant devices not spared" : "dormant after \(options.dormantAfter)",
        ].compactMap { $0 }.joined(separator: ", ")
    }

    // MARK: - Cancel

    struct CancelPage: Sendable {
        var frame: Frame
        var id: String
        var edition: String
        var sent: String
        var planned: String
    }

    @Sendable func cancelForm(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let session = try session(context)
        let id = try broadcastID(context)
        guard session.role.mayAct else {
            throw ConsolePageError.forbidden("Only an operator can cancel a broadcast; you are signed in as a viewer.")
        }
        guard let broadcast = try await broadcasts.find(id: id, logger: context.logger) else {
            throw ConsolePageError.notFound("There is no broadcast \(id.uuidString.lowercased()).")
        }
        guard broadcast.state == .running else {
            throw ConsolePageError(status: .conflict, heading: "Not running", message: "The broadcast is \(broadcast.state.rawValue) already.")
        }
        let counts = try await console.totals(broadcastIDs: [id], logger: context.logger)[id] ?? .init()
        let page = CancelPage(
            frame: frame(context, current: nil),
            id: id.uuidString.lowercased(),
            edition: "\(broadcast.publication) \(broadcast.issueDate)",
            sent: Numbers.grouped(counts.sent),
            planned: Numbers.grouped(counts.planned)
        )
        return ConsolePage.render("cancel", page)
    }

    @Sendable func cancelBroadcast(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let id = try broadcastID(context)
        let form = try await form(CSRFForm.self, request)
        let session = try formSession(request, context: context, form: form.csrf, doing: "cancel a broadcast")
        let counts = try await console.totals(broadcastIDs: [id], logger: context.logger)[id] ?? .init()
        let now = self.now
        let audit = auditEntry(
            session,
            request: request,
            action: "cancel broadcast",
            broadcastID: id,
            detail: "cancelled after \(Numbers.grouped(counts.sent)) of \(Numbers.grouped(counts.planned)) planned pushes"
        )
        do {
            _ = try await broadcasts.cancel(id: id, now: now, audit: audit, logger: context.logger)
        } catch let error as StoreError where error.code == .conflict {
            throw ConsolePageError(status: .conflict, heading: "Not cancelled", message: "The broadcast had ended: \(error.message).")
        }
        context.logger.notice(
            "console cancelled a broadcast",
            metadata: [LogKey.broadcast: "\(id.uuidString.lowercased())", LogKey.role: "\(session.role.rawValue)"]
        )
        return ConsolePage.redirect(to: context.origin.link("/console/broadcasts/\(id.uuidString.lowercased())?done=cancelled"))
    }
}

/// Wake rates by wave of ended broadcasts, kept ten minutes per process (``SharedAnswers``): counting them reads the
/// broadcast's deliveries (a sample of at most 250,000 pushes), which a page view should not repeat every time.
enum WakeRateCache {
    struct Rates: Sendable {
        var waves: WakeRates.Breakdown
        var sample: WakeRates.Sample?
    }

    static func make() -> SharedAnswers<UUID, Rates> {
        SharedAnswers(timeToLive: 600, capacity: 100)
    }
}
