import APNs
import FCM
import Foundation
import PaperboyCore
import PaperboyStore

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

    /// The outcome to record for an APNs answer. A reason that is permanent for the token
    /// (``APNsReason/isPermanentForToken``: 410 and the 400s that say the token itself is wrong) deactivates
    /// the device until it registers again after the 410's timestamp, or, for an answer without one, after
    /// the database records it (its clock wrote the registration; a worker's may disagree).
    public static func result(of outcome: APNsOutcome) -> BatchOutcome.Result {
        switch outcome {
        case .accepted: .accepted
        case .rejected(let rejection):
            .rejected(
                reason: rejection.reason.rawValue,
                deactivates: rejection.reason.isPermanentForToken ? rejection.timestamp.map { .at($0) } ?? .whenRecorded : nil
            )
        case .fateUnknown: .fateUnknown
        case .notSent: .notSent
        }
    }

    /// The outcome to record for an FCM answer. The codes that say the token is dead (`UNREGISTERED`,
    /// `SENDER_ID_MISMATCH`, and the `INVALID_ARGUMENT` that says the token is not valid) deactivate the
    /// device until it registers again after the database records the answer: FCM gives no timestamp.
    /// The code is the recorded reason: FCM's codes (`UNREGISTERED`) are spelled unlike APNs's reasons
    /// (`Unregistered`), so counts by reason keep the providers apart.
    public static func result(of outcome: FCMOutcome) -> BatchOutcome.Result {
        switch outcome {
        case .accepted: .accepted
        case .rejected(let rejection):
            .rejected(reason: "\(rejection.code)", deactivates: rejection.action == .deactivateToken ? .whenRecorded : nil)
        case .fateUnknown: .fateUnknown
        case .notSent: .notSent
        }
    }

    /// Whether APNs refused this worker's credentials rather than the notification: the provider token is invalid,
    /// expired (after the client's one refresh) or missing, the key is not the team's, or a certificate is wrong. No
    /// device is at fault: the credentials are read again, and the device is sent again or given back.
    public static func refusesCredentials(_ outcome: APNsOutcome) -> Bool {
        guard case .rejected(let rejection) = outcome, rejection.status == 403 else { return false }
        switch rejection.reason {
        case .invalidProviderToken, .expiredProviderToken, .missingProviderToken, .unrelatedKeyIdInToken, .badCertificate,
            .badCertificateEnvironment:
            return true
        default:
            return false
        }
    }

    /// Whether FCM refused this worker's credentials: a 401 that a fresh access token did not cure (the service
    /// account's key revoked or deleted). `THIRD_PARTY_AUTH_ERROR` is the app's APNs setup at Firebase, not ours.
    public static func refusesCredentials(_ outcome: FCMOutcome) -> Bool {
        guard case .rejected(let rejection) = outcome else { return false }
        return rejection.code == .unauthenticated
    }
}
