import Foundation
import PaperboyCore
import Testing

@testable import PaperboyText

@Suite("Broadcast progress text")
struct BroadcastProgressTextTests {
    static let tokyo = TimeZone(identifier: "Asia/Tokyo")!
    /// 2026-11-23 05:00:00 in Tokyo.
    static let five = Date(timeIntervalSince1970: 1_795_377_600)

    static func minutes(_ count: Double) -> Date { five.addingTimeInterval(count * 60) }

    /// Two background waves of three cohorts; wave 2 is under way (280 of 1,000 done).
    static func sample(state: BroadcastProgress.State = .running) -> BroadcastProgress {
        typealias Counts = BroadcastProgress.Counts
        let first = BroadcastProgress.Wave(
            wave: 1,
            kind: .background,
            startsAt: minutes(1.5),
            rate: 1000.0 / 1800,
            window: 1800,
            finishedAt: minutes(31.5),
            cohorts: [
                .init(
                    cohort: 0,
                    startsAt: minutes(1.5),
                    endsAt: minutes(11.5),
                    counts: Counts(
                        planned: 1000,
                        sent: 1000,
                        accepted: 990,
                        rejected: ["Unregistered": 8, "BadDeviceToken": 2],
                        receipts: ["newData": 700, "noData": 50, "failed": 10]
                    )
                ),
                .init(
                    cohort: 1,
                    startsAt: minutes(11.5),
                    endsAt: minutes(21.5),
                    counts: Counts(
                        planned: 1000,
                        sent: 1000,
                        accepted: 995,
                        rejected: ["Unregistered": 5],
                        receipts: ["newData": 650, "noData": 40]
                    )
                ),
                .init(
                    cohort: 2,
                    startsAt: minutes(21.5),
                    endsAt: minutes(31.5),
                    counts: Counts(planned: 1000, sent: 1000, accepted: 1000, receipts: ["newData": 600])
                ),
            ]
        )
        let second = BroadcastProgress.Wave(
            wave: 2,
            kind: .background,
            startsAt: minutes(31.5),
            rate: 1000.0 / 1800,
            window: 1800,
            finishedAt: nil,
            cohorts: [
                // Listed out of order: the report sorts them.
                .init(cohort: 2, startsAt: minutes(51.5), endsAt: minutes(61.5), counts: Counts(planned: 400)),
                .init(
                    cohort: 0,
                    startsAt: minutes(31.5),
                    endsAt: minutes(41.5),
                    counts: Counts(
                        planned: 300,
                        sent: 100,
                        accepted: 99,
                        rejected: ["BadDeviceToken": 1],
                        skipped: ["received": 50, "hourlyBudget": 10],
                        receipts: ["newData": 30]
                    )
                ),
                .init(
                    cohort: 1,
                    startsAt: minutes(41.5),
                    endsAt: minutes(51.5),
                    counts: Counts(planned: 300, sent: 80, accepted: 80, skipped: ["received": 40], receipts: ["noData": 5])
                ),
            ]
        )
        return BroadcastProgress(
            id: UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!,
            editionID: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
            publication: "nikkei-morning",
            issueDate: "2026-11-23",
            environment: .production,
            state: state,
            origin: "cron",
            options: BroadcastOptions(maxPushesPerDevice: 3),
            createdAt: minutes(-1),
            deadline: minutes(240),
            finishedAt: nil,
            waves: [second, first],
            receipts: ["newData": 1980, "noData": 95, "failed": 12]
        )
    }

    static func empty() -> BroadcastProgress {
        var progress = sample()
        progress.waves = []
        progress.receipts = [:]
        return progress
    }

