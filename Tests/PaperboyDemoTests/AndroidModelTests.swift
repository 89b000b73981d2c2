import Foundation
import PaperboyDemo
import Testing

/// The Android half of the fleet model, without I/O: Doze's maintenance windows, priorities, the TTL, and
/// that every draw is a pure function of (seed, device, ordinal).
@Suite struct AndroidModelTests {
    static let expiry: TimeInterval = 7200

    @Test("the same seed gives the same Android devices and reactions, whatever the order of the calls")
    func deterministic() {
        let a = FleetModel(seed: 5)
        let b = FleetModel(seed: 5)
        let forward = (0..<300).map { a.androidReaction(device: $0, arrival: 120, highPriority: false, expiry: Self.expiry, ordinal: 0) }
        let backward = (0..<300).reversed().map {
            b.androidReaction(device: $0, arrival: 120, highPriority: false, expiry: Self.expiry, ordinal: 0)
        }
        #expect(forward == Array(backward.reversed()))
        #expect((0..<300).allSatisfy { a.androidDevice($0) == b.androidDevice($0) })
        let other = FleetModel(seed: 6)
        #expect((0..<300).filter { other.androidDevice($0) != a.androidDevice($0) }.count > 100)
    }

    @Test("a maintenance window delivers what arrived since the last one; high priority delivers at once")
    func maintenanceWindows() {
        let device = AndroidDevice(index: 0, onWiFi: true, charging: false, doze: .light(interval: 900, phase: 100))
        #expect(device.delivery(arrival: 50, highPriority: false) == 100)
        #expect(device.delivery(arrival: 100, highPriority: false) == 100)
        #expect(device.delivery(arrival: 101, highPriority: false) == 1000)
        #expect(device.delivery(arrival: 2000, highPriority: false) == 2800)
        #expect(device.delivery(arrival: 101, highPriority: true) == 101)
        let awake = AndroidDevice(index: 1, onWiFi: true, charging: true, doze: .awake)
        #expect(awake.delivery(arrival: 101, highPriority: false) == 101)
    }

    @Test("charging devices never doze; the dozing share follows androidDozeShare among unplugged devices")
    func dozeShares() {
        let model = FleetModel(seed: 3, parameters: FleetParameters(chargingShare: 0.5, androidDozeShare: 0.8, androidDeepDozeShare: 0.5))
        let devices = (0..<4000).map(model.androidDevice)
        #expect(devices.filter(\.charging).allSatisfy { !$0.isDozing })
        let unplugged = devices.filter { !$0.charging }
        let dozing = Double(unplugged.filter(\.isDozing).count) / Double(unplugged.count)
        #expect(abs(dozing - 0.8) < 0.04)
        let deep = devices.filter { if case .deep = $0.doze { true } else { false } }
        let deepShare = Double(deep.count) / Double(unplugged.filter(\.isDozing).count)
        #expect(abs(deepShare - 0.5) < 0.05)
        for device in deep {
            guard case .deep(let interval, let phase) = device.doze else { continue }
            #expect((3600...21600).contains(interval) && (0..<interval).contains(phase))
        }
    }

    @Test("no Doze: every message runs within the job's delay; all dozing: normal priority waits, high does not")
    func priorityAndDoze() {
        let parameters = FleetParameters()
        let awake = FleetModel(seed: 9, parameters: FleetParameters(androidDozeShare: 0))
        let asleep = FleetModel(seed: 9, parameters: FleetParameters(chargingShare: 0, androidDozeShare: 1))
        func waits(_ model: FleetModel, high: Bool) -> [TimeInterval] {
            (0..<1000).compactMap {
                guard case .runs(let after, _) = model.androidReaction(device: $0, arrival: 60, highPriority: high, expiry: 1e9, ordinal: 0)
                else { return nil }
                return after
            }
        }
        #expect(waits(awake, high: false).count == 1000)
        #expect(waits(awake, high: false).allSatisfy { $0 <= parameters.androidJobMaxDelay })
        #expect(waits(asleep, high: true).allSatisfy { $0 <= parameters.androidJobMaxDelay })
        let normal = waits(asleep, high: false)
        #expect(normal.count == 1000)
        #expect(normal.filter { $0 > parameters.androidJobMaxDelay }.count > 900)
        // The same device and message: the job's own delay is the same, Doze only adds its wait.
        for index in 0..<50 {
            let device = asleep.androidDevice(index)
            guard case .runs(let slow, let first) = asleep.androidReaction(device: index, arrival: 60, highPriority: false, expiry: 1e9, ordinal: 0),
                case .runs(let fast, let second) = asleep.androidReaction(device: index, arrival: 60, highPriority: true, expiry: 1e9, ordinal: 0)
            else {
                Issue.record("device \(index) did not run")
                continue
            }
            #expect(abs(slow - fast - (device.delivery(arrival: 60, highPriority: false) - 60)) < 1e-9)
            #expect(first == second)
        }
    }

    @Test("longer deep-Doze intervals deliver later, and a message Doze holds past its TTL is dropped")
    func intervalsAndExpiry() {
        func meanWait(maxInterval: TimeInterval) -> Double {
            let model = FleetModel(
                seed: 4,
                parameters: FleetParameters(chargingShare: 0, androidDozeShare: 1, androidDeepDozeShare: 1, androidDeepDozeMaxInterval: maxInterval)
            )
            let waits = (0..<1000).map { model.androidDevice($0).delivery(arrival: 0, highPriority: false) }
            return waits.reduce(0, +) / Double(waits.count)
        }
        #expect(meanWait(maxInterval: 21600) > 1.5 * meanWait(maxInterval: 3600))

        let model = FleetModel(seed: 4, parameters: FleetParameters(chargingShare: 0, androidDozeShare: 1))
        let reactions = (0..<500).map { model.androidReaction(device: $0, arrival: 0, highPriority: false, expiry: 60, ordinal: 0) }
        let expired = reactions.filter { $0 == .ignored(reason: "expired") }.count
        let heldPast = (0..<500).filter { model.androidDevice($0).delivery(arrival: 0, highPriority: false) >= 60 }.count
        #expect(expired == heldPast && expired > 400)
        #expect(
            (0..<500).allSatisfy {
                model.androidReaction(device: $0, arrival: 0, highPriority: true, expiry: 60, ordinal: 0) != .ignored(reason: "expired")
            }
        )
    }

    @Test("Android parameters are listed apart from the iOS ones, for the report to mark as assumptions")
    func rows() {
        let names = FleetParameters().androidRows.map(\.name)
        #expect(names.contains("androidDozeShare") && names.contains("androidDeepDozeMaxInterval"))
        #expect(Set(names).isDisjoint(with: FleetParameters().rows.map(\.name)))
    }
}
