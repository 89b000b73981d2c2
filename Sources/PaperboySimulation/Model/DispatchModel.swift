import Foundation
import PaperboyCore
import PaperboyDispatch

/// The dispatch store in memory: what the worker's statements do to `broadcast_batches`, `broadcast_cohorts`,
/// `broadcast_waves`, `origins`, `deliveries`, `devices`, `sender_status`, `provider_holds` and
/// `held_deactivations`, with the same rules, for the simulation. `ContractTests` run the same operations against it
/// and against PostgreSQL (`BroadcastRepository` and its neighbours) and require the same results: a rule changed in
/// one and not the other fails them.
///
/// Time is the caller's `now` throughout, as the repositories' `caller` lease clock; the simulation passes the true
/// virtual time, the database's clock.
public struct DispatchModel: Sendable {
    public struct Device: Sendable, Equatable {
        public var id: Int64
        public var app: Int
        public var token: PushToken
        public var key: Int64
        public var platform: DevicePlatform
        public var tier: ImageTier
        public var active = true
        /// `devices.dormant`: later waves leave the device out (of a broadcast whose `dormantAfter` is not 0).
        public var dormant = false
        public var registeredAt: Date
        public var unregisteredAt: Date?
        /// `devices.alerts_authorized`, `edition_alerts`, `notify_when_ready`: who may get an edition alert (the alert
        /// wave: authorized and asking for either) and who gets the ready alert in place of its last background
        /// follow-up (authorized and asking to be told when the edition is ready; APNs only).
        public var alertsAuthorized = false
        public var editionAlerts = false
        public var notifyWhenReady = false

        public init(
            id: Int64,
            app: Int,
            token: PushToken,
            key: Int64,
            platform: DevicePlatform,
            tier: ImageTier,
            registeredAt: Date
        ) {
            self.id = id
            self.app = app
            self.token = token
            self.key = key
            self.platform = platform
            self.tier = tier
            self.registeredAt = registeredAt
        }
    }

    public struct Broadcast: Sendable, Equatable {
        public var id: UUID
        public var app: Int
        public var edition: UUID
        public var state: BroadcastProgress.State
        public var deadline: Date
        public var origin: Int?
        public var failure: String?
        public var finishedAt: Date?
        /// The options its waves follow (``WavePolicy``): the interval, the pushes per device, the cohorts.
        public var options = BroadcastOptions()
        /// Wave 1's cohorts as planned: the slots every later wave keeps.
        public var firstWave: [StaggerPlan.Cohort] = []
    }

    public struct Wave: Sendable, Equatable {
        public var kind: BroadcastProgress.Wave.Kind = .background
        public var rate: Double
        public var startsAt: Date
        public var nextSlot: Date?
        public var finishedAt: Date?
    }

    public struct Cohort: Sendable, Equatable {
        public var broadcast: UUID
        public var wave: Int
        public var cohort: Int
        public var startsAt: Date
        public var nextKey: Int64
        public var endKey: Int64
        public var nextOrdinal = 0
        public var sent = 0
        public var accepted = 0
        public var rejected: [String: Int] = [:]
        public var skipped: [String: Int] = [:]
        public var providers: [String: Int] = [:]
    }

    public struct Batch: Sendable, Equatable {
        public var id: Int64
        public var broadcast: UUID
        public var wave: Int
        public var cohort: Int
        public var firstKey: Int64
        public var lastKey: Int64
        public var firstOrdinal: Int
        public var devices: Int
        public var leaseOwner: String
        public var leases = 1
        public var expires: Date
        public var slotStart: Date?
        public var done: Date?
        public var giveBacks = 0
        public var givenBackFor: String?
        public var givenBackProviders: [PushProvider] = []
        public var givenBackSince: Date?
        public var givenBackBy: String?
        public var givenBackLease: Int?
    }

    public struct Delivery: Sendable, Equatable {
        public var device: Int64
        public var broadcast: UUID
        public var wave: Int
        public var sentAt: Date
        public var outcome: String
        public var reason: String?
        public var background: Bool
    }

