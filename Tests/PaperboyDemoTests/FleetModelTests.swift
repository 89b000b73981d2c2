import Foundation
import PaperboyDemo
import Testing

@Suite struct FleetModelTests {
    @Test func sameSeedGivesSameDevicesAndReactions() {
        let a = FleetModel(seed: 7)
        let b = FleetModel(seed: 7)
        for index in 0..<500 {
            #expect(a.device(index) == b.device(index))
            for ordinal in 0..<3 {
                #expect(
                    a.reaction(device: index, pushType: "background", ordinal: ordinal)
                        == b.reaction(device: index, pushType: "background", ordinal: ordinal)
                )
                #expect(
                    a.reaction(device: index, pushType: "alert", ordinal: ordinal) == b.reaction(device: index, pushType: "alert", ordinal: ordinal)
                )
            }
        }
    }

    @Test func reactionsDoNotDependOnCallOrder() {
        let model = FleetModel(seed: 11)
        let forward = (0..<200).map { model.reaction(device: $0, pushType: "background", ordinal: 1) }
        let backward = (0..<200).reversed().map { model.reaction(device: $0, pushType: "background", ordinal: 1) }.reversed()
        #expect(forward == Array(backward))
    }

    @Test func differentSeedsDiffer() {
        let a = FleetModel(seed: 1)
        let b = FleetModel(seed: 2)
        let devicesDiffer = (0..<500).filter { a.device($0) != b.device($0) }.count
        let reactionsDiffer = (0..<500).filter {
            a.reaction(device: $0, pushType: "background", ordinal: 0) != b.reaction(device: $0, pushType: "background", ordinal: 0)
        }.count
        #expect(devicesDiffer > 250)
        #expect(reactionsDiffer > 250)
    }

    @Test func sharesAreRoughlyAsConfigured() {
        let model = FleetModel(seed: 2026)
        let devices = (0..<20_000).map(model.device)
        func share(_ predicate: (SimulatedDevice) -> Bool) -> Double { Double(devices.filter(predicate).count) / 20_000 }
        #expect(abs(share(\.newer) - 0.6) < 0.02)
        #expect(abs(share(\.onWiFi) - 0.75) < 0.02)
        #expect(abs(share(\.charging) - 0.7) < 0.02)
        #expect(abs(share(\.swipedAway) - 0.05) < 0.01)
        #expect(devices.enumerated().allSatisfy { $0.offset == $0.element.index })

        let custom = FleetModel(seed: 2026, parameters: FleetParameters(newerShare: 0.2, swipedAwayShare: 0.3))
        let customDevices = (0..<20_000).map(custom.device)
        #expect(abs(Double(customDevices.filter(\.newer).count) / 20_000 - 0.2) < 0.02)
        #expect(abs(Double(customDevices.filter(\.swipedAway).count) / 20_000 - 0.3) < 0.02)
    }

    @Test func swipedAwayNeverRunsABackgroundPushButMayOpenFromAnAlert() {
        let model = FleetModel(seed: 5)
        let swiped = (0..<20_000).filter { model.device($0).swipedAway }
        #expect(swiped.count > 500)
        for index in swiped {
            #expect(!model.isReachable(index))
            for ordinal in 0..<4 {
                #expect(model.reaction(device: index, pushType: "background", ordinal: ordinal) == .ignored(reason: "swipedAway"))
            }
        }
        let tapped = swiped.filter {
            if case .runs = model.reaction(device: $0, pushType: "alert", ordinal: 0) { true } else { false }
        }
        #expect(Double(tapped.count) / Double(swiped.count) > 0.2)
        #expect((0..<1000).filter { !model.device($0).swipedAway }.allSatisfy(model.isReachable))
    }

    @Test func runProbabilityFollowsPowerNetworkAndClass() {
        let model = FleetModel(seed: 99)
        func runShare(_ predicate: (SimulatedDevice) -> Bool) -> Double {
            let chosen = (0..<40_000).filter { predicate(model.device($0)) }
            let runs = chosen.filter {
                if case .runs = model.reaction(device: $0, pushType: "background", ordinal: 0) { true } else { false }
            }
            return Double(runs.count) / Double(chosen.count)
        }
        let best = runShare { $0.newer && $0.onWiFi && $0.charging && !$0.swipedAway }
        let worst = runShare { !$0.newer && !$0.onWiFi && !$0.charging && !$0.swipedAway }
        #expect(abs(best - 0.9) < 0.03)
        #expect(abs(worst - 0.1) < 0.05)
        #expect(best > worst)
        let parameters = FleetParameters()
        let newerWiFi = SimulatedDevice(index: 0, newer: true, onWiFi: true, charging: true, swipedAway: false)
        let olderCellular = SimulatedDevice(index: 0, newer: false, onWiFi: false, charging: false, swipedAway: false)
        #expect(parameters.runProbability(for: newerWiFi) > parameters.runProbability(for: olderCellular))
        #expect(parameters.runProbability(for: SimulatedDevice(index: 0, newer: true, onWiFi: true, charging: true, swipedAway: true)) == 0)
    }

    @Test func laterPushesAreIndependentDraws() {
        let model = FleetModel(seed: 3)
        let reachable = (0..<20_000).filter(model.isReachable)
        func runs(_ index: Int, _ ordinal: Int) -> Bool {
            if case .runs = model.reaction(device: index, pushType: "background", ordinal: ordinal) { true } else { false }
        }
        let firstIgnored = reachable.filter { !runs($0, 0) }
        let secondRunsAfterIgnored = firstIgnored.filter { runs($0, 1) }
        // Some devices that ignored the first push run the second one: that is what waves are for.
        #expect(Double(secondRunsAfterIgnored.count) / Double(firstIgnored.count) > 0.3)
        // The reaction to ordinal 1 is not a copy of ordinal 0.
        let same = reachable.filter {
            model.reaction(device: $0, pushType: "background", ordinal: 0) == model.reaction(device: $0, pushType: "background", ordinal: 1)
        }
        #expect(Double(same.count) / Double(reachable.count) < 0.5)
    }

    @Test func delaysAndFailuresStayWithinBounds() {
        let parameters = FleetParameters()
        let model = FleetModel(seed: 17, parameters: parameters)
        var backgroundDelays: [Double] = []
        var alertDelays: [Double] = []
        var failed = 0
        var alertRuns = 0
        let alerts = 20_000
        for index in 0..<20_000 {
            if case .runs(let after, let download) = model.reaction(device: index, pushType: "background", ordinal: 0) {
                backgroundDelays.append(after)
                if download == .failed { failed += 1 }
            }
            if case .runs(let after, _) = model.reaction(device: index, pushType: "alert", ordinal: 0) {
                alertDelays.append(after)
                alertRuns += 1
            }
        }
        #expect(backgroundDelays.allSatisfy { $0 >= 0 && $0 <= parameters.maxDelay })
        #expect(alertDelays.allSatisfy { $0 >= 0 && $0 <= parameters.alertMaxDelay })
        let median = backgroundDelays.sorted()[backgroundDelays.count / 2]
        #expect(abs(median - 20) < 3)
        let alertMedian = alertDelays.sorted()[alertDelays.count / 2]
        #expect(abs(alertMedian - 300) < 40)
        #expect(abs(Double(alertRuns) / Double(alerts) - 0.3) < 0.02)
        let failureShare = Double(failed) / Double(backgroundDelays.count)
        #expect(failureShare > 0.01 && failureShare < 0.08)
    }

    @Test func parametersRoundTripThroughJSON() throws {
        let parameters = FleetParameters(medianDelay: 30)
        let data = try JSONEncoder().encode(parameters)
        #expect(try JSONDecoder().decode(FleetParameters.self, from: data) == parameters)
    }
}
