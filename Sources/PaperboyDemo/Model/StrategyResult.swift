import Foundation
import PaperboyCore

/// The figures of one strategy's run, computed from its ``DemoRecording``. Times are seconds of demo time
/// since the broadcast's start.
public struct StrategyResult: Sendable, Codable, Equatable {
    public var strategy: DemoStrategy
    /// Devices in the fleet.
    public var devices: Int
    /// Devices a background push can run on at all (the app was not swiped away).
    public var reachable: Int
    /// Pushes the APNs simulator accepted, background and alert.
    public var pushes: Int
    /// Pushes per device: ``pushes`` / ``devices``.
    public var pushesPerDevice: Double
    /// The content load: `GET /v1/editions/{id}` requests in each demo minute, from minute 0 up to the
    /// minute of the last such request.
    public var editionRequestsPerMinute: [Int]
    /// Peak: edition requests in the busiest demo minute, per second (that minute's count / 60).
    public var peakPerSecond: Double
    /// Mean: edition requests in [0, window) divided by the window in seconds, where the window is the one
    /// the staggered strategies spread wave 1 over; the same window for every strategy, so a blast that
    /// serves everything in its first minute shows how much capacity it needs compared with a flat plan.
    public var meanPerSecond: Double
    /// Peak / mean (0 when nothing was requested in the window).
    public var peakToMean: Double
    /// Held by the deadline: devices with a `newData` or `noData` receipt stored before the deadline
    /// (`failed` receipts and receipts at or after the deadline do not count).
    public var held: Int
    /// ``held`` / ``reachable`` (a swiped-away app opened from a tapped alert counts as held too).
    public var heldShare: Double
    /// Receipts by result (`newData`, `noData`, `failed`), at any time.
    public var receipts: [String: Int]
    /// Rejections by reason (APNs reasons, FCM error codes).
    public var rejections: [String: Int]
    /// Wall-clock seconds the run took.
    public var wallSeconds: Double
    /// The same figures per platform: iOS, and Android when the fleet has Android devices.
    public var platforms: [PlatformResult]
    /// The most a policy could reach on the model's iOS devices (``Ceiling``), when the report computed it.
    public var ceiling: Ceiling?
    /// The iOS devices' held share / the ceiling's held share.
    public var heldShareOfCeiling: Double?
    /// The fleet model's parameters, stated as assumptions.
    public var assumptions: ModelAssumptions?
    /// The morning, from 1, when the demo ran several (`--days`); nil for a one-morning run.
    public var day: Int?
    /// Devices pushed in wave 1 that were dormant (no receipt for their last editions), so they got no follow-ups.
    public var dormant: Int
    /// Ready alerts the devices received (in place of the last background follow-up, to readers who asked to
    /// be told), and the devices whose Notification Service Extension fetched the small tier with one: they
    /// count as holding the edition.
    public var readyAlerts: Int
    public var readyHeld: Int
    /// The broadcast's wake rates by wave as Paperboy measured them from the receipts (nil in recordings made
    /// without a database).
    public var wakeRatesByWave: WakeRates.Breakdown?
    /// Ready at open as Paperboy measured it from the readers' open reports (the broadcast's `readyAtOpen`).
    public var readyAtOpen: ReadyAtOpen?
    /// The same share as the devices saw it: of the readers' opens from the publication to the deadline, those whose
    /// device held the edition; nil without opens.
    public var openedHeldShare: Double?
    /// Readers' opens from the publication to the deadline.
    public var opened: Int
    /// The waits of the readers who did not find the edition, in demo minutes from the open to their device's first
    /// holding receipt (Paperboy measures them in the database's clock, which the demo does not compress): the median
    /// and the 90th percentile of those who got it, and how many did not before the deadline.
    public var openWaitMedianMinutes: Double?
    public var openWaitP90Minutes: Double?
    public var openWaitedForever: Int

    /// The strategy's name, with the morning when the demo ran several: `waves`, `waves day 2`.
    public var name: String { strategy.rawValue + (day.map { " day \($0)" } ?? "") }
    /// The strategy's title, with the morning: `staggered cohorts + waves until the deadline, morning 2`.
    public var title: String { strategy.title + (day.map { ", morning \($0)" } ?? "") }

    /// The prefix of the routes that count as content load.
    public static let editionRoutePrefix = "GET /v1/editions/"

    /// One line per figure, as the report prints them.
    public static let definitions: [String] = [
        "peak = edition GETs in the busiest demo minute / 60.",
        "mean = edition GETs in [0, window) / window, the staggered window, the same for every strategy: a blast that serves everything in its first minute shows how much capacity it needs compared with a flat plan.",
        "held = devices with a newData or noData receipt before the deadline (failed and late receipts do not count) / reachable devices (app not swiped away).",
        "ready at open = of the readers' first opens after the edition's publication and before its deadline, the share that found it held (a receipt stored before the open), as Paperboy measured it from their open reports (no share under 200 opens).",
        "pushes/device = pushes APNs and FCM accepted (background, alert, Android data messages) / devices.",
        "time to hold = from the broadcast's start to a device's first holding receipt: median / 90th percentile of the devices that held it.",
        "of ceiling = iOS devices held / the ceiling: the share of reachable iOS devices a policy could hold that pushes each from its wave-1 slot every 20 minutes (Apple's cadence, at most 3 an hour) until it holds the edition or the deadline passes, computed from the model's parameters (iOS only: Doze, not a per-push chance, limits Android).",
    ]

