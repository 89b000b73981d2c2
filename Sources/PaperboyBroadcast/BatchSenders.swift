import APNs
import FCM
import Foundation
import PaperboyCore

/// A batch's ways out: the APNs channel and the push per tier for its APNs devices, the FCM channel for its
/// FCM devices, and what FCM messages are made of. A provider the batch's devices do not use is absent.
struct BatchSenders: Sendable {
    var apns: APNsChannels.Channel?
    var apnsNotifications: [ImageTier: APNsNotification] = [:]
    /// The last background follow-up's push to devices whose reader asked to be told when the edition is
    /// ready (``BroadcastPreflight/readyNotification(for:wave:)``); nil in other batches.
    var readyNotification: APNsNotification?
    var fcm: FCMChannels.Channel?
    let edition: Edition
    let kind: BroadcastProgress.Wave.Kind
    /// The batch's wave, which its pushes carry (``EditionPush/wave``).
    let wave: Int
    let androidPriority: BroadcastOptions.AndroidPriority

    init(edition: Edition, kind: BroadcastProgress.Wave.Kind, wave: Int, androidPriority: BroadcastOptions.AndroidPriority) {
        self.edition = edition
        self.kind = kind
        self.wave = wave
        self.androidPriority = androidPriority
    }

    /// The provider that cannot be reached or does not answer now ("APNs", "FCM"), if one of the batch's does.
    var unreachable: String? {
        if apns?.client.isUnreachable == true { return "APNs" }
        if fcm?.client.isUnreachable == true { return "FCM" }
        return nil
    }

    /// The longer silence limit of the batch's providers: what a hung one processes at once when it is back.
    var silenceLimit: Duration {
        max(apns?.client.silenceLimit ?? .zero, fcm?.client.silenceLimit ?? .zero)
    }
}

/// The FCM messages of one moment of a batch, made once per tier and platform: their `ttl` is the time left
/// then, so they are made again for each group of devices due together.
struct FCMMessageCache {
    private var made: [String: FCMMessage] = [:]

    /// The message for a device of `platform` in `tier` sent at `sentAt`; nil if it cannot be made (the
    /// preflight refuses such editions before a broadcast starts).
    mutating func message(tier: ImageTier, platform: DevicePlatform, sentAt: Date, senders: BatchSenders) -> FCMMessage? {
        let key = tier.rawValue + "/" + platform.rawValue
        if let message = made[key] { return message }
        let message = try? BroadcastPreflight.fcmMessage(
            for: senders.edition,
            tier: tier,
            kind: senders.kind,
            wave: senders.wave,
            platform: platform,
            priority: senders.androidPriority,
            sentAt: sentAt
        )
        made[key] = message
        return message
    }
}
