import Foundation
import PaperboyDemo

/// A small stand-in for the demo's runner: plays a strategy against the fleet model without any server, so
/// the report can be exercised on realistic shapes.
enum SyntheticRecording {
    static let window: TimeInterval = 1800
    static let waveInterval: TimeInterval = 1800
    static let deadline: TimeInterval = 7200
    static let maxPushes = 3

    static func make(_ strategy: DemoStrategy, model: FleetModel, devices: Int) -> DemoRecording {
        var pushes: [DemoRecording.Push] = []
        var requests: [DemoRecording.Request] = []
        var receipts: [DemoRecording.Receipt] = []
        var sent = Array(repeating: 0, count: devices)
        var doneAt: [TimeInterval?] = Array(repeating: nil, count: devices)

        func send(_ device: Int, at: TimeInterval, type: String) {
            let ordinal = type == "alert" ? 0 : sent[device]
            if type == "background" { sent[device] += 1 }
            pushes.append(.init(device: device, at: at, pushType: type))
            guard case .runs(let after, let download) = model.reaction(device: device, pushType: type, ordinal: ordinal) else { return }
            let start = at + after
            requests.append(.init(at: start, route: "GET /v1/editions/{id}", status: 200))
            requests.append(.init(at: start + 4, route: "POST /v1/devices/{token}/receipts", status: 204))
            receipts.append(.init(device: device, at: start + 4, result: download.rawValue))
            if download == .newData, doneAt[device] == nil { doneAt[device] = start + 4 }
        }

        func wave(startingAt start: TimeInterval, spread: TimeInterval) {
            let targets = (0..<devices).filter { device in
                sent[device] < maxPushes && !(doneAt[device].map { $0 < start } ?? false)
            }
            for (position, device) in targets.enumerated() {
                send(device, at: start + spread * Double(position) / Double(max(1, targets.count)), type: "background")
            }
        }

        switch strategy {
        case .blast:
            wave(startingAt: 0, spread: 5)
        case .staggered:
            wave(startingAt: 0, spread: window)
        case .waves, .hash, .oracle:
            for number in 0..<maxPushes { wave(startingAt: Double(number) * waveInterval, spread: window) }
            let start = Double(maxPushes) * waveInterval
            let lastResort = (0..<devices).filter { device in
                device % 10 < 6 && !(doneAt[device].map { $0 < start } ?? false)
            }
            for (position, device) in lastResort.enumerated() {
                send(device, at: start + 60 * Double(position) / Double(max(1, lastResort.count)), type: "alert")
            }
        }
        // Registrations, which must not count as content load.
        for minute in 0..<5 { requests.append(.init(at: Double(minute) * 60, route: "PUT /v1/devices/{token}", status: 200)) }
        return DemoRecording(
            strategy: strategy,
            devices: devices,
            deadline: deadline,
            window: window,
            pushes: pushes,
            requests: requests,
            receipts: receipts,
            rejections: strategy == .waves ? ["Unregistered": 3, "BadDeviceToken": 1] : ["Unregistered": 3],
            wallSeconds: 12.5
        )
    }

    static func report(devices: Int = 4000, seed: UInt64 = 42) -> DemoReport {
        let model = FleetModel(seed: seed)
        let reachable = (0..<devices).filter(model.isReachable).count
        let results = DemoStrategy.defaults.map { StrategyResult(make($0, model: model, devices: devices), reachable: reachable) }
        return DemoReport(
            results: results,
            devices: devices,
            seed: seed,
            timeCompression: [.blast: 60, .staggered: 60, .waves: 60],
            parameters: model.parameters,
            window: window,
            deadline: deadline
        )
    }
}
