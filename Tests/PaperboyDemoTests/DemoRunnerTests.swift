import Foundation
import PaperboyCore
import PaperboyDemo
import PaperboyTesting
import Testing

/// The demo end to end on a small fleet with time compressed hard: real PostgreSQL, dispatcher, APNs
/// client, simulator and HTTP API. What it records must hang together.
@Suite("Demo runner")
struct DemoRunnerTests {
    @Test("blast and waves on 400 devices: every push recorded, receipts follow pushes, waves hold at least what the blast holds")
    func smallFleet() async throws {
        try await TestDatabase.with { db in
            var configuration = DemoConfiguration()
            configuration.devices = 400
            configuration.seed = 7
            configuration.strategies = [.blast, .waves]
            configuration.window = 10 * 60
            configuration.waveInterval = 20 * 60
            configuration.timeCompression = [.blast: 30, .waves: 400]
            let runner = DemoRunner(configuration: configuration, logger: db.logger)
            let recordings = try await runner.run(database: db.configuration) { _ in }
            #expect(recordings.map(\.strategy) == [.blast, .waves])
            let model = FleetModel(seed: 7, parameters: configuration.fleet)
            let reachable = (0..<400).filter { model.isReachable($0) }.count
            let blast = StrategyResult(recordings[0], reachable: reachable)
            let waves = StrategyResult(recordings[1], reachable: reachable)

            // The blast pushed every device once; waves at most three times.
            #expect(recordings[0].pushes.count == 400)
            #expect(Set(recordings[0].pushes.map(\.device)).count == 400)
            let perDevice = Dictionary(grouping: recordings[1].pushes, by: \.device).mapValues(\.count)
            #expect(perDevice.values.allSatisfy { $0 <= 3 })
            for recording in recordings {
                // Every receipt comes from a device that got a push before it.
                let firstPush = Dictionary(recording.pushes.map { ($0.device, $0.at) }, uniquingKeysWith: min)
                for receipt in recording.receipts {
                    let pushed = try #require(firstPush[receipt.device])
                    #expect(pushed <= receipt.at)
                }
                // A device downloads after fetching the edition (a failed download may be retried later).
                let gets = recording.requests.filter { $0.route == "GET /v1/editions/{id}" && $0.status == 200 }.count
                let downloads = recording.receipts.filter { $0.result != "noData" }.count
                #expect(gets >= downloads)
                #expect(recording.requests.allSatisfy { $0.status < 400 })
            }
            // The same devices react the same way to their first push: waves add to what the blast got.
            #expect(waves.held >= blast.held)
            #expect(blast.held > 0)
            #expect(waves.pushesPerDevice > 1 && waves.pushesPerDevice <= 3)
        }
    }
}
