import Foundation
import PaperboyCore

/// Whether a target of a batch is sent at its instant: pure rules, applied by ``BatchSendMachine``.
public enum SkipRules {
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
}