    /// The bar's cells, between `[` and `]`.
    static func bar(_ line: String) -> Substring? {
        guard let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]") else { return nil }
        return line[line.index(after: open)..<close]
    }

    @Test("a mixed fleet's status says what each provider was handed and answered; an APNs-only one does not")
    func byProvider() {
        var progress = Self.sample()
        #expect(!progress.report(timeZone: Self.tokyo, width: 100).contains("By provider"))
        progress.waves[0].counts.byProvider = [
            "apns": .init(sent: 700, accepted: 692, rejected: ["Unregistered": 8]),
            "fcm": .init(sent: 300, accepted: 298, rejected: ["UNREGISTERED": 2]),
        ]
        let wide = progress.report(timeZone: Self.tokyo, width: 200)
        #expect(
            wide.contains("By provider: APNs: 700 sent / 692 accepted (Unregistered 8), FCM: 300 sent / 298 accepted (UNREGISTERED 2)"),
            "\(wide)"
        )
        let narrow = progress.report(timeZone: Self.tokyo, width: 80)
        #expect(narrow.contains("By provider: APNs: 700 sent / 692 accepted (Unregistered 8),\n             FCM: 300 sent"), "\(narrow)")
    }

    @Test("status counts the dormant devices wave 1 pushed and says why they got no follow-ups; none, no line")
    func dormant() {
        var progress = Self.sample()
        #expect(!progress.report(timeZone: Self.tokyo, width: 100).contains("Dormant"))
        #expect(progress.report(timeZone: Self.tokyo, width: 200).contains("dormant after 3 unanswered editions"))
        progress.waves[1].counts.dormant = 1234
        let report = progress.report(timeZone: Self.tokyo, width: 200)
        #expect(
            report.contains(
                "Dormant: 1,234 devices got wave 1's push and no follow-ups, no receipt for their last 3 editions, a receipt or a new registration revives a device"
            ),
            "\(report)"
        )
        progress.options.dormantAfter = 0
        #expect(progress.report(timeZone: Self.tokyo, width: 200).contains("dormant devices: not spared"))
    }

    @Test("the progress line shows the current wave, its bar and percent, accepted, receipts and the deadline")
    func line() {
        let line = Self.sample().progressLine(width: 200, now: Self.minutes(45))
        #expect(line == "running  wave 2/3  [###########.............................]   28%  accepted 3,164  receipts 2,075  deadline in 3h 15m")
    }

    @Test("the bar is done of planned of the current wave, and the line fits the width", arguments: [200, 120, 100, 80, 72, 60, 50, 40, 28])
    func widths(width: Int) throws {
        let line = Self.sample().progressLine(width: width, now: Self.minutes(45))
        #expect(line.count <= width)
        let bar = try #require(Self.bar(line))
        #expect(bar.count >= BroadcastProgress.minimumBarCells)
        #expect(bar.count <= BroadcastProgress.maximumBarCells)
        #expect(bar.allSatisfy { $0 == "#" || $0 == "." })
        let filled = bar.filter { $0 == "#" }.count
        #expect(filled == 280 * bar.count / 1000, "28% of \(bar.count) cells")
        #expect(bar.drop(while: { $0 == "#" }).allSatisfy { $0 == "." }, "filled cells come first")
        #expect(line.contains("wave 2/3"))
        #expect(line.contains(" 28%"))
        #expect(line.count == width || bar.count == BroadcastProgress.maximumBarCells, "the bar takes the room left")
    }

    @Test("narrower lines are written tighter, then give up receipts and accepted before the bar shrinks below 10 cells")
    func shrinking() throws {
        let progress = Self.sample()
        let roomy = progress.progressLine(width: 100, now: Self.minutes(45))
        #expect(roomy.hasPrefix("running  wave 2/3  ["))
        #expect(roomy.hasSuffix("]   28%  accepted 3,164  receipts 2,075  deadline in 3h 15m"))
        #expect(roomy.count == 100)
        let standard = progress.progressLine(width: 80, now: Self.minutes(45))
        #expect(standard.hasPrefix("running wave 2/3 ["))
        #expect(standard.hasSuffix("]  28% acc 3,164 rcpt 2,075 3h 15m left"))
        #expect(standard.count == 80)
        let narrow = progress.progressLine(width: 60, now: Self.minutes(45))
        #expect(narrow.hasPrefix("running wave 2/3 ["))
        #expect(narrow.hasSuffix("]  28% acc 3,164 3h 15m left"))
        #expect(try #require(Self.bar(narrow)).count >= 10)
        let narrower = progress.progressLine(width: 40, now: Self.minutes(45))
        #expect(narrower.hasPrefix("wave 2/3 ["))
        #expect(narrower.hasSuffix("]  28% 3h 15m left"))
        let tiny = progress.progressLine(width: 10, now: Self.minutes(45))
        #expect(tiny.count <= 10)
        #expect(progress.progressLine(width: 0, now: Self.minutes(45)).isEmpty)
    }

    @Test("a full wave fills the bar and shows 100%; a state other than running is shown")
    func complete() throws {
        var progress = Self.sample(state: .completed)
        progress.waves.removeAll { $0.wave == 2 }
        let line = progress.progressLine(width: 100, now: Self.minutes(45))
        #expect(line.hasPrefix("completed  wave 1/3  ["))
        #expect(try #require(Self.bar(line)).allSatisfy { $0 == "#" })
        #expect(line.contains("]  100%  accepted 2,985"))
    }

    @Test("the deadline is counted down, then passed")
    func deadline() {
        let progress = Self.sample()
        #expect(progress.progressLine(width: 200, now: Self.minutes(45)).hasSuffix("deadline in 3h 15m"))
        #expect(progress.progressLine(width: 200, now: Self.minutes(225.5)).hasSuffix("deadline in 14m"))
        #expect(progress.progressLine(width: 200, now: Self.minutes(239.5)).hasSuffix("deadline in 30s"))
        #expect(progress.progressLine(width: 200, now: Self.minutes(240)).hasSuffix("past deadline"))
        #expect(progress.progressLine(width: 200, now: Self.minutes(600)).hasSuffix("past deadline"))
        #expect(BroadcastProgress.remaining(2 * 3600 + 14 * 60 + 59) == "2h 14m")
        #expect(BroadcastProgress.remaining(3600) == "1h 0m")
    }

    @Test("percent rounds down and never divides by zero")
    func percent() {
        #expect(BroadcastProgress.percent(done: 280, of: 1000) == "28%")
        #expect(BroadcastProgress.percent(done: 999, of: 1000) == "99%")
        #expect(BroadcastProgress.percent(done: 1000, of: 1000) == "100%")
        #expect(BroadcastProgress.percent(done: 0, of: 0) == "-")
        #expect(BroadcastProgress.bar(done: 0, of: 0, cells: 10) == "..........")
        #expect(BroadcastProgress.bar(done: 5, of: 10, cells: 10) == "#####.....")
    }

    @Test("a failed broadcast's report says why, and when it ended")
    func failure() throws {
        var progress = Self.sample(state: .failed)
        progress.failure = "the APNs key /keys/AuthKey.p8 cannot be read"
        progress.finishedAt = Self.minutes(2)
        let lines = progress.report(timeZone: Self.tokyo).split(separator: "\n").map(String.init)
        #expect(lines.contains("state       failed"))
        #expect(lines.contains("finished    2026-11-23 05:02:00 Asia/Tokyo"))
        #expect(lines.contains("failure     the APNs key /keys/AuthKey.p8 cannot be read"))
        #expect(!Self.sample().report(timeZone: Self.tokyo).contains("failure"))
    }

    @Test("a provider paused for an outage is said in the report: which, since when, by how many of the workers, and what happens next")
    func paused() {
        var progress = Self.sample()
        progress.paused = [BroadcastProgress.Pause(provider: .fcm, since: Self.minutes(3), workers: 2, ofWorkers: 3)]
        let report = progress.report(timeZone: Self.tokyo)
        #expect(
            report.contains(
                "paused      FCM since 2026-11-23 05:03:00 Asia/Tokyo by 2 of 3 workers: the provider answers that it is unavailable, or "
                    + "cannot be reached; its devices wait, none is recorded, a probe goes out with backoff, and sending resumes at the plan's "
                    + "rate when it answers"
            ),
            "\(report)"
        )
        #expect(!Self.sample().report(timeZone: Self.tokyo).contains("paused"))
    }

    @Test("the report has the header, the waves with totals, reasons by count, and the edition's receipts, in order")
    func report() throws {
        let report = Self.sample().report(timeZone: Self.tokyo)
        let lines = report.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.allSatisfy { $0.count <= 100 })
        #expect(lines.contains("broadcast   6f9619ff-8b86-d011-b42d-00c04fc964ff"))
        #expect(lines.contains("edition     nikkei-morning 2026-11-23 (e621e1f8-c36c-495a-93fc-0c247a3e6e5f)"))
        #expect(lines.contains("environment production"))
        #expect(lines.contains("state       running"))
        #expect(lines.contains("origin      cron"))
        #expect(lines.contains("created     2026-11-23 04:59:00 Asia/Tokyo"))
        #expect(lines.contains("deadline    2026-11-23 09:00:00 Asia/Tokyo"))
        #expect(
            lines.contains("options     window 30m, 16 cohorts, waves every 30m, max 3 pushes per device, alert last resort no,")
        )
        #expect(lines.contains("            dormant after 3 unanswered editions"))

        func tokens(startingWith first: String) throws -> [String] {
            let line = try #require(lines.first { $0.split(separator: " ").first.map(String.init) == first })
            return line.split(separator: " ").map(String.init)
        }
        #expect(
            try tokens(startingWith: "WAVE") == ["WAVE", "KIND", "STARTS", "PLANNED", "SENT", "ACCEPTED", "REJECTED", "SKIPPED", "RECEIPTS", "DONE"]
        )
        #expect(try tokens(startingWith: "1") == ["1", "background", "05:01:30", "3,000", "3,000", "2,985", "15", "0", "2,040", "100%"])
        #expect(try tokens(startingWith: "2") == ["2", "background", "05:31:30", "1,000", "180", "179", "1", "100", "35", "28%"])
        #expect(try tokens(startingWith: "total") == ["total", "4,000", "3,180", "3,164", "16", "100", "2,075", "82%"])

        let rejected = try #require(lines.firstIndex(of: "Rejected by reason: Unregistered 13, BadDeviceToken 3"))
        let skipped = try #require(lines.firstIndex(of: "Skipped by why: received 90, hourlyBudget 10"))
        let receipts = try #require(lines.firstIndex(of: "Receipts by result (edition): newData 1,980, noData 95, failed 12"))
        let table = try #require(lines.firstIndex { $0.hasPrefix("WAVE") })
        let options = try #require(lines.firstIndex { $0.hasPrefix("options") })
        #expect(options < table && table < rejected && rejected < skipped && skipped < receipts)
        #expect(!report.contains("COHORT"))
        #expect(!report.contains("05:01:30.0"))
    }

    @Test("the report is the same on every call, whatever the order of the waves and the dictionaries")
    func deterministic() {
        let progress = Self.sample()
        var reversed = progress
        reversed.waves.reverse()
        let report = progress.report(timeZone: Self.tokyo, showCohorts: true)
        #expect(report == reversed.report(timeZone: Self.tokyo, showCohorts: true))
        #expect(report == Self.sample().report(timeZone: Self.tokyo, showCohorts: true))
        #expect(!report.contains(where: { $0 == "\t" }))
        #expect(report.split(separator: "\n").allSatisfy { $0.last != " " })
    }

    @Test("with showCohorts each wave is followed by its cohorts, sorted")
    func cohorts() throws {
        let report = Self.sample().report(timeZone: Self.tokyo, showCohorts: true)
        let lines = report.split(separator: "\n").map(String.init)
        let first = try #require(lines.firstIndex(of: "wave 1 (background) cohorts:"))
        let second = try #require(lines.firstIndex(of: "wave 2 (background) cohorts:"))
        #expect(first < second)
        #expect(
            lines[first + 1].split(separator: " ") == ["COHORT", "SLOT", "PLANNED", "SENT", "ACCEPTED", "REJECTED", "SKIPPED", "RECEIPTS"]
        )
        #expect(lines[first + 2].split(separator: " ") == ["0", "05:01:30.0–05:11:30.0", "1,000", "1,000", "990", "10", "0", "750"])
        #expect(lines[second + 2].split(separator: " ") == ["0", "05:31:30.0–05:41:30.0", "300", "100", "99", "1", "60", "30"])
        #expect(lines[second + 3].split(separator: " ") == ["1", "05:41:30.0–05:51:30.0", "300", "80", "80", "0", "40", "5"])
        #expect(lines[second + 4].split(separator: " ") == ["2", "05:51:30.0–06:01:30.0", "400", "0", "0", "0", "0", "0"])
        #expect(report.hasPrefix(Self.sample().report(timeZone: Self.tokyo)))
    }

    @Test("times follow the time zone")
    func timeZones() {
        let report = Self.sample().report(timeZone: .gmt, showCohorts: true)
        #expect(report.contains("deadline    2026-11-23 00:00:00 GMT"))
        #expect(report.contains("created     2026-11-22 19:59:00 GMT"))
        #expect(report.contains("20:01:30.0–20:11:30.0"))
    }

    @Test("options with a capacity, one cohort and the alert last resort; long lines wrap at the width")
    func options() {
        var progress = Self.sample()
        progress.options = BroadcastOptions(pace: .capacity(perSecond: 2000), cohorts: 1, maxPushesPerDevice: 2, alertLastResort: true)
        let report = progress.report(timeZone: Self.tokyo, width: 60)
        #expect(
            report.contains("options     capacity 2,000/s, 1 cohort, waves every 30m,\n            max 2 pushes per device, alert last resort yes")
        )
        #expect(progress.progressLine(width: 200, now: Self.minutes(45)).contains("wave 2/3"), "two background waves and the alert")
    }

    @Test("with maxPushesPerDevice auto, the waves are the slots before the deadline, and the options say auto")
    func autoWaves() {
        var progress = Self.sample()
        progress.options = BroadcastOptions(maxPushesPerDevice: .auto)
        #expect(progress.progressLine(width: 200, now: Self.minutes(45)).contains("wave 2/8"))
        #expect(progress.report(timeZone: Self.tokyo, width: 200).contains("pushes per device: auto (until the deadline)"))
        // Wave 1 starts at 1.5 min: slots at 1.5, 31.5, … 211.5 min. Before wave 1, counted from the
        // creation at -1 min: a ninth slot at 239 min.
        var empty = Self.empty()
        empty.options = progress.options
        #expect(empty.progressLine(width: 200, now: Self.minutes(0)).contains("wave 0/9"))
        #expect(BroadcastProgress.waveSlots(from: Self.minutes(0), to: Self.minutes(240), interval: 1800) == 8)
        #expect(BroadcastProgress.waveSlots(from: Self.minutes(0), to: Self.minutes(241), interval: 1800) == 9)
        #expect(BroadcastProgress.waveSlots(from: Self.minutes(0), to: Self.minutes(120), interval: 1200) == 6)
    }

    @Test("an expired broadcast says how many planned devices the deadline left unsent, and that it is not a failure")
    func expiredIsNotAFailure() {
        var progress = Self.sample()
        progress.state = .expired
        let planned = progress.waves.reduce(0) { $0 + $1.counts.planned }
        let done = progress.waves.reduce(0) { $0 + $1.counts.done }
        let report = progress.report(timeZone: Self.tokyo, width: 200)
        #expect(report.contains("expired     the deadline came with \(TerminalText.grouped(planned - done)) planned devices not sent"))
        #expect(report.contains("not a failure"))
        #expect(!Self.sample().report(timeZone: Self.tokyo, width: 200).contains("not a failure"), "only when expired")
    }

    @Test("a broadcast without waves, or with nothing planned, neither crashes nor divides by zero")
    func empty() throws {
        let progress = Self.empty()
        let line = progress.progressLine(width: 200, now: Self.minutes(0))
        #expect(line.hasPrefix("running  wave 0/3  ["))
        #expect(try #require(Self.bar(line)).allSatisfy { $0 == "." })
        #expect(line.hasSuffix("]     -  accepted 0  receipts 0  deadline in 4h 0m"))
        for width in [10, 30, 80, 200] { #expect(progress.progressLine(width: width, now: Self.minutes(0)).count <= width) }

        let report = progress.report(timeZone: Self.tokyo, showCohorts: true)
        #expect(report.contains("no waves yet"))
        #expect(!report.contains("WAVE"))
        #expect(!report.contains("Rejected by reason"))
        #expect(!report.contains("Skipped by why"))
        #expect(report.hasSuffix("Receipts by result (edition): none yet"))

        var nothingPlanned = progress
        nothingPlanned.waves = [
            .init(
                wave: 1,
                kind: .alert,
                startsAt: Self.minutes(1),
                rate: 0,
                window: 0,
                finishedAt: nil,
                cohorts: [.init(cohort: 0, startsAt: Self.minutes(1), endsAt: Self.minutes(1), counts: .init())]
            ),
            .init(wave: 2, kind: .background, startsAt: Self.minutes(31), rate: 0, window: 0, finishedAt: nil, cohorts: []),
        ]
        let planless = nothingPlanned.report(timeZone: Self.tokyo, showCohorts: true)
        let lines = planless.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.contains(["1", "alert", "05:01:00", "0", "0", "0", "0", "0", "0", "-"]))
        #expect(lines.contains(["total", "0", "0", "0", "0", "0", "0", "-"]))
        #expect(planless.contains("wave 2 (background) cohorts:\nno cohorts"))
        #expect(nothingPlanned.progressLine(now: Self.minutes(0)).contains("wave 2/3  [..."))
    }
}
