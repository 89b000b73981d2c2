import Foundation
import PaperboyDemo
import Testing

@Suite struct StrategyResultTests {
    static func recording() -> DemoRecording {
        let edition = "GET /v1/editions/{id}"
        var requests: [DemoRecording.Request] = []
        // Minute 0: 120 edition GETs, minute 1: 30, minute 2: none, minute 3: 60.
        requests += (0..<120).map { .init(at: Double($0) * 0.5, route: edition, status: 200) }
        requests += (0..<30).map { .init(at: 60 + Double($0), route: edition, status: 200) }
        requests += (0..<60).map { .init(at: 180 + Double($0), route: edition, status: 200) }
        // Not content load.
        requests += (0..<500).map { .init(at: Double($0) * 0.1, route: "POST /v1/devices/{token}/receipts", status: 204) }
        requests += [.init(at: 400, route: "PUT /v1/devices/{token}", status: 200), .init(at: 10, route: "GET /v1/broadcasts/{id}", status: 200)]
        return DemoRecording(
            strategy: .staggered,
            devices: 10,
            deadline: 300,
            window: 240,
            pushes: (0..<10).map { .init(device: $0, at: Double($0), pushType: "background") }
                + [.init(device: 0, at: 100, pushType: "background"), .init(device: 1, at: 120, pushType: "alert")],
            requests: requests,
            receipts: [
                .init(device: 0, at: 50, result: "newData"),
                .init(device: 0, at: 150, result: "noData"),  // the same device twice: held once
                .init(device: 1, at: 60, result: "noData"),
                .init(device: 2, at: 70, result: "failed"),  // failed does not count
                .init(device: 3, at: 300, result: "newData"),  // at the deadline: too late
                .init(device: 4, at: 299.9, result: "newData"),
            ],
            rejections: ["Unregistered": 2],
            wallSeconds: 3.5
        )
    }

    @Test func countsEditionRequestsPerMinute() {
        let result = StrategyResult(Self.recording(), reachable: 8)
        #expect(result.editionRequestsPerMinute == [120, 30, 0, 60])
        #expect(result.peakPerSecond == 2)
        // 210 edition GETs in [0, 240) over 240 s.
        #expect(abs(result.meanPerSecond - 210.0 / 240.0) < 1e-9)
        #expect(abs(result.peakToMean - 2.0 / (210.0 / 240.0)) < 1e-9)
    }

    @Test func meanUsesTheWindowOnly() {
        var recording = Self.recording()
        recording.window = 120
        let result = StrategyResult(recording, reachable: 8)
        #expect(abs(result.meanPerSecond - 150.0 / 120.0) < 1e-9)
        #expect(result.editionRequestsPerMinute == [120, 30, 0, 60])
    }

    @Test func heldCountsSuccessfulReceiptsBeforeTheDeadline() {
        let result = StrategyResult(Self.recording(), reachable: 8)
        #expect(result.held == 3)  // devices 0, 1 and 4
        #expect(result.heldShare == 3.0 / 8.0)
        #expect(result.receipts == ["newData": 3, "noData": 2, "failed": 1])
    }

    @Test func pushesRejectionsAndWallTime() {
        let result = StrategyResult(Self.recording(), reachable: 8)
        #expect(result.strategy == .staggered)
        #expect(result.devices == 10)
        #expect(result.reachable == 8)
        #expect(result.pushes == 12)
        #expect(result.pushesPerDevice == 1.2)
        #expect(result.rejections == ["Unregistered": 2])
        #expect(result.wallSeconds == 3.5)
    }

    @Test func emptyRecordingIsAllZeros() {
        let recording = DemoRecording(
            strategy: .blast,
            devices: 0,
            deadline: 60,
            window: 60,
            pushes: [],
            requests: [],
            receipts: [],
            rejections: [:],
            wallSeconds: 0
        )
        let result = StrategyResult(recording, reachable: 0)
        #expect(result.editionRequestsPerMinute.isEmpty)
        #expect(result.peakPerSecond == 0 && result.meanPerSecond == 0 && result.peakToMean == 0)
        #expect(result.pushesPerDevice == 0 && result.heldShare == 0)
        let data = try? JSONEncoder().encode(result)
        #expect(data != nil)
    }

    @Test func blastVersusStaggeredOnTheSyntheticFleet() {
        let model = FleetModel(seed: 42)
        let devices = 4000
        let reachable = (0..<devices).filter(model.isReachable).count
        let blast = StrategyResult(SyntheticRecording.make(.blast, model: model, devices: devices), reachable: reachable)
        let staggered = StrategyResult(SyntheticRecording.make(.staggered, model: model, devices: devices), reachable: reachable)
        let waves = StrategyResult(SyntheticRecording.make(.waves, model: model, devices: devices), reachable: reachable)
        #expect(blast.peakToMean >= 20)
        #expect(staggered.peakToMean <= 1.3)
        #expect(waves.heldShare > staggered.heldShare)
        #expect(waves.pushesPerDevice <= 2.0)
        // Common random numbers: the first push has the same outcome under blast and staggered.
        #expect(blast.receipts == staggered.receipts)
    }
}
