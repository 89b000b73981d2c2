import Foundation
import PaperboyCore
import PaperboyDispatch
import PushTransport

/// What a provider's answer to one target means for the device, whatever the provider: pure rules on the
/// provider-neutral ``PushVerdict`` each provider module gives its answers, applied by the dispatcher and recorded by
/// the Store. No provider is named here: a third provider's answers read the same once its module gives verdicts.
public enum SendRules {
    /// The outcome to record for an answer, and the answer as the batch's machine takes it. Only the provider's own
    /// per-device word deactivates a device: ``PushVerdict/tokenDead(since:)`` (uninstalled or expired) until it
    /// registers again after the answer's timestamp, or, without one, after the database records it (its clock wrote
    /// the registration; a worker's may disagree). ``PushVerdict/tokenInvalid(hint:)`` ("not valid for this app")
    /// defers the deactivation: every device hearing it at once is a misconfiguration, not a fleet's death
    /// (``MisconfigurationGuard``). A proxy's 404 page or a 410 without the provider's body deactivates nothing.
    /// ``PushVerdict/misconfigured`` (the app's topic or project, or the endpoint) is never recorded either: the
    /// provider stops for the batch and its targets go back (``BatchSendMachine/Unsendable/misconfigured(_:)``).
    /// ``PushVerdict/unavailable`` (the provider busy or failing, beyond the client's retries) is never recorded: the
    /// batch pauses the provider and sends the target again once it answers (``BatchSendMachine``).
    /// The recorded reason is the provider's own spelling (`Unregistered`, `UNREGISTERED`), so counts by reason keep
    /// the providers apart.
    public static func answer(_ outcome: some PushOutcome, position: Int, generation: Int) -> BatchSendMachine.Answer {
        let summary = outcome.summary
        let verdict = summary.verdict
        let result: BatchOutcome.Result =
            switch summary {
            case .accepted: .accepted
            case .rejected(_, let reason, _): .rejected(reason: reason, deactivates: deactivation(verdict))
            case .fateUnknown: .fateUnknown
            case .notSent: .notSent
            }
        return BatchSendMachine.Answer(
            position: position,
            result: result,
            credentialsRejected: verdict == .credentialsRejected,
            providerUnavailable: verdict == .unavailable,
            appMisconfigured: verdict == .misconfigured,
            generation: generation,
            misconfigurationHint: verdict.misconfigurationHint
        )
    }

    /// When a verdict deactivates the device: only the provider's word that the token is dead does, and its word that
    /// the token is not valid for the app defers it.
    static func deactivation(_ verdict: PushVerdict) -> BatchOutcome.Deactivation? {
        switch verdict {
        case .tokenDead(let since): since.map { .at($0) } ?? .whenRecorded
        case .tokenInvalid: .deferred
        case .accepted, .credentialsRejected, .misconfigured, .dropped, .unavailable, .fateUnknown, .notSent: nil
        }
    }
}