    public struct Hold: Sendable, Equatable {
        public var answer: String
        public var reason: String
        public var raisedBy: String
    }

    /// A row of `answer_tallies`: one worker's answers through an app's provider in ten seconds (the store's clock).
    struct TallyKey: Hashable, Sendable {
        var app: Int
        var environment: APNsEnvironment
        var provider: PushProvider
        /// Seconds since 1970, a multiple of ten.
        var period: Int
        var worker: String
    }

    public struct HeldDeactivation: Sendable, Equatable {
        public var app: Int
        public var provider: PushProvider
        public var environment: APNsEnvironment
        public var reason: String
        public var answeredAt: Date
        /// When the push it answered went out: the fleet's evidence starts there (migration 0031).
        public var sentAt: Date

        /// The hold that would cover it.
        public var key: HoldKey { HoldKey(appID: app, environment: environment, provider: provider) }
    }

    public struct WaveKey: Hashable, Sendable {
        public var broadcast: UUID
        public var wave: Int

        public init(broadcast: UUID, wave: Int) {
            self.broadcast = broadcast
            self.wave = wave
        }
    }

    struct StatusKey: Hashable, Sendable {
        var app: Int
        var provider: PushProvider
        var worker: String
    }

    struct DeliveryKey: Hashable, Sendable {
        var device: Int64
        var broadcast: UUID
        var wave: Int
    }

    // MARK: State

    /// Devices by id, and their ids in key order (then id), as the `devices` index on the cohort key reads them.
    public internal(set) var devices: [Int64: Device] = [:]
    var keyOrder: [Int64] = []
    public internal(set) var appProviders: [Int: Set<PushProvider>] = [:]
    /// Each app's configuration version (`apps.credentials_version`).
    public internal(set) var appVersions: [Int: Int] = [:]
    public internal(set) var broadcasts: [UUID: Broadcast] = [:]
    var waves: [WaveKey: Wave] = [:]
    public internal(set) var cohorts: [Cohort] = []
    public internal(set) var batches: [Int64: Batch] = [:]
    var deliveries: [DeliveryKey: Delivery] = [:]
    public internal(set) var origins: [Int: (capacity: Double, nextSlot: Date?)] = [:]
    var statuses: [StatusKey: SenderStatus] = [:]
    /// Keyed by app, environment and provider, as `provider_holds` is (migration 0032); the model's broadcasts and
    /// devices are production.
    public internal(set) var holds: [HoldKey: Hold] = [:]
    public internal(set) var heldDeactivations: [Int64: HeldDeactivation] = [:]
    /// `answer_tallies` and `provider_confirmations` (migration 0031): the fleet's evidence for the breaker, and the
    /// configuration versions whose "not valid" answers an operator confirmed, with when.
    var tallies: [TallyKey: AnswerEvidence.Counts] = [:]
    public internal(set) var confirmations: [HoldKey: (version: Int, at: Date)] = [:]
    /// Each device's background pushes in the ledger that were not `notSent`: the hourly budget's reading.
    var recentPushes: [Int64: [Date]] = [:]
    /// What the simulation's invariants read, which the tables do not keep: every device counted into a batch per
    /// broadcast, every final outcome written per device and broadcast (a ledger row or a skip), every deactivation.
    public internal(set) var carved: [WaveKey: Set<Int64>] = [:]
    public internal(set) var finals: [WaveKey: [Int64: Int]] = [:]
    public internal(set) var deactivations: [(device: Int64, at: Date)] = []
    /// Every device a count made dormant (`countPushes`), however briefly.
    public internal(set) var turnedDormant: Set<Int64> = []
    var nextBatchID: Int64 = 1
    /// `receipts`: each edition's successful receipts, by device, with when they were stored.
    public internal(set) var receipts: [UUID: [Int64: Date]] = [:]
    /// `wave_members`: a later wave's devices, recorded when it was counted; with when.
    public internal(set) var members: [WaveKey: Set<Int64>] = [:]
    public internal(set) var countedAt: [WaveKey: Date] = [:]
    /// `broadcast_counts`: a later wave's counts, its counter's claim and until when it holds.
    var counts: [WaveKey: (owner: String, until: Date?, counts: WavePolicy.Counts?)] = [:]
    /// Each broadcast's cohorts' key ranges, `[first, end)`, which every wave of it shares.
    var cohortRanges: [UUID: [(first: Int64, end: Int64)]] = [:]
    /// `device_pushes` (migration 0011): the edition each device was last counted for and how many editions in a
    /// row before it went unanswered; `uncounted_pushes` (migration 0029): each broadcast's recorded wave-1 batches'
    /// accepted background pushes, not yet counted, in the order written.
    public internal(set) var pushHistory: [Int64: PushHistory] = [:]
    var uncounted: [UUID: [[Int64]]] = [:]

