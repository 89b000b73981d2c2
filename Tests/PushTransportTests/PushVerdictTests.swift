import PaperboyCore
import Testing

@testable import PushTransport

@Suite("Verdicts and cancellation, without I/O")
struct PushVerdictTests {
    @Test(
        "an answer without the provider's body: a 4xx (but 429) says our endpoint is wrong, anything else leaves the fate unknown",
        arguments: [
            (400, PushVerdict.misconfigured), (401, .misconfigured), (403, .misconfigured), (404, .misconfigured), (405, .misconfigured),
            (410, .misconfigured), (429, .fateUnknown), (200, .fateUnknown), (500, .fateUnknown), (502, .fateUnknown), (503, .fateUnknown),
            (504, .fateUnknown),
        ]
    )
    func foreignAnswer(status: Int, verdict: PushVerdict) {
        #expect(PushVerdict.foreignAnswer(status: status) == verdict)
        #expect(PushVerdict.foreignAnswer(status: status) != .tokenDead(since: nil), "never a dead token")
    }

    @Test("cancelled before the hand-over: the requests must not go to the pool; after it: they must be withdrawn; once")
    func cancellationHandshake() {
        let early = PushBatchCancellation()
        #expect(!early.isCancelled)
        #expect(!early.cancel(), "nothing handed over yet: nothing to withdraw")
        #expect(early.isCancelled)
        #expect(!early.submit(), "cancelled first: the call completes them as not sent itself")

        let late = PushBatchCancellation()
        #expect(late.submit())
        #expect(!late.isCancelled)
        #expect(late.cancel(), "handed over: the pool withdraws them")
        #expect(late.isCancelled)
        #expect(!late.cancel(), "a second cancellation changes nothing")
        #expect(!late.submit())
    }

    @Test("a summary's verdict: accepted, the rejection's own, or the transport's")
    func summaryVerdict() {
        let error = PushTransportError(.cancelled, "cancelled")
        #expect(PushOutcomeSummary.accepted.verdict == .accepted)
        #expect(PushOutcomeSummary.rejected(status: 410, reason: "Unregistered", verdict: .tokenDead(since: nil)).verdict == .tokenDead(since: nil))
        #expect(PushOutcomeSummary.fateUnknown(error).verdict == .fateUnknown)
        #expect(PushOutcomeSummary.notSent(error).verdict == .notSent)
        #expect(PushOutcomeSummary.notSent(error).name == "notSent")
    }
}
