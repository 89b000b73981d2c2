/// Why a target of a batch was not sent, as counted in a cohort's `skipped` and in the metrics.
public enum SkipReason: String, Codable, Sendable, CaseIterable {
    /// The device got ``BroadcastOptions/hourlyBudget`` background pushes in the last hour already.
    case hourlyBudget
    /// Its instant came at or after the edition's deadline.
    case deadline
    /// The broadcast was cancelled before its instant.
    case cancelled
    /// The device is registered with FCM, and this dispatcher sends through APNs only: an FCM token sent to
    /// APNs would be refused as `BadDeviceToken` and the device wrongly deactivated.
    case fcmNotConfigured
    /// The device is registered with APNs, and its app has no APNs key (an app may use FCM alone): it cannot be
    /// sent until `paperboy apps set-apns` gives the app one.
    case apnsNotConfigured

    /// The reason for a device whose provider the app has no credentials for.
    public static func notConfigured(_ provider: PushProvider) -> SkipReason {
        switch provider {
        case .apns: .apnsNotConfigured
        case .fcm: .fcmNotConfigured
        }
    }
}
