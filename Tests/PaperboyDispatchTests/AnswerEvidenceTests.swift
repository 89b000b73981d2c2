import Foundation
import PaperboyCore
import Testing

@testable import PaperboyDispatch

/// The fleet's evidence for the misconfiguration breaker, as a recorded batch adds it.
@Suite("Answer evidence")
struct AnswerEvidenceTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func outcome(_ seconds: Double, _ result: BatchOutcome.Result, provider: PushProvider = .apns, hint: String? = nil) -> BatchOutcome {
        BatchOutcome(deviceID: 1, sentAt: start.addingTimeInterval(seconds), result: result, provider: provider, hint: hint)
    }

    static let invalid = BatchOutcome.Result.rejected(reason: "DeviceTokenNotForTopic", deactivates: .deferred)

    @Test("answers are counted by provider and by the ten seconds they were sent in; unanswered and skipped ones are not")
    func counted() {
        let evidence = AnswerEvidence([
            Self.outcome(1, .accepted),
            Self.outcome(2, .rejected(reason: "Unregistered", deactivates: .whenRecorded)),
            Self.outcome(3, .notSent),
            Self.outcome(4, .fateUnknown),
            Self.outcome(5, .skipped(.deadline)),
            Self.outcome(12, .accepted),
            Self.outcome(6, .accepted, provider: .fcm),
        ])
        let first = AnswerEvidence.Key(provider: .apns, period: 1_800_000_000)
        #expect(evidence.counts[first] == AnswerEvidence.Counts(answers: 2, lastAccepted: Self.start.addingTimeInterval(1)))
        #expect(evidence.counts[AnswerEvidence.Key(provider: .apns, period: 1_800_000_010)]?.answers == 1)
        #expect(evidence.counts[AnswerEvidence.Key(provider: .fcm, period: 1_800_000_000)]?.answers == 1)
        #expect(evidence.counts.count == 3)
    }

    @Test("where a misconfiguration began mid-batch, only the answers from the first 'not valid' one on count as after it")
    func sinceInvalid() {
        let evidence = AnswerEvidence([
            Self.outcome(0.1, .accepted), Self.outcome(0.2, .accepted), Self.outcome(0.3, .accepted),
            Self.outcome(0.5, Self.invalid, hint: "the bundle id"), Self.outcome(0.6, Self.invalid, hint: "the bundle id"),
            Self.outcome(0.7, .accepted),
        ])
        let counts = evidence.counts[AnswerEvidence.Key(provider: .apns, period: 1_800_000_000)]
        #expect(
            counts
                == AnswerEvidence.Counts(
                    answers: 6,
                    invalid: 2,
                    sinceInvalid: 3,
                    reason: "DeviceTokenNotForTopic",
                    hint: "the bundle id",
                    lastAccepted: Self.start.addingTimeInterval(0.7)
                ),
            "the latest accepted push is the one sent last, whatever the order of the answers"
        )
    }

    @Test("a row merged: once it has a 'not valid' answer, every later answer counts as after it; the reason is the latest batch's")
    func merged() {
        let before = AnswerEvidence.Counts(answers: 5)
        let first = AnswerEvidence.Counts(answers: 4, invalid: 2, sinceInvalid: 3, reason: "BadDeviceToken")
        let row = AnswerEvidence.merged(before, first)
        #expect(row == AnswerEvidence.Counts(answers: 9, invalid: 2, sinceInvalid: 3, reason: "BadDeviceToken"))
        let later = AnswerEvidence.merged(row, AnswerEvidence.Counts(answers: 7))
        #expect(later == AnswerEvidence.Counts(answers: 16, invalid: 2, sinceInvalid: 10, reason: "BadDeviceToken"))
    }

    @Test("a row merged keeps the latest accepted push of either, whichever batch was recorded first")
    func mergedLastAccepted() {
        let early = AnswerEvidence.Counts(answers: 3, lastAccepted: Self.start.addingTimeInterval(2))
        let late = AnswerEvidence.Counts(answers: 3, lastAccepted: Self.start.addingTimeInterval(5))
        #expect(AnswerEvidence.merged(early, late).lastAccepted == Self.start.addingTimeInterval(5))
        #expect(AnswerEvidence.merged(late, early).lastAccepted == Self.start.addingTimeInterval(5))
        #expect(AnswerEvidence.merged(AnswerEvidence.Counts(answers: 2, invalid: 2), early).lastAccepted == Self.start.addingTimeInterval(2))
        #expect(AnswerEvidence.merged(early, AnswerEvidence.Counts(answers: 2, invalid: 2)).lastAccepted == Self.start.addingTimeInterval(2))
    }
}
