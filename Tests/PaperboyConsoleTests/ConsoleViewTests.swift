import Foundation
import Mustache
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

@testable import PaperboyConsole

@Suite("Console views: the plan over time, charts, the embedded templates")
struct ConsoleViewTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// One wave of two cohorts, 100 devices each over 100 s (1 device a second each, 2 in all), `done` of them done.
    static func progress(done: Int, state: BroadcastProgress.State = .running, behind: Double? = nil) -> BroadcastProgress {
        let cohorts = (0..<2).map { index in
            BroadcastProgress.Cohort(
                cohort: index,
                startsAt: start.addingTimeInterval(Double(index) * 100),
                endsAt: start.addingTimeInterval(Double(index + 1) * 100),
                counts: .init(planned: 100, sent: index == 0 ? min(done, 100) : max(0, done - 100), accepted: 0)
            )
        }
        return BroadcastProgress(
            id: UUID(),
            editionID: UUID(),
            publication: "morning",
            issueDate: "2027-01-15",
            environment: .production,
            state: state,
            origin: "console",
            options: BroadcastOptions(pace: .window(200), maxPushesPerDevice: .fixed(1)),
            createdAt: start,
            deadline: start.addingTimeInterval(7200),
            finishedAt: state == .running ? nil : start.addingTimeInterval(300),
            waves: [
                .init(wave: 1, kind: .background, startsAt: start, rate: 1, window: 200, finishedAt: nil, behindSeconds: behind, cohorts: cohorts)
            ],
            receipts: ["newData": 30, "failed": 2]
        )
    }

    @Test("a provider paused for an outage is an alert on the broadcast's page: which, since when, by how many workers; none, no alert")
    func paused() throws {
        var progress = Self.progress(done: 90)
        progress.paused = [BroadcastProgress.Pause(provider: .apns, since: Self.start.addingTimeInterval(65), workers: 1, ofWorkers: 1)]
        let utc = TimeZone(identifier: "UTC")!
        let model = LiveModel(progress: progress, samples: [], asOf: Self.start, now: Self.start, timeZone: utc)
        #expect(
            model.paused == [
                "APNs sends are paused since \(TimeText.clock(Self.start.addingTimeInterval(65), timeZone: utc)) by 1 of 1 worker: the provider "
                    + "answers that it is unavailable, or cannot be reached. Its devices wait, none is recorded; a probe goes out with backoff "
                    + "and sending resumes at "
                    + "the plan's rate when it answers."
            ]
        )
        #expect(LiveModel(progress: Self.progress(done: 90), samples: [], asOf: Self.start, now: Self.start, timeZone: utc).paused.isEmpty)
    }

    @Test("the plan's due devices, its rate as steps, and how far behind the broadcast is")
    func timeline() {
        let timeline = BroadcastTimeline(progress: Self.progress(done: 90))
        #expect(timeline.plannedDone(at: Self.start.addingTimeInterval(50)) == 50)
        #expect(timeline.plannedDone(at: Self.start.addingTimeInterval(150)) == 150)
        #expect(timeline.plannedDone(at: Self.start.addingTimeInterval(500)) == 200)
        #expect(timeline.plannedRate().map(\.value) == [1, 1, 0])
        // 120 due at 120 s, 90 done, at the wave's 1/s: 30 s behind.
        let off = timeline.offPlan(now: Self.start.addingTimeInterval(120))
        #expect(off == -30)
        #expect(BroadcastTimeline.describe(offPlan: off) == "30s behind plan")
        #expect(BroadcastTimeline.describe(offPlan: 0.5) == "on plan")
        // The dispatcher knows of a longer catch-up: it wins.
        #expect(BroadcastTimeline(progress: Self.progress(done: 90, behind: 45)).offPlan(now: Self.start.addingTimeInterval(120)) == -45)
        // Done by its plan's end, later by what it is behind.
        #expect(timeline.currentWaveEnd(now: Self.start.addingTimeInterval(120)) == Self.start.addingTimeInterval(230))
        #expect(BroadcastTimeline(progress: Self.progress(done: 200, state: .completed)).offPlan(now: Self.start) == nil)
    }

    @Test("a chart draws the plan as steps and the samples' rate as a line, with escaped labels")
    func chart() {
        let progress = Self.progress(done: 10)
        let samples = [0, 10, 20].map { seconds in
            ConsoleSample(
                at: Self.start.addingTimeInterval(Double(seconds)),
                wave: 1,
                planned: 200,
                sent: seconds * 2,
                accepted: seconds,
                rejected: 0,
                skipped: 0,
                newData: 0,
                noData: 0,
                failed: 0
            )
        }
        #expect(LiveModel.rates(samples).map(\.value) == [2, 2])
        let model = LiveModel(
            progress: progress,
            samples: samples,
            asOf: Self.start.addingTimeInterval(20),
            now: Self.start.addingTimeInterval(20),
            timeZone: TimeZone(identifier: "UTC")!
        )
        #expect(model.rateChart.hasPrefix("<svg class=\"chart\""))
        #expect(model.rateChart.components(separatedBy: "<polyline").count == 3)
        #expect(model.rateChart.contains("class=\"line s-plan\""))
        #expect(model.sent == "10")
        #expect(model.received == "30")
        #expect(model.heldShare == "15.0%")
        #expect(model.offPlan == "10s behind plan")
        let labelled = TimeChart(
            series: [],
            from: Self.start,
            to: Self.start.addingTimeInterval(60),
            unit: "<b>",
            timeZone: TimeZone(identifier: "UTC")!
        ).svg(title: "a \"b\"")
        #expect(labelled.contains("aria-label=\"a &quot;b&quot;\""))
        #expect(labelled.contains("&lt;b&gt;"))
        #expect(!labelled.contains("<b>"))
    }

    @Test("the binary's templates and static files are console/'s (scripts/embed-console.sh), and every template parses")
    func embedded() throws {
        let root = PaperboyBinary.repositoryRoot.appendingPathComponent("console")
        let files = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("templates").path).filter {
            $0.hasSuffix(".mustache")
        }
        #expect(Set(files.map { String($0.dropLast(".mustache".count)) }) == Set(ConsoleAssets.bundledTemplates.keys))
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent("templates/\(file)"), encoding: .utf8)
            #expect(ConsoleAssets.bundledTemplates[String(file.dropLast(".mustache".count))] == text, "\(file): run scripts/embed-console.sh")
        }
        #expect(try String(contentsOf: root.appendingPathComponent("static/console.css"), encoding: .utf8) == ConsoleAssets.bundledStylesheet)
        #expect(try String(contentsOf: root.appendingPathComponent("static/console.js"), encoding: .utf8) == ConsoleAssets.bundledScript)
        for name in ConsoleAssets.bundledTemplates.keys {
            #expect(ConsoleAssets.library.getTemplate(named: name) != nil, "\(name) does not parse")
        }
        #expect(ConsoleAssets.staticFile(named: String(ConsoleAssets.script.path.split(separator: "/").last!))?.body == ConsoleAssets.bundledScript)
        // No inline script or style anywhere: the Content-Security-Policy would block it.
        for (name, text) in ConsoleAssets.bundledTemplates {
            #expect(!text.contains("<script>") && !text.contains("style=") && !text.contains("<style"), "\(name)")
            #expect(text.range(of: #" on[a-z]+="#, options: .regularExpression) == nil, "\(name): an inline event handler")
        }
    }
}
