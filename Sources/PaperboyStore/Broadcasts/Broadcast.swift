import Foundation
import PaperboyCore

/// A broadcast as stored: one edition to one environment, with the options it runs with.
public struct Broadcast: Sendable, Equatable {
    public var id: UUID
    public var editionID: UUID
    public var appID: Int
    public var publicationID: Int
    public var environment: APNsEnvironment
    public var state: BroadcastProgress.State
    public var options: BroadcastOptions
    public var origin: String
    /// The jittered start of wave 1; later waves start `waveInterval` apart from it.
    public var start: Date
    public var deadline: Date
    public var createdAt: Date
    public var finishedAt: Date?
    /// Why a `failed` broadcast failed.
    public var failure: String?
    /// Why it started later or runs slower than asked (its content origin was busy), if it did.
    public var note: String?
    /// The edition's publication (slug) and day.
    public var publication: String
    public var issueDate: String
}

/// What starting a broadcast did.
public struct BroadcastStart: Sendable, Equatable {
    public var broadcast: Broadcast
    /// False when the edition already had a broadcast in that environment and this attached to it.
    public var created: Bool
    /// Wave 1's plan, when this start created the broadcast.
    public var plan: StaggerPlan?
}

/// A batch of one cohort leased to one worker: the devices in keys `firstKey...lastKey` of the cohort.
public struct LeasedBatch: Sendable, Equatable {
    public var id: Int64
    public var broadcastID: UUID
    public var wave: Int
    public var kind: BroadcastProgress.Wave.Kind
    public var cohort: Int
    public var firstKey: Int64
    public var lastKey: Int64
    /// The cohort position of the batch's first device: its send time is the cohort's start plus
    /// `firstOrdinal / rate`.
    public var firstOrdinal: Int
    public var devices: Int
    public var cohortStart: Date
    /// Sends per second of the wave, across all workers.
    public var rate: Double
    public var editionID: UUID
    public var appID: Int
    public var publicationID: Int
    public var environment: APNsEnvironment
    public var maxPushesPerDevice: Int
    /// Devices dormant after this many unanswered editions get no follow-ups (``BroadcastOptions/dormantAfter``).
    public var dormantAfter: Int = BroadcastOptions.defaultDormantAfter
    public var deadline: Date
    /// FCM's `android.priority` for the broadcast's Android devices (``BroadcastOptions/androidPriority``).
    public var androidPriority: BroadcastOptions.AndroidPriority = .normal
    /// How many times the batch has been leased: more than 1 after a worker died holding it.
    public var leases: Int

    /// When the batch's first device goes out: its planned instant, or later when the wave is behind its
    /// plan (a slot claimed from the wave's shared timeline; see ``BroadcastRepository/reclaimSlot``).
    public var slotStart: Date

    /// From which send instant a device of this background batch gets its last background follow-up
    /// (``BroadcastOptions/lastBackgroundFollowUp(wave:deadline:)``): there, APNs devices whose reader asked to
    /// be told when the edition is ready get the ready alert instead. Nil: no device of the batch does.
    public var readyAlertsFrom: Date?

    /// Whether a worker gave the batch back before (a drain, or a provider it could not send through): the devices
    /// it recorded then are left out of the batch's targets.
    public var givenBack = false

    /// The capacity of the content origin the batch's publication shares, if it has one: the batch then sends in an
    /// exclusive slot of the origin's timeline at this rate (``sendRate``).
    public var originCapacity: Double?

    /// Whether the batch's wave was carved from the members recorded when it was counted (`wave_members`,
    /// migration 0021): its targets are those members, read by key, still in the audience.
    public var membersRecorded = false

    /// How fast the batch's devices go out within its slot: the origin's capacity when it shares one (its slot is
    /// exclusive, so the origin never sees more), else the wave's rate.
    public var sendRate: Double { originCapacity ?? rate }

    /// When the `index`-th device of the batch is due in the plan.
    public func plannedTime(index: Int) -> Date {
        guard rate > 0 else { return cohortStart }
        return cohortStart.addingTimeInterval(Double(firstOrdinal + index) / rate)
    }

    /// When the `index`-th device of the batch goes out: its slot's start plus its place at the batch's send rate.
    public func sendTime(index: Int) -> Date {
        guard sendRate > 0 else { return slotStart }
        return slotStart.addingTimeInterval(Double(index) / sendRate)
    }
}

/// A device of a leased batch, in send order.
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
    /// The reader asked to be told when the edition is ready, and the device allows alerts.
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

/// What became of one target of a batch.
public struct BatchOutcome: Sendable, Equatable {
    public enum Result: Sendable, Equatable {
        case accepted
        /// The provider refused it; a deactivation when the answer says the token itself is dead or wrong.
        case rejected(reason: String, deactivates: Deactivation?)
        case fateUnknown
        case notSent
        /// Not sent, for the reason given.
        case skipped(SkipReason)
    }

    /// When a rejected token stopped being valid: a device registered after it stays (or becomes) active.
    public enum Deactivation: Sendable, Equatable {
        /// APNs' own time (410's `timestamp`).
        case at(Date)
        /// The database's clock when the outcome is recorded: the answer carried no time, and a worker's
        /// clock may disagree with the database's, which writes `registered_at`.
        case whenRecorded
    }

    public var deviceID: Int64
    public var sentAt: Date
    public var result: Result
    /// Who it went through, for the counts per provider.
    public var provider: PushProvider
    /// An alert sent in a background wave (the ready alert), recorded as no background push.
    public var alert: Bool

    public init(deviceID: Int64, sentAt: Date, result: Result, provider: PushProvider = .apns, alert: Bool = false) {
        self.deviceID = deviceID
        self.sentAt = sentAt
        self.result = result
        self.provider = provider
        self.alert = alert
    }
}