    public init() {}

    // MARK: Setup

    public mutating func addApp(_ id: Int, providers: Set<PushProvider>, version: Int = 0) {
        appProviders[id] = providers
        appVersions[id] = version
    }

    public mutating func addDevices(_ new: [Device]) {
        for device in new { devices[device.id] = device }
        keyOrder = devices.values.sorted { ($0.key, $0.id) < ($1.key, $1.id) }.map(\.id)
    }

    /// `RegisterDevice` for a device already stored (an app's launch after an update, a changed setting): registered
    /// again now, its registration newer than any answer before; active unless its provider said the token stopped
    /// being valid after now; no longer dormant, its count of editions unanswered in a row started again (its
    /// `device_pushes` row keeps the edition it was last pushed).
    public mutating func register(_ id: Int64, now: Date) {
        guard let stored = devices[id] else { return }
        devices[id]?.registeredAt = now
        devices[id]?.active = stored.unregisteredAt.map { now > $0 } ?? true
        devices[id]?.dormant = false
        if let history = pushHistory[id], history.unanswered != 0 {
            pushHistory[id] = PushHistory(edition: history.edition, unanswered: 0)
        }
    }

    public mutating func addOrigin(_ id: Int, capacity: Double) {
        origins[id] = (capacity, nil)
    }

    /// A running broadcast with wave 1 at `rate` from `start`, its key space split into `cohorts` slots of `slot`
    /// seconds each (cohort `c` starts at `start + c × slot`).
    public mutating func startBroadcast(
        _ id: UUID,
        app: Int,
        start: Date,
        rate: Double,
        cohorts count: Int,
        slot: TimeInterval,
        deadline: Date,
        origin: Int? = nil,
        options: BroadcastOptions = BroadcastOptions(maxPushesPerDevice: .fixed(1))
    ) {
        let low = Int64(Int32.min)
        let width = (Int64(Int32.max) - low + 1) / Int64(count)
        let plan = (0..<count).map { cohort in
            let first = low + Int64(cohort) * width
            let end = cohort == count - 1 ? Int64(Int32.max) + 1 : first + width
            return (startsAt: start.addingTimeInterval(Double(cohort) * slot), firstKey: first, endKey: end)
        }
        startBroadcast(id, app: app, rate: rate, cohorts: plan, deadline: deadline, origin: origin, options: options)
    }

