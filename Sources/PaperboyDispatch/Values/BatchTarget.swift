import Foundation
import PaperboyCore

public struct BatchTarget: Sendable, Equatable {
    public var deviceID: Int64
    /// The token with its provider; ``PushToken/text`` is what the provider takes (hex for APNs, the
    /// registration token for FCM).
    public var token: PushToken
    /// The device's platform: an iOS device registered through FCM needs the APNs headers in its message.
    public var platform: DevicePlatform
    public var tier: ImageTier
    /// When the device got background pushes in the hour before the batch was read, across all broadcasts.
    public var recentBackgroundPushes: [Date]
    /// The reader asked to be told when the edition is ready, the device allows alerts, and no alert of the edition
    /// reached it yet (a follow-up wave's batch; false in wave 1).
    public var notifyWhenReady: Bool

    public init(
        deviceID: Int64,
        token: PushToken,
        platform: DevicePlatform = .ios,
        tier: ImageTier,
        recentBackgroundPushes: [Date] = [],
        notifyWhenReady: Bool = false
    ) {
        self.deviceID = deviceID
        self.token = token
        self.platform = platform
        self.tier = tier
        self.recentBackgroundPushes = recentBackgroundPushes
        self.notifyWhenReady = notifyWhenReady
    }

    /// The provider the device is registered with.
    public var provider: PushProvider { token.provider }

    /// Background pushes the device got in the hour before `instant` (after `instant - 3600`): the hourly
    /// budget is counted at the device's own send instant, not when its batch was read, which can be a
    /// batch's length earlier and would count a push that falls out of the hour by then.
    public func backgroundPushes(inHourBefore instant: Date) -> Int {
        let since = instant.addingTimeInterval(-3600)
        return recentBackgroundPushes.count { $0 > since && $0 <= instant }
    }
}
