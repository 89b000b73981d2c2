import Foundation
import PaperboyCore
import PaperboyDemo
import PaperboyTesting
import Testing

/// The three orders end to end (in the demo runner's suite, which CI runs one test at a time: it runs in real time).
extension DemoRunnerTests {
    @Test("hash, habit and oracle order on 400 devices: early readers are pushed earlier by habit, and Paperboy counts the opens the devices made")
    func orders() async throws {
        try await TestDatabase.with { db in
            var configuration = DemoConfiguration()
            configuration.devices = 400
            configuration.androidShare = 0
            configuration.seed = 11
            configuration.strategies = [.hash, .waves, .oracle]
            configuration.timeCompression = [.hash: 150, .waves: 150, .oracle: 150]
            let runner = DemoRunner(configuration: configuration, logger: db.logger)
            let recordings = try await runner.run(database: db.configuration) { _ in }
            #expect(recordings.map(\.strategy) == [.hash, .waves, .oracle])
            let model = FleetModel(seed: 11, parameters: configuration.fleet)
            let early = Set((0..<400).filter { model.reader($0).group == .earlyRiser })

            func medianFirstPush(_ recording: DemoRecording, _ devices: Set<Int>) throws -> Double {
                let first = Dictionary(recording.pushes.filter { devices.contains($0.device) }.map { ($0.device, $0.at) }, uniquingKeysWith: min)
                let sorted = first.values.sorted()
                try #require(sorted.count == devices.count, "\(recording.strategy): every early riser pushed")
                return sorted[sorted.count / 2]
            }
            let hash = try medianFirstPush(recordings[0], early)
            let habit = try medianFirstPush(recordings[1], early)
            #expect(habit < hash / 2, "early risers' median first push: habit order \(habit) s, hash order \(hash) s")
            #expect(try medianFirstPush(recordings[2], early) < hash / 2)

            for recording in recordings {
                let measured = try #require(recording.readyAtOpen)
                #expect(measured.opens == recording.opens.count, "\(recording.strategy): every open in the window counted once")
                let held = recording.opens.filter(\.held).count
                #expect(abs(measured.ready - held) <= max(3, held / 50), "\(recording.strategy): Paperboy \(measured.ready), the devices \(held)")
                #expect(measured.opens >= 150)
            }
            let failed = recordings.flatMap(\.requests).filter { $0.status >= 400 }
            #expect(failed.isEmpty, "\(Set(failed.map { "\($0.route) \($0.status)" }))")
        }
    }
}
