import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyText

/// The parts of a broadcast's page that change while it runs (numbers, charts, waves, cohorts), built from its
/// progress and the sampler's samples. Pure: the page and the live stream render the same model with the same
/// templates, and the tests build it without a database.
struct LiveModel: Sendable {
    struct WaveRow: Sendable {
        var wave: Int
        var kind: String
        var starts: String
        var planned: String
        var sent: String
        var accepted: String
        var skipped: String
        var received: String
        var percent: String
        var reasons: String
    }

    struct ProviderRow: Sendable {
        var name: String
        var sent: String
        var accepted: String
        var rejected: String
    }

    struct CohortRow: Sendable {
        var cohort: Int
        var slot: String
        var planned: String
        var sent: String
        var accepted: String
        var skipped: String
        var received: String
        var percent: String
    }

    struct CohortWave: Sendable {
        var wave: Int
        var cohortCount: Int
        var open: Bool
        var cohorts: [CohortRow]
    }

    struct Has: Sendable {
        var waves: Bool
        var providers: Bool
    }

    var state: String
    var waveText: String
    var offPlan: String
    var offPlanClass: String
    var failure: String?
    /// A provider of the app held for a suspected misconfiguration: the banner that says why and what to do.
    var held: [String]
    /// The app's providers that workers have paused for an outage (``BroadcastProgress/paused``).
    var paused: [String]
    var expiredNote: String?
    var percentValue: Int
    var sent: String
    var planned: String
    var accepted: String
    var rejected: String
    var skipped: String
    var received: String
    var heldShare: String
    var endLabel: String
    var end: String
    var endNote: String
    var asOf: String
    var asOfISO: String
    var liveNote: String?
    var rateChart: String
    var heldChart: String
    var providerChart: String?
    var waves: [WaveRow]
    var providers: [ProviderRow]
    var cohortWaves: [CohortWave]
    var has: Has

