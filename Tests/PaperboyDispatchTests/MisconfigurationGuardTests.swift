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
}
