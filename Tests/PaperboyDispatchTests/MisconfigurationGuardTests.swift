import Foundation
import PaperboyCore
import Testing

@testable import PaperboyDispatch

/// A misconfiguration is told from a fleet of dead tokens by the share of "token not valid" answers.
@Suite("The misconfiguration guard")
struct MisconfigurationGuardTests {
    static func answers(invalid: Int, accepted: Int, reason: String = "DeviceTokenNotForTopic") -> [(reason: String, hint: String?)] {
        Array(repeating: (reason, "the bundle id"), count: invalid) + Array(repeating: ("accepted", nil), count: accepted)
    }

    @Test("every device answering DeviceTokenNotForTopic: suspected after the tenth, naming the answer and its likely cause")
    func everyDevice() {
        var guarding = MisconfigurationGuard()
        #expect(guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 9, accepted: 0)) == nil)
        let suspicion = guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 1, accepted: 0))
        #expect(suspicion?.answer == "DeviceTokenNotForTopic")
        #expect(suspicion?.likelyCause == "the bundle id")
        #expect(suspicion?.reason == "10 of the last 10 APNs answers said DeviceTokenNotForTopic: the bundle id")
    }

    @Test("a healthy fleet's stray invalid tokens never pass: 5 % of 10,000 answers, in any order")
    func healthyFleet() {
        var guarding = MisconfigurationGuard()
        for _ in 0..<500 {
            #expect(guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 1, accepted: 19)) == nil)
        }
        // Even a burst of 30 in a row among healthy answers stays under half of the window.
        #expect(guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 30, accepted: 0)) == nil)
    }

    @Test("more than half of the last 200 answers: an app whose new bundle id shipped to half its fleet is suspected too")
    func majority() {
        var guarding = MisconfigurationGuard()
        #expect(guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 0, accepted: 100)) == nil)
        #expect(guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 100, accepted: 0)) == nil, "100 of 200: not more than half")
        #expect(guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 1, accepted: 0)) != nil, "101 of the last 200")
    }

    @Test("apps and providers are tallied apart, and a suspicion starts the tally again")
    func apart() {
        var guarding = MisconfigurationGuard()
        _ = guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 9, accepted: 0))
        #expect(guarding.observe(appID: 2, provider: .apns, Self.answers(invalid: 9, accepted: 0)) == nil)
        #expect(guarding.observe(appID: 1, provider: .fcm, Self.answers(invalid: 9, accepted: 0, reason: "SENDER_ID_MISMATCH")) == nil)
        #expect(guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 1, accepted: 0)) != nil)
        #expect(guarding.observe(appID: 1, provider: .apns, Self.answers(invalid: 9, accepted: 0)) == nil, "counted from scratch")
    }

    static func fleet(held: Int, answers: Int, invalid: Int, active: Int = 20, confirmed: Bool = false) -> FleetAnswers {
        FleetAnswers(
            appID: 1,
            provider: .apns,
            version: 4,
            held: held,
            due: held,
            answers: answers,
            invalid: invalid,
            reason: "DeviceTokenNotForTopic",
            hint: "the bundle id",
            activeDevices: active,
            confirmed: confirmed
        )
    }

    @Test(
        "the fleet rule: 150 devices spread over four workers, each seeing too few to trip its own guard, are held together; the hold names every worker's answers"
    )
    func fleetHolds() {
        // Four workers with 37 or 38 "not valid" answers each and nothing else: no worker's guard saw ten in a row
        // within its window at 0.08 a second, but the fleet's 150 of 150 are plain.
        var perWorker = MisconfigurationGuard()
        for second in 0..<38 {
            #expect(perWorker.observe(appID: 1, provider: .apns, Self.answers(invalid: 1, accepted: 0), now: Double(second) * 48) == nil)
        }
        let verdict = MisconfigurationGuard.judge(Self.fleet(held: 150, answers: 150, invalid: 150))
        guard case .hold(let suspicion) = verdict else {
            Issue.record("expected a hold, got \(verdict)")
            return
        }
        #expect(suspicion.version == 4)
        #expect(suspicion.reason == "150 of 150 APNs answers from every worker said DeviceTokenNotForTopic: the bundle id")
    }

    @Test("the fleet rule: a healthy fleet's stray tokens are applied; a few 'not valid' answers with nothing after them wait for more")
    func fleetApplies() {
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 300, answers: 10_000, invalid: 300)) == .apply)
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 4, answers: 4, invalid: 4)) == .wait, "4 of 4: too few to tell")
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 4, answers: 9, invalid: 4)) == .apply, "4 of 9: not most")
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 10, answers: 19, invalid: 10)) != .apply, "10 of 19: most, and enough")
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 0, answers: 50, invalid: 50)) == .apply, "nothing held: nothing to judge")
    }

    @Test("the fleet rule: the evidence lost (kept a day) counts the held deactivations themselves; a small fleet mostly held is held")
    func fleetFloorAndSmall() {
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 12, answers: 0, invalid: 0)) != .apply)
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 3, answers: 0, invalid: 0)) == .wait)
        guard case .hold(let small) = MisconfigurationGuard.judge(Self.fleet(held: 4, answers: 30, invalid: 4, active: 6)) else {
            Issue.record("a six-device fleet with four held: expected a hold")
            return
        }
        #expect(small.invalid == 4 && small.answers == 6)
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 2, answers: 30, invalid: 2, active: 3)) == .apply, "fewer than three held")
    }

    @Test("the fleet rule: once an operator confirmed the tokens are invalid, everything held is applied")
    func fleetConfirmed() {
        #expect(MisconfigurationGuard.judge(Self.fleet(held: 500, answers: 500, invalid: 500, confirmed: true)) == .apply)
        #expect(MisconfigurationGuard.appliedBefore(Self.fleet(held: 500, answers: 500, invalid: 500, confirmed: true)) == .distantFuture)
    }

    @Test(
        "a held deactivation is applied once a push accepted through the same configuration was sent more than a second after its answer; none while nothing was accepted since"
    )
    func appliedOnlyAfterALaterAcceptance() {
        var fleet = Self.fleet(held: 1, answers: 200, invalid: 1)
        #expect(MisconfigurationGuard.judge(fleet) == .apply, "one of 200: a stray token by share")
        #expect(MisconfigurationGuard.appliedBefore(fleet) == nil, "nothing accepted since the oldest held one: nothing applied")
        let accepted = Date(timeIntervalSince1970: 1_800_000_000)
        fleet.lastAccepted = accepted
        #expect(MisconfigurationGuard.appliedBefore(fleet) == accepted.addingTimeInterval(-1))
        let rules = MisconfigurationGuard.Configuration()
        #expect(rules.acceptedAfter >= 1, "more than the workers' clocks differ from the database's")
    }
}
