import Foundation
import PaperboyCore

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
    /// plan (a slot claimed from the wave's shared timeline; see ``the wave's shared timeline``).
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

    /// The database's clock when the batch was read for its lease: the worker measures its own clock against it, as
    /// every slot is on the database's clock. Nil where the store did not say.
    public var leasedAt: Date?

    public init(
        id: Int64,
        broadcastID: UUID,
        wave: Int,
        kind: BroadcastProgress.Wave.Kind,
        cohort: Int,
        firstKey: Int64,
        lastKey: Int64,
        firstOrdinal: Int,
        devices: Int,
        cohortStart: Date,
        rate: Double,
        editionID: UUID,
        appID: Int,
        publicationID: Int,
        environment: APNsEnvironment,
        maxPushesPerDevice: Int,
        dormantAfter: Int = BroadcastOptions.defaultDormantAfter,
        deadline: Date,
        androidPriority: BroadcastOptions.AndroidPriority = .normal,
        leases: Int,
        slotStart: Date,
        readyAlertsFrom: Date? = nil,
        givenBack: Bool = false,
        originCapacity: Double? = nil,
        membersRecorded: Bool = false,
        leasedAt: Date? = nil
    ) {
        self.id = id
        self.broadcastID = broadcastID
        self.wave = wave
        self.kind = kind
        self.cohort = cohort
        self.firstKey = firstKey
        self.lastKey = lastKey
        self.firstOrdinal = firstOrdinal
        self.devices = devices
        self.cohortStart = cohortStart
        self.rate = rate
        self.editionID = editionID
        self.appID = appID
        self.publicationID = publicationID
        self.environment = environment
        self.maxPushesPerDevice = maxPushesPerDevice
        self.dormantAfter = dormantAfter
        self.deadline = deadline
        self.androidPriority = androidPriority
        self.leases = leases
        self.slotStart = slotStart
        self.readyAlertsFrom = readyAlertsFrom
        self.givenBack = givenBack
        self.originCapacity = originCapacity
        self.membersRecorded = membersRecorded
        self.leasedAt = leasedAt
    }

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
