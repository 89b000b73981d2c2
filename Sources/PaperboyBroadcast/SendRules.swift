import Foundation
import PaperboyCore
import PaperboyDispatch
import PushTransport

/// A provider client's outcome as the batch's machine takes it: its verdict and reason, read by the rule the
/// simulation applies too (``AnswerRules``). No provider is named here: a third provider's answers read the same once
/// its module gives verdicts.
public enum SendRules {
    /// The answer to `position`'s push, sent with credentials of `generation`.
    public static func answer(_ outcome: some PushOutcome, position: Int, generation: Int) -> BatchSendMachine.Answer {
        let summary = outcome.summary
        let reason: String? = if case .rejected(_, let reason, _) = summary { reason } else { nil }
        return AnswerRules.answer(verdict: summary.verdict, reason: reason, position: position, generation: generation)
    }
}