    /// A running broadcast with wave 1 at `rate` in these cohorts: each a key range `[firstKey, endKey)` from `startsAt`.
    public mutating func startBroadcast(
        _ id: UUID,
        app: Int,
        rate: Double,
        cohorts plan: [(startsAt: Date, firstKey: Int64, endKey: Int64)],
        deadline: Date,
        origin: Int? = nil,
        options: BroadcastOptions = BroadcastOptions(maxPushesPerDevice: .fixed(1))
    ) {
        var broadcast = Broadcast(id: id, app: app, edition: id, state: .running, deadline: deadline, origin: origin)
        broadcast.options = options
        broadcast.options.cohorts = plan.count
        broadcast.firstWave = plan.enumerated().map { index, cohort in
            let count = devices.values.count { $0.key >= cohort.firstKey && $0.key < cohort.endKey && $0.app == app && $0.active }
            let end = rate > 0 ? cohort.startsAt.addingTimeInterval(Double(count) / rate) : cohort.startsAt
            return StaggerPlan.Cohort(index: index, devices: count, start: cohort.startsAt, end: end, rate: count == 0 ? 0 : rate)
        }
        broadcasts[id] = broadcast
        cohortRanges[id] = plan.map { ($0.firstKey, $0.endKey) }
        waves[WaveKey(broadcast: id, wave: 1)] = Wave(rate: rate, startsAt: plan.map(\.startsAt).min() ?? deadline)
        for (index, cohort) in plan.enumerated() {
            cohorts.append(Cohort(broadcast: id, wave: 1, cohort: index, startsAt: cohort.startsAt, nextKey: cohort.firstKey, endKey: cohort.endKey))
        }
    }

    /// `WaveAudience.condition`: wave 1, the app's active devices; a later background wave, of those, the ones with no
    /// receipt for the edition and fewer background pushes for it than the wave's cap, among the members recorded when
    /// it was counted (`wave_members`; re-read when a batch is carved, so a receipt stored meanwhile leaves it out).
    /// Neither goes to a dormant device when the broadcast's `dormantAfter` is not 0.
    func inAudience(_ device: Device, of broadcast: Broadcast, wave: Int) -> Bool {
        guard device.app == broadcast.app && device.active else { return false }
        guard wave > 1 else { return true }
        let key = WaveKey(broadcast: broadcast.id, wave: wave)
        if let members = members[key], !members.contains(device.id) { return false }
        return inLaterAudience(device, of: broadcast, wave: wave, kind: waves[key]?.kind ?? .background)
    }

    /// The later wave's condition alone, members aside: no receipt for the edition; for a background wave, fewer
    /// background pushes than the cap; for the alert wave, alerts authorized and asked for (`edition_alerts` or
    /// `notify_when_ready`), a background push of the edition sent and no alert of it yet (the ready alert included).
    func inLaterAudience(_ device: Device, of broadcast: Broadcast, wave: Int, kind: BroadcastProgress.Wave.Kind) -> Bool {
        guard device.app == broadcast.app && device.active else { return false }
        if broadcast.options.dormantAfter > 0 && device.dormant { return false }
        if receipts[broadcast.edition]?[device.id] != nil { return false }
        guard kind == .alert else {
            return backgroundPushes(of: device.id, in: broadcast.id) < broadcast.options.maxPushesPerDevice.audienceCap(wave: wave)
        }
        guard device.alertsAuthorized && (device.editionAlerts || device.notifyWhenReady) else { return false }
        let sent = editionDeliveries(of: device.id, edition: broadcast.edition)
        return sent.contains(where: \.background) && !sent.contains(where: { !$0.background })
    }

    /// The device's rows of the ledger for any broadcast of `edition`, any outcome.
    func editionDeliveries(of device: Int64, edition: UUID) -> [Delivery] {
        var found: [Delivery] = []
        for broadcast in broadcasts.values where broadcast.edition == edition {
            var wave = 1
            while waves[WaveKey(broadcast: broadcast.id, wave: wave)] != nil {
                if let delivery = deliveries[DeliveryKey(device: device, broadcast: broadcast.id, wave: wave)] { found.append(delivery) }
                wave += 1
            }
        }
        return found
    }

    /// The device's background pushes for the broadcast in the ledger, across its waves (`notSent` is no push).
    func backgroundPushes(of device: Int64, in broadcast: UUID) -> Int {
        var count = 0
        var wave = 1
        while waves[WaveKey(broadcast: broadcast, wave: wave)] != nil {
            if let delivery = deliveries[DeliveryKey(device: device, broadcast: broadcast, wave: wave)], delivery.background,
                delivery.outcome != "notSent"
            {
                count += 1
            }
            wave += 1
        }
        return count
    }
}
