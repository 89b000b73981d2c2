import Foundation
import PaperboyCore

/// A broadcast strategy the demo compares on the same fleet and seed.
public enum DemoStrategy: String, Sendable, Codable, CaseIterable {
    /// Every device at once, one push: what a naive sender does.
    case blast
    /// Staggered cohorts over the window, one push.
    case staggered
    /// Staggered cohorts with receipt-driven follow-up waves until the deadline (`maxPushesPerDevice` auto,
    /// Paperboy's default), 20 minutes apart, slots ordered by the readers' habits (learned from two weeks of open
    /// reports), as Paperboy does.
    case waves
    /// The waves strategy with no habits learned: every slot in the token hash's order, as before habits.
    case hash
    /// The waves strategy with slots ordered by when each reader opens the app this morning: what no server can know,
    /// the bound habit order is measured against.
    case oracle

    /// What `paperboy demo` runs without `--strategies`.
    public static let defaults: [DemoStrategy] = [.blast, .staggered, .waves]

    /// The strategies that send follow-up waves until the deadline.
    public var sendsWaves: Bool { self == .waves || self == .hash || self == .oracle }

    public var title: String {
        switch self {
        case .blast: "blast (everyone at once, one push)"
        case .staggered: "staggered cohorts, one push"
        case .waves: "staggered cohorts + waves until the deadline, in habit order"
        case .hash: "staggered cohorts + waves until the deadline, in hash order (no habits)"
        case .oracle: "staggered cohorts + waves until the deadline, in the oracle's order (this morning's opens)"
        }
    }
}

/// What happened in one strategy's run, as recorded by the parts that saw it: the APNs simulator's accept
/// log, the API's request log and the receipts table. Times are seconds of demo time since the
/// broadcast's start (the demo compresses time; these are already scaled back).
public struct DemoRecording: Sendable, Codable, Equatable {
    /// A notification the simulator accepted for a device.
    public struct Push: Sendable, Codable, Equatable {
        public var device: Int
        public var at: TimeInterval
        /// `background` or `alert` (APNs), `android` (an FCM data message to an Android device).
        public var pushType: String

        public init(device: Int, at: TimeInterval, pushType: String) {
            self.device = device
            self.at = at
            self.pushType = pushType
        }
    }

    /// A request the API answered.
    public struct Request: Sendable, Codable, Equatable {
        public var at: TimeInterval
        /// The route, e.g. `GET /v1/editions/{id}`.
        public var route: String
        public var status: Int

        public init(at: TimeInterval, route: String, status: Int) {
            self.at = at
            self.route = route
            self.status = status
        }
    }

    /// A reader opened the app: the demo's own view of whether the device held the edition then.
    public struct Open: Sendable, Codable, Equatable {
        public var device: Int
        public var at: TimeInterval
        /// The device had posted a successful receipt for the edition before the open.
        public var held: Bool

        public init(device: Int, at: TimeInterval, held: Bool) {
            self.device = device
            self.at = at
            self.held = held
        }
    }

    /// A receipt as stored.
    public struct Receipt: Sendable, Codable, Equatable {
        public var device: Int
        public var at: TimeInterval
        /// `newData`, `noData` or `failed`.
        public var result: String

        public init(device: Int, at: TimeInterval, result: String) {
            self.device = device
            self.at = at
            self.result = result
        }
    }

    public var strategy: DemoStrategy
    /// Devices in the fleet, iOS and Android.
    public var devices: Int
    /// Android devices among them: the last ones (indices `devices - androidDevices ..< devices`).
    public var androidDevices: Int
    /// Seconds from the broadcast's start to the edition's deadline.
    public var deadline: TimeInterval
    /// The window the staggered strategies spread wave 1 over, in seconds.
    public var window: TimeInterval
    public var pushes: [Push]
    public var requests: [Request]
    public var receipts: [Receipt]
    /// Whether device `index` is an Android device.
    public func isAndroid(_ index: Int) -> Bool { index >= devices - androidDevices }

    /// Rejections by reason (APNs reasons and FCM error codes), from the broadcast's progress.
    public var rejections: [String: Int]
    /// Wall-clock seconds the run took.
    public var wallSeconds: Double
    /// The morning, from 1, when the demo ran several (`--days`); nil for a one-morning run.
    public var day: Int?
    /// Devices pushed in wave 1 that were dormant (no receipt for their last editions), so they got no follow-ups.
    public var dormant: Int = 0
    /// Ready alerts (`mutable-content: 1`, for the Notification Service Extension) the devices received, and
    /// the devices whose extension fetched the small tier in time.
    public var readyAlerts = 0
    public var readyHeld = 0
    /// The broadcast's wake rates by wave, as `paperboy broadcast status` reports them: counted by Paperboy
    /// from the ledger and the receipts (which echo the push's wave), not from the model.
    public var wakeRatesByWave: WakeRates.Breakdown?
    /// The readers' opens this morning from the edition's publication to its deadline (the first of each reader's,
    /// and a second one an hour later for a reader whose first came before the publication), as the devices saw them.
    public var opens: [Open] = []
    /// Whether the edition was there when the readers looked, as Paperboy measured it from their open reports
    /// (`readyAtOpen` of the broadcast's status); nil in recordings made without a database.
    public var readyAtOpen: ReadyAtOpen?

    public init(
        strategy: DemoStrategy,
        devices: Int,
        deadline: TimeInterval,
        window: TimeInterval,
        pushes: [Push],
        requests: [Request],
        receipts: [Receipt],
        rejections: [String: Int],
        wallSeconds: Double,
        androidDevices: Int = 0
    ) {
        self.strategy = strategy
        self.devices = devices
        self.androidDevices = androidDevices
        self.deadline = deadline
        self.window = window
        self.pushes = pushes
        self.requests = requests
        self.receipts = receipts
        self.rejections = rejections
        self.wallSeconds = wallSeconds
    }
}
