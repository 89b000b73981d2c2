import APNs
import FCM
import Foundation
import PaperboyCore
import PaperboyStore
import PushTransport

/// What happens to one target of a batch at its instant, and what its APNs answer means for the device:
/// pure rules, applied by the ``Dispatcher`` and recorded by the Store.
public enum SendRules {
    /// Why the target is not sent at `instant`, or nil when it is: nothing through a provider the app has no
    /// credentials for (`configured` false: an FCM token sent to APNs would be refused and the device wrongly
    /// deactivated); nothing at or after the edition's deadline; no background push past the device's hourly
    /// budget, counted in the hour before `instant` (iOS throttles beyond it, and a wasted push counts against the
    /// next hour too; Paperboy keeps the same budget for Android). Alerts are not budgeted: they are shown, not run.
    public static func skipReason(
        for target: BatchTarget,
        kind: BroadcastProgress.Wave.Kind,
        at instant: Date,
        deadline: Date,
        configured: (PushProvider) -> Bool
    ) -> SkipReason? {
        if !configured(target.provider) { return .notConfigured(target.provider) }
        if instant >= deadline { return .deadline }
        if kind == .background && target.backgroundPushes(inHourBefore: instant) >= BroadcastOptions.hourlyBudget { return .hourlyBudget }
        return nil
    }

    /// The outcome to record for an APNs answer. Only APNs's own answer that the token is dead
    /// (``PushVerdict/tokenDead(since:)``: 410 and the 400s that say the token itself is wrong, with APNs's JSON
    /// reason) deactivates the device, until it registers again after the 410's timestamp, or, for an answer without
    /// one, after the database records it (its clock wrote the registration; a worker's may disagree). A proxy's
    /// 404 page or a 410 without APNs's body deactivates nothing.
    public static func result(of outcome: APNsOutcome) -> BatchOutcome.Result {
        switch outcome {
        case .accepted: .accepted
        case .rejected(let rejection): .rejected(reason: rejection.reason.rawValue, deactivates: deactivation(outcome.verdict))
        case .fateUnknown: .fateUnknown
        case .notSent: .notSent
        }
    }

    /// The outcome to record for an FCM answer. The codes that say the token is dead (`UNREGISTERED`,
    /// `SENDER_ID_MISMATCH`, and the `INVALID_ARGUMENT` that says the token is not valid), in FCM's own error body,
    /// deactivate the device until it registers again after the database records the answer: FCM gives no
    /// timestamp. The code is the recorded reason: FCM's codes (`UNREGISTERED`) are spelled unlike APNs's reasons
    /// (`Unregistered`), so counts by reason keep the providers apart.
    public static func result(of outcome: FCMOutcome) -> BatchOutcome.Result {
        switch outcome {
        case .accepted: .accepted
        case .rejected(let rejection): .rejected(reason: "\(rejection.code)", deactivates: deactivation(outcome.verdict))
        case .fateUnknown: .fateUnknown
        case .notSent: .notSent
        }
    }

    /// When a verdict deactivates the device: only the provider's word that the token is dead does.
    static func deactivation(_ verdict: PushVerdict) -> BatchOutcome.Deactivation? {
        guard case .tokenDead(let since) = verdict else { return nil }
        return since.map { .at($0) } ?? .whenRecorded
    }

    /// Whether the provider refused this worker's credentials rather than the message (``PushVerdict/credentialsRejected``):
    /// APNs's 403 for the provider token or certificate; FCM's 401 that a fresh access token did not cure, or its
    /// token endpoint refusing the service account (a revoked or deleted key). Never the device's fault.
    /// `THIRD_PARTY_AUTH_ERROR` is the app's APNs setup at Firebase, not ours.
    public static func refusesCredentials(_ outcome: some PushOutcome) -> Bool {
        outcome.verdict == .credentialsRejected
    }
}