    /// - Parameters:
    ///   - progress: the broadcast's progress (the sampler's latest snapshot, or read just now).
    ///   - samples: its samples, oldest first.
    ///   - asOf: when `progress` was read.
    init(progress: BroadcastProgress, samples: [ConsoleSample], asOf: Date, now: Date, timeZone: TimeZone) {
        let timeline = BroadcastTimeline(progress: progress)
        let totals = progress.totals
        let current = progress.currentWave
        state = progress.state.rawValue
        waveText = current.map { "wave \($0.wave) of up to \(progress.expectedWaves)" } ?? "no wave yet"
        let off = timeline.offPlan(now: now)
        offPlan = BroadcastTimeline.describe(offPlan: off)
        offPlanClass = (off ?? 0) <= -2 ? "behind" : "good"
        failure = progress.failure
        held = (progress.held ?? []).map {
            "\($0.provider.displayName) sends are held for a suspected misconfiguration: \($0.reason). No device is deactivated "
                + "(\(Numbers.grouped($0.heldDeactivations)) deactivations held). Fix the configuration (paperboy apps set-bundle-id, set-apns, "
                + "set-fcm or release), or confirm the deactivations (paperboy apps confirm-deactivations)."
        }
        paused = (progress.paused ?? []).map {
            "\($0.provider.displayName) sends are paused since \(TimeText.clock($0.since, timeZone: timeZone)) by \($0.workers) of \($0.ofWorkers) "
                + "worker\($0.ofWorkers == 1 ? "" : "s"): the provider answers that it is unavailable, or cannot be reached. Its devices wait, none "
                + "is recorded; "
                + "a probe goes out with backoff and sending resumes at the plan's rate when it answers."
        }
        if progress.state == .expired {
            let notSent = progress.waves.reduce(0) { $0 + max(0, $1.counts.planned - $1.counts.done) }
            expiredNote =
                "The deadline ended it with \(Numbers.grouped(notSent)) planned device\(notSent == 1 ? "" : "s") not sent (the last wave sent what it could, earliest-due first): not a failure."
        }
        let currentCounts = current?.counts ?? BroadcastProgress.Counts()
        percentValue = currentCounts.planned > 0 ? min(100, Int(Double(currentCounts.done) / Double(currentCounts.planned) * 100)) : 0
        sent = Numbers.grouped(totals.sent)
        planned = Numbers.grouped(totals.planned)
        accepted = Numbers.grouped(totals.accepted)
        rejected = Numbers.grouped(totals.rejected.values.reduce(0, +))
        skipped = Numbers.grouped(totals.skipped.values.reduce(0, +))
        let receivedCount = BroadcastProgress.received(progress.receipts)
        received = Numbers.grouped(receivedCount)
        let targets = progress.waves.first { $0.wave == 1 }?.counts.planned ?? 0
        heldShare = targets > 0 ? Numbers.share(Double(receivedCount) / Double(targets)) : "-"
        if progress.state == .running, let latest = timeline.latestEnd(now: now) {
            endLabel = "Ends by"
            end = TimeText.clock(latest, timeZone: timeZone)
            let waveEnd = timeline.currentWaveEnd(now: now).map { "wave \(current?.wave ?? 1) done \(TimeText.relative($0, now: now)); " } ?? ""
            endNote = waveEnd + "sooner when every device has the edition"
        } else {
            endLabel = "Ended"
            end = progress.finishedAt.map { TimeText.clock($0, timeZone: timeZone) } ?? "-"
            endNote = progress.finishedAt.map { TimeText.relative($0, now: now) } ?? ""
        }
        self.asOf = TimeText.dateTime(asOf, timeZone: timeZone) + " " + timeZone.identifier
        asOfISO = TimeText.iso(asOf)
        liveNote = progress.state == .running ? "updates every few seconds" : nil

        // Charts: from the first wave's start (or the first sample) to now or the end.
        let firstStart = progress.waves.map(\.startsAt).min() ?? progress.createdAt
        let from = min(firstStart, samples.first?.at ?? firstStart).addingTimeInterval(-10)
        let planEnd = progress.waves.flatMap { $0.cohorts.map(\.endsAt) }.max() ?? now
        let to: Date =
            if progress.state == .running { max(now, min(planEnd, now.addingTimeInterval(600))).addingTimeInterval(10) } else {
                max(progress.finishedAt ?? now, samples.last?.at ?? from).addingTimeInterval(10)
            }
        var plan = timeline.plannedRate()
        if let last = plan.last, last.at < to { plan.append((to, last.value)) }
        rateChart = TimeChart(
            series: [
                .init(name: "plan", cssClass: "s-plan", points: plan, steps: true),
                .init(name: "sent", cssClass: "s-sent", points: Self.rates(samples)),
            ],
            from: from,
            to: to,
            unit: "sends/s",
            marker: progress.state == .running ? now : nil,
            timeZone: timeZone
        ).svg(title: "Sends per second against the plan")
        heldChart = TimeChart(
            series: [
                .init(
                    name: "have the edition",
                    cssClass: "s-held",
                    points: samples.map { ($0.at, targets > 0 ? Double($0.received) / Double(targets) : 0) }
                )
            ],
            from: from,
            to: to,
            unit: "\(Numbers.grouped(receivedCount)) devices",
            percent: true,
            marker: progress.state == .running ? now : nil,
            timeZone: timeZone
        ).svg(title: "Share of wave 1's targets that have the edition")
        let providerNames = Set(samples.flatMap { $0.providers.keys }).sorted()
        providerChart =
            providerNames.count > 1
            ? TimeChart(
                series: providerNames.map { name in
                    .init(
                        name: name == "apns" ? "APNs accepted" : "\(name.uppercased()) accepted",
                        cssClass: "s-\(name)",
                        points: samples.map { ($0.at, Double($0.providers[name]?.accepted ?? 0)) }
                    )
                },
                from: from,
                to: to,
                unit: "pushes",
                marker: progress.state == .running ? now : nil,
                timeZone: timeZone
            ).svg(title: "Accepted pushes by provider") : nil

        let sortedWaves = progress.waves.sorted { $0.wave < $1.wave }
        waves = sortedWaves.map { wave in
            let counts = wave.counts
            var reasons: [String] = []
            let rejectedText = Numbers.tally(counts.rejected)
            let skippedText = Numbers.tally(counts.skipped)
            if !rejectedText.isEmpty { reasons.append("rejected: " + rejectedText) }
            if !skippedText.isEmpty { reasons.append("skipped: " + skippedText) }
            if counts.dormant > 0 { reasons.append("dormant: \(Numbers.grouped(counts.dormant))") }
            if let behind = wave.behindSeconds, behind >= 1, wave.finishedAt == nil {
                reasons.append("\(TimeText.duration(behind)) behind, catching up at the plan's rate")
            }
            return WaveRow(
                wave: wave.wave,
                kind: wave.kind.rawValue,
                starts: TimeText.clock(wave.startsAt, timeZone: timeZone),
                planned: Numbers.grouped(counts.planned),
                sent: Numbers.grouped(counts.sent),
                accepted: Numbers.grouped(counts.accepted),
                skipped: Numbers.grouped(counts.skipped.values.reduce(0, +)),
                received: Numbers.grouped(BroadcastProgress.received(counts.receipts)),
                percent: Numbers.percent(done: counts.done, of: counts.planned),
                reasons: reasons.joined(separator: "; ")
            )
        }
        providers = totals.byProvider.keys.sorted().map { name in
            let counts = totals.byProvider[name] ?? .init()
            return ProviderRow(
                name: name == "apns" ? "APNs" : name.uppercased(),
                sent: Numbers.grouped(counts.sent),
                accepted: Numbers.grouped(counts.accepted),
                rejected: Numbers.tally(counts.rejected)
            )
        }
        cohortWaves = sortedWaves.map { wave in
            CohortWave(
                wave: wave.wave,
                cohortCount: wave.cohorts.count,
                open: wave.wave == current?.wave && wave.cohorts.count <= 32,
                cohorts: wave.cohorts.sorted { $0.cohort < $1.cohort }.map { cohort in
                    CohortRow(
                        cohort: cohort.cohort,
                        slot: TimeText.clock(cohort.startsAt, timeZone: timeZone) + "–" + TimeText.clock(cohort.endsAt, timeZone: timeZone),
                        planned: Numbers.grouped(cohort.counts.planned),
                        sent: Numbers.grouped(cohort.counts.sent),
                        accepted: Numbers.grouped(cohort.counts.accepted),
                        skipped: Numbers.grouped(cohort.counts.skipped.values.reduce(0, +)),
                        received: Numbers.grouped(BroadcastProgress.received(cohort.counts.receipts)),
                        percent: Numbers.percent(done: cohort.counts.done, of: cohort.counts.planned)
                    )
                }
            )
        }
        has = Has(waves: !waves.isEmpty, providers: !providers.isEmpty)
    }

    /// Sends per second between consecutive samples, at the later one's time.
    static func rates(_ samples: [ConsoleSample]) -> [(at: Date, value: Double)] {
        guard samples.count > 1 else { return [] }
        var points: [(at: Date, value: Double)] = []
        for (previous, sample) in zip(samples, samples.dropFirst()) {
            let seconds = sample.at.timeIntervalSince(previous.at)
            guard seconds > 0 else { continue }
            points.append((sample.at, max(0, Double(sample.sent - previous.sent) / seconds)))
        }
        return points
    }
}