    /// - Parameters:
    ///   - reachable: reachable devices of every platform; every Android device is reachable (the model has
    ///     no force-stopped apps), so the iOS devices' count is `reachable - recording.androidDevices`.
    public init(_ recording: DemoRecording, reachable: Int) {
        strategy = recording.strategy
        devices = recording.devices
        self.reachable = reachable
        pushes = recording.pushes.count
        pushesPerDevice = recording.devices > 0 ? Double(recording.pushes.count) / Double(recording.devices) : 0

        let editionTimes = recording.requests.filter { $0.route.hasPrefix(Self.editionRoutePrefix) && $0.at.isFinite }.map(\.at)
        var perMinute: [Int] = []
        if let last = editionTimes.max() {
            perMinute = Array(repeating: 0, count: Self.minute(of: last) + 1)
            for at in editionTimes { perMinute[Self.minute(of: at)] += 1 }
        }
        editionRequestsPerMinute = perMinute
        peakPerSecond = Double(perMinute.max() ?? 0) / 60
        let window = recording.window
        meanPerSecond = window > 0 ? Double(editionTimes.filter { $0 >= 0 && $0 < window }.count) / window : 0
        peakToMean = meanPerSecond > 0 ? peakPerSecond / meanPerSecond : 0

        var heldDevices = Set<Int>()
        var receipts: [String: Int] = [:]
        for receipt in recording.receipts {
            receipts[receipt.result, default: 0] += 1
            if receipt.at < recording.deadline, receipt.result == "newData" || receipt.result == "noData" {
                heldDevices.insert(receipt.device)
            }
        }
        held = heldDevices.count
        heldShare = reachable > 0 ? Double(heldDevices.count) / Double(reachable) : 0
        self.receipts = receipts
        rejections = recording.rejections
        wallSeconds = recording.wallSeconds
        day = recording.day
        dormant = recording.dormant
        readyAlerts = recording.readyAlerts
        readyHeld = recording.readyHeld
        wakeRatesByWave = recording.wakeRatesByWave
        readyAtOpen = recording.readyAtOpen
        opened = recording.opens.count
        openedHeldShare = recording.opens.isEmpty ? nil : Double(recording.opens.filter(\.held).count) / Double(recording.opens.count)
        var holding: [Int: [TimeInterval]] = [:]
        for receipt in recording.receipts where receipt.result == "newData" || receipt.result == "noData" {
            holding[receipt.device, default: []].append(receipt.at)
        }
        var waits: [Double] = []
        var forever = 0
        for open in recording.opens where !open.held {
            if let got = holding[open.device]?.filter({ $0 >= open.at && $0 < recording.deadline }).min() {
                waits.append((got - open.at) / 60)
            } else {
                forever += 1
            }
        }
        waits.sort()
        openWaitMedianMinutes = waits.isEmpty ? nil : waits[(waits.count - 1) / 2]
        openWaitP90Minutes = waits.isEmpty ? nil : waits[min(waits.count - 1, Int((0.9 * Double(waits.count)).rounded(.up)) - 1)]
        openWaitedForever = forever
        platforms = [PlatformResult(.ios, recording: recording, reachable: max(0, reachable - recording.androidDevices))]
        if recording.androidDevices > 0 {
            platforms.append(PlatformResult(.android, recording: recording, reachable: recording.androidDevices))
        }
    }

    /// Sets ``ceiling``, ``heldShareOfCeiling`` (on iOS devices: the ceiling is iOS-only) and ``assumptions``.
    public mutating func compare(to ceiling: Ceiling, assumptions: ModelAssumptions) {
        self.ceiling = ceiling
        let iosHeld = platform(.ios)?.heldShare ?? heldShare
        heldShareOfCeiling = ceiling.heldShare > 0 ? iosHeld / ceiling.heldShare : nil
        self.assumptions = assumptions
    }

    /// The figures of one platform, nil when the fleet has none of its devices.
    public func platform(_ platform: PlatformResult.Platform) -> PlatformResult? {
        platforms.first { $0.platform == platform }
    }

    /// The demo minute `at` falls in (times before the start count in minute 0).
    static func minute(of at: TimeInterval) -> Int {
        max(0, Int((at / 60).rounded(.down)))
    }

    /// Edition requests per second in each demo minute.
    public var editionRequestsPerSecond: [Double] {
        editionRequestsPerMinute.map { Double($0) / 60 }
    }

    /// All rejections.
    public var rejectionCount: Int {
        rejections.values.reduce(0, +)
    }
}
