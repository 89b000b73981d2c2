import Foundation
import PaperboyCore

/// What a provider's answer to one target means for the batch, whatever the provider: the one rule that the worker
/// applies to its HTTP/2 clients' outcomes (`SendRules` in PaperboyBroadcast reads them as a verdict and a reason) and
/// the simulation to its provider's answers, so that the simulation checks this rule and not a copy of it.
///
/// - Only the provider's own per-device word deactivates a device: ``PushVerdict/tokenDead(since:)`` (uninstalled or
///   expired) until it registers again after the answer's timestamp, or, without one, after the database records it
///   (its clock wrote the registration; a worker's may disagree).
/// - ``PushVerdict/tokenInvalid(hint:)`` ("not valid for this app") defers the deactivation: every device hearing it
///   at once is a misconfiguration, not a fleet's death (``MisconfigurationGuard``).
/// - ``PushVerdict/credentialsRejected``: our credentials, never the token (``BatchSendMachine/Answer/credentialsRejected``).
/// - ``PushVerdict/misconfigured`` (the app's topic or project, or the endpoint) is never recorded: the provider stops
///   for the batch and its targets go back (``BatchSendMachine/Answer/appMisconfigured``).
/// - ``PushVerdict/unavailable`` (the provider busy or failing) is never recorded: the batch sends the target again, and
///   pauses the provider when it keeps answering so (``BatchSendMachine/Answer/providerUnavailable``).
/// - A proxy's 404 page or a 410 without the provider's body deactivates nothing (its verdict is never a token's).
///
/// The recorded reason is the provider's own spelling (`Unregistered`, `UNREGISTERED`), so counts by reason keep the
/// providers apart.
public enum AnswerRules {
    /// The answer as the batch's machine takes it.
    ///
    /// - Parameters:
    ///   - verdict: what the answer means.
    ///   - reason: the provider's (or something else's) reason when it answered with an error; nil when it accepted,
    ///     or nothing answered (never sent, no answer, credentials refused before sending).
    public static func answer(verdict: PushVerdict, reason: String?, position: Int, generation: Int) -> BatchSendMachine.Answer {
        let result: BatchOutcome.Result =
            switch (verdict, reason) {
            case (.accepted, _): .accepted
            case (_, let reason?): .rejected(reason: reason, deactivates: deactivation(verdict))
            case (.fateUnknown, nil): .fateUnknown
            case (_, nil): .notSent
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
