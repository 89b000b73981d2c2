import Foundation

/// How the simulated fleet is made and how its devices react to pushes. Every probability is in 0...1,
/// every time in seconds of demo time. The defaults describe a morning edition, as the seeds learned in
/// production (see DESIGN.md): most devices are charging and on Wi-Fi, iOS runs a background push only
/// when it likes the device's power and network state, and never for an app the user swiped away.
public struct FleetParameters: Sendable, Codable, Equatable {
    /// The chance iOS runs a background push, for a newer and an older device in one power/network state.
    public struct RunProbability: Sendable, Codable, Equatable {
        /// A newer device (recent hardware and iOS, more generous background budget).
        public var newer: Double
        /// An older device.
        public var older: Double

        public init(newer: Double, older: Double) {
            self.newer = newer
            self.older = older
        }
    }

    /// Share of newer devices. Default 0.6.
    public var newerShare: Double
    /// Share of devices on Wi-Fi (the rest are on cellular). Default 0.75.
    public var wifiShare: Double
    /// Share of devices charging (in the early morning). Default 0.7.
    public var chargingShare: Double
    /// Share of devices whose user swiped the app away: background pushes never run there. Default 0.05.
    public var swipedAwayShare: Double

    /// Run probability when charging on Wi-Fi. Default 0.9 newer, 0.8 older.
    public var runChargingOnWiFi: RunProbability
    /// Run probability on Wi-Fi, not charging. Default 0.7 newer, 0.5 older.
    public var runOnWiFi: RunProbability
    /// Run probability when charging on cellular. Default 0.6 newer, 0.3 older.
    public var runChargingOnCellular: RunProbability
    /// Run probability on cellular, not charging. Default 0.3 newer, 0.1 older.
    public var runOnCellular: RunProbability

    /// Median delay between a background push's arrival and the app running, in seconds. Default 20.
    public var medianDelay: TimeInterval
    /// The spread of that delay: the σ of its logarithm. Default 0.8.
    public var delaySpread: Double
    /// The longest a background run waits after arrival, in seconds. Default 120.
    public var maxDelay: TimeInterval

    /// Chance a download fails on Wi-Fi (the app then posts `failed`). Default 0.02.
    public var failureOnWiFi: Double
    /// Chance a download fails on cellular. Default 0.08.
    public var failureOnCellular: Double

    /// Chance the user taps an alert push (the only way an alert leads to a download). Default 0.3.
    public var alertTapProbability: Double
    /// Median delay between an alert's arrival and the tap, in seconds. Default 300 (5 minutes).
    public var alertMedianDelay: TimeInterval
    /// The spread of that delay: the σ of its logarithm. Default 1.0.
    public var alertDelaySpread: Double
    /// The longest an alert waits for its tap, in seconds. Default 1200 (20 minutes).
    public var alertMaxDelay: TimeInterval

    // Android (assumptions: Android's own documentation describes Doze's mechanism, not its numbers in a
    // real fleet at 05:00; these are picked to be plausible and are printed as assumptions).

    /// Share of unplugged Android devices in Doze at the morning's start (screen off, still for hours). A
    /// charging device never dozes. Default 0.8.
    public var androidDozeShare: Double
    /// Share of dozing devices in deep Doze (the rest are in light Doze). Default 0.6.
    public var androidDeepDozeShare: Double
    /// Light Doze: maintenance windows this far apart, in seconds (AOSP: 5 minutes growing to 15). Default 900.
    public var androidLightDozeInterval: TimeInterval
    /// Deep Doze: the shortest interval between maintenance windows, in seconds (AOSP: 1 hour). Default 3600.
    public var androidDeepDozeMinInterval: TimeInterval
    /// Deep Doze: the longest interval (AOSP: doubling up to 6 hours); a device's interval is drawn
    /// log-uniformly between the two, as devices have dozed for different lengths of time. Default 21600.
    public var androidDeepDozeMaxInterval: TimeInterval
    /// Median delay from a data message's delivery to the app's WorkManager job starting (network constraint
    /// met), in seconds. Default 10.
    public var androidJobMedianDelay: TimeInterval
    /// The spread of that delay: the σ of its logarithm. Default 0.8.
    public var androidJobDelaySpread: Double
    /// The longest that delay, in seconds. Default 60.
    public var androidJobMaxDelay: TimeInterval

    // The NSE path (assumptions: the starting figure is one messaging app's published measurement of ~88 %
    // of its `mutable-content` alerts reaching their Notification Service Extension; a newspaper's fleet is
    // not a messaging app's).

    /// Share of the devices that allow alerts whose reader asked to be told when the edition is ready
    /// (`notifyWhenReady`). Default 0.5.
    public var notifyWhenReadyShare: Double
    /// Chance a ready alert (`mutable-content: 1`) reaches the device and its Notification Service Extension
    /// runs, whatever the power and network state and even for a swiped-away app. Default 0.88.
    public var nseDeliveryProbability: Double
    /// The extension's time limit in seconds: a fetch that would take longer is cut off, and the extension
    /// posts no receipt. Default 30.
    public var nseTimeLimit: TimeInterval

    // Readers (assumptions: when people first open a news app in the morning is each publisher's own data; these
    // three groups are picked to be plausible and are printed as assumptions). Each device's reader belongs to one
    // group and has a usual first open drawn around the group's time; each morning's first open is that plus a
    // day-to-day wander, later on weekends, and some mornings the reader does not open at all.

    /// Share of readers who rise early (their usual first open around ``earlyRiserOpen``). Default 0.2.
    public var earlyRiserShare: Double
    /// Early risers' usual first open, local time. Default 05:35.
    public var earlyRiserOpen: ClockTime
    /// Share of commuters (around ``commuterOpen``; the rest are late readers). Default 0.5.
    public var commuterShare: Double
    /// Commuters' usual first open. Default 06:40.
    public var commuterOpen: ClockTime
    /// Late readers' usual first open. Default 08:10.
    public var lateReaderOpen: ClockTime
    /// σ of a reader's usual first open around their group's, in minutes. Default 25.
    public var habitSpread: Double
    /// σ of a morning's first open around the reader's usual one, in minutes (each reader's own σ is drawn between
    /// half and one and a half times it: some readers keep to the minute, some do not). Default 12.
    public var dailySpread: Double
    /// How much later a reader first opens on Saturdays and Sundays, in minutes, on average… Default 60.
    public var weekendShift: Double
    /// …with this σ between readers. Default 30.
    public var weekendShiftSpread: Double
    /// Chance a reader does not open the app on a morning. Default 0.1.
    public var skipMorning: Double

    public init(
        newerShare: Double = 0.6,
        wifiShare: Double = 0.75,
        chargingShare: Double = 0.7,
        swipedAwayShare: Double = 0.05,
        runChargingOnWiFi: RunProbability = .init(newer: 0.9, older: 0.8),
        runOnWiFi: RunProbability = .init(newer: 0.7, older: 0.5),
        runChargingOnCellular: RunProbability = .init(newer: 0.6, older: 0.3),
        runOnCellular: RunProbability = .init(newer: 0.3, older: 0.1),
        medianDelay: TimeInterval = 20,
        delaySpread: Double = 0.8,
        maxDelay: TimeInterval = 120,
        failureOnWiFi: Double = 0.02,
        failureOnCellular: Double = 0.08,
        alertTapProbability: Double = 0.3,
        alertMedianDelay: TimeInterval = 300,
        alertDelaySpread: Double = 1.0,
        alertMaxDelay: TimeInterval = 1200,
        androidDozeShare: Double = 0.8,
        androidDeepDozeShare: Double = 0.6,
        androidLightDozeInterval: TimeInterval = 900,
        androidDeepDozeMinInterval: TimeInterval = 3600,
        androidDeepDozeMaxInterval: TimeInterval = 21600,
        androidJobMedianDelay: TimeInterval = 10,
        androidJobDelaySpread: Double = 0.8,
        androidJobMaxDelay: TimeInterval = 60,
        notifyWhenReadyShare: Double = 0.5,
        nseDeliveryProbability: Double = 0.88,
        nseTimeLimit: TimeInterval = 30,
        earlyRiserShare: Double = 0.2,
        earlyRiserOpen: ClockTime = .init(hour: 5, minute: 35),
        commuterShare: Double = 0.5,
        commuterOpen: ClockTime = .init(hour: 6, minute: 40),
        lateReaderOpen: ClockTime = .init(hour: 8, minute: 10),
        habitSpread: Double = 25,
        dailySpread: Double = 12,
        weekendShift: Double = 60,
        weekendShiftSpread: Double = 30,
        skipMorning: Double = 0.1
    ) {
        self.newerShare = newerShare
        self.wifiShare = wifiShare
        self.chargingShare = chargingShare
        self.swipedAwayShare = swipedAwayShare
        self.runChargingOnWiFi = runChargingOnWiFi
        self.runOnWiFi = runOnWiFi
        self.runChargingOnCellular = runChargingOnCellular
        self.runOnCellular = runOnCellular
        self.medianDelay = medianDelay
        self.delaySpread = delaySpread
        self.maxDelay = maxDelay
        self.failureOnWiFi = failureOnWiFi
        self.failureOnCellular = failureOnCellular
        self.alertTapProbability = alertTapProbability
        self.alertMedianDelay = alertMedianDelay
        self.alertDelaySpread = alertDelaySpread
        self.alertMaxDelay = alertMaxDelay
        self.androidDozeShare = androidDozeShare
        self.androidDeepDozeShare = androidDeepDozeShare
        self.androidLightDozeInterval = androidLightDozeInterval
        self.androidDeepDozeMinInterval = androidDeepDozeMinInterval
        self.androidDeepDozeMaxInterval = androidDeepDozeMaxInterval
        self.androidJobMedianDelay = androidJobMedianDelay
        self.androidJobDelaySpread = androidJobDelaySpread
        self.androidJobMaxDelay = androidJobMaxDelay
        self.notifyWhenReadyShare = notifyWhenReadyShare
        self.nseDeliveryProbability = nseDeliveryProbability
        self.nseTimeLimit = nseTimeLimit
        self.earlyRiserShare = earlyRiserShare
        self.earlyRiserOpen = earlyRiserOpen
        self.commuterShare = commuterShare
        self.commuterOpen = commuterOpen
        self.lateReaderOpen = lateReaderOpen
        self.habitSpread = habitSpread
        self.dailySpread = dailySpread
        self.weekendShift = weekendShift
        self.weekendShiftSpread = weekendShiftSpread
        self.skipMorning = skipMorning
    }

    /// The chance iOS runs a background push on `device` (0 for a swiped-away app).
    public func runProbability(for device: SimulatedDevice) -> Double {
        if device.swipedAway { return 0 }
        let pair =
            switch (device.onWiFi, device.charging) {
            case (true, true): runChargingOnWiFi
            case (true, false): runOnWiFi
            case (false, true): runChargingOnCellular
            case (false, false): runOnCellular
            }
        return device.newer ? pair.newer : pair.older
    }

    /// The chance a download on `device` fails.
    public func failureProbability(for device: SimulatedDevice) -> Double {
        device.onWiFi ? failureOnWiFi : failureOnCellular
    }

    /// The parameters as (name, value, meaning) rows, for reports: the iOS model and what both platforms share.
    public var rows: [(name: String, value: String, meaning: String)] {
        func share(_ value: Double) -> String { String(format: "%.2f", value) }
        func pair(_ value: RunProbability) -> String { String(format: "%.2f / %.2f", value.newer, value.older) }
        func seconds(_ value: TimeInterval) -> String { String(format: "%.0f s", value) }
        return [
            ("newerShare", share(newerShare), "share of newer devices"),
            ("wifiShare", share(wifiShare), "share of devices on Wi-Fi"),
            ("chargingShare", share(chargingShare), "share of devices charging"),
            ("swipedAwayShare", share(swipedAwayShare), "share of devices whose app was swiped away (background pushes never run)"),
            ("runChargingOnWiFi", pair(runChargingOnWiFi), "background run probability, newer / older, charging on Wi-Fi"),
            ("runOnWiFi", pair(runOnWiFi), "background run probability, newer / older, on Wi-Fi"),
            ("runChargingOnCellular", pair(runChargingOnCellular), "background run probability, newer / older, charging on cellular"),
            ("runOnCellular", pair(runOnCellular), "background run probability, newer / older, on cellular"),
            ("medianDelay", seconds(medianDelay), "median delay from a background push's arrival to the run"),
            ("delaySpread", share(delaySpread), "σ of the delay's logarithm"),
            ("maxDelay", seconds(maxDelay), "longest delay of a background run"),
            ("failureOnWiFi", share(failureOnWiFi), "chance a download fails on Wi-Fi"),
            ("failureOnCellular", share(failureOnCellular), "chance a download fails on cellular"),
            ("alertTapProbability", share(alertTapProbability), "chance the user taps an alert push"),
            ("alertMedianDelay", seconds(alertMedianDelay), "median delay from an alert's arrival to the tap"),
            ("alertDelaySpread", share(alertDelaySpread), "σ of the tap delay's logarithm"),
            ("alertMaxDelay", seconds(alertMaxDelay), "longest delay of a tap"),
            (
                "notifyWhenReadyShare", share(notifyWhenReadyShare),
                "share of devices allowing alerts whose reader asked to be told when the edition is ready"
            ),
            (
                "nseDeliveryProbability", share(nseDeliveryProbability),
                "chance a ready alert's Notification Service Extension runs (one messaging app measured ~0.88)"
            ),
            ("nseTimeLimit", seconds(nseTimeLimit), "the extension's time to fetch the small tier"),
        ]
    }

    /// The readers' parameters as (name, value, meaning) rows: assumptions, which reports mark as such.
    public var readerRows: [(name: String, value: String, meaning: String)] {
        func share(_ value: Double) -> String { String(format: "%.2f", value) }
        func minutes(_ value: Double) -> String { String(format: "%.0f min", value) }
        return [
            ("earlyRiserShare", share(earlyRiserShare), "share of early risers"),
            ("earlyRiserOpen", earlyRiserOpen.description, "early risers' usual first open"),
            ("commuterShare", share(commuterShare), "share of commuters (the rest are late readers)"),
            ("commuterOpen", commuterOpen.description, "commuters' usual first open"),
            ("lateReaderOpen", lateReaderOpen.description, "late readers' usual first open"),
            ("habitSpread", minutes(habitSpread), "σ of a reader's usual first open around their group's"),
            ("dailySpread", minutes(dailySpread), "σ of a morning's first open around the reader's usual one (each reader ×0.5–1.5)"),
            ("weekendShift", minutes(weekendShift), "how much later readers first open on weekends, on average"),
            ("weekendShiftSpread", minutes(weekendShiftSpread), "σ of that shift between readers"),
            ("skipMorning", share(skipMorning), "chance a reader does not open the app on a morning"),
        ]
    }

    /// The Android model's parameters as (name, value, meaning) rows: assumptions, which reports mark as such.
    public var androidRows: [(name: String, value: String, meaning: String)] {
        func share(_ value: Double) -> String { String(format: "%.2f", value) }
        func seconds(_ value: TimeInterval) -> String { String(format: "%.0f s", value) }
        return [
            ("androidDozeShare", share(androidDozeShare), "share of unplugged Android devices in Doze at the start (charging ones never doze)"),
            ("androidDeepDozeShare", share(androidDeepDozeShare), "share of dozing devices in deep Doze (the rest in light Doze)"),
            ("androidLightDozeInterval", seconds(androidLightDozeInterval), "light Doze: maintenance windows this far apart"),
            ("androidDeepDozeMinInterval", seconds(androidDeepDozeMinInterval), "deep Doze: shortest interval between maintenance windows"),
            ("androidDeepDozeMaxInterval", seconds(androidDeepDozeMaxInterval), "deep Doze: longest interval (drawn log-uniformly per device)"),
            ("androidJobMedianDelay", seconds(androidJobMedianDelay), "median delay from delivery to the WorkManager job"),
            ("androidJobDelaySpread", share(androidJobDelaySpread), "σ of that delay's logarithm"),
            ("androidJobMaxDelay", seconds(androidJobMaxDelay), "longest delay of the WorkManager job"),
        ]
    }
}

/// One device of the simulated fleet, as it is for the whole edition (the demo runs one morning).
public struct SimulatedDevice: Sendable, Equatable {
    /// The device's position in the fleet, from 0.
    public var index: Int
    /// Recent hardware and iOS: iOS runs its background pushes more often.
    public var newer: Bool
    /// On Wi-Fi rather than cellular.
    public var onWiFi: Bool
    /// Plugged in.
    public var charging: Bool
    /// The user swiped the app away in the app switcher: background pushes never run.
    public var swipedAway: Bool

    public init(index: Int, newer: Bool, onWiFi: Bool, charging: Bool, swipedAway: Bool) {
        self.index = index
        self.newer = newer
        self.onWiFi = onWiFi
        self.charging = charging
        self.swipedAway = swipedAway
    }
}

/// How a simulated fleet of iOS and Android devices reacts to pushes: pure and deterministic (the Android
/// half is in `FleetModel+Android.swift`).
///
/// Every random choice is a counter-based draw, SplitMix64 over (seed, device index, purpose, ordinal), so
/// nothing depends on the order of calls: the same device reacts the same way to its n-th push under every
/// strategy (common random numbers), and the strategies differ only by what they send and when.
///
/// Several mornings (`paperboy demo --days N`): a device keeps its hardware (newer or older) and whether its
/// app is swiped away (an assumption: a user who swiped the app away, or abandoned it, does not open it again
/// during the run); everything else (Wi-Fi, charging, Doze, each push's run and delay) is drawn afresh each
/// morning. Morning 0 draws what a one-morning run draws.
public struct FleetModel: Sendable {
    public let seed: UInt64
    public let parameters: FleetParameters
    /// The morning, from 0.
    public let day: Int

    public init(seed: UInt64, parameters: FleetParameters = .init(), day: Int = 0) {
        self.seed = seed
        self.parameters = parameters
        self.day = day
    }

    /// The same fleet on morning `day` (from 0).
    public func on(day: Int) -> FleetModel {
        FleetModel(seed: seed, parameters: parameters, day: day)
    }

    /// Device `index`'s fixed traits.
    public func device(_ index: Int) -> SimulatedDevice {
        SimulatedDevice(
            index: index,
            newer: uniform(index, .newer, 0) < parameters.newerShare,
            onWiFi: uniform(index, .wifi, 0) < parameters.wifiShare,
            charging: uniform(index, .charging, 0) < parameters.chargingShare,
            swipedAway: uniform(index, .swipedAway, 0) < parameters.swipedAwayShare
        )
    }

    /// Reachable: a background push can run at all (the user did not swipe the app away).
    public func isReachable(_ index: Int) -> Bool {
        !device(index).swipedAway
    }

    /// Whether device `index`'s reader asked to be told when the edition is ready: a lasting setting of the
    /// app, which takes effect only where the device allows alerts.
    public func notifyWhenReady(_ index: Int) -> Bool {
        uniform(index, .notifyWhenReady, 0) < parameters.notifyWhenReadyShare
    }

    /// What device `index` does with its `ordinal`-th ready alert: its Notification Service Extension runs with
    /// ``FleetParameters/nseDeliveryProbability`` within seconds of the alert (a swiped-away app's too) and
    /// fetches the small tier; the download fails as any download does on the device's network.
    public func readyAlertReaction(device index: Int, ordinal: Int) -> Reaction {
        guard uniform(index, .nseDelivery, ordinal) < parameters.nseDeliveryProbability else { return .ignored(reason: "notDelivered") }
        let delay = logNormal(index, .nseDelay, ordinal, median: 2, spread: 0.5, cap: 10)
        let failed = uniform(index, .nseFailure, ordinal) < parameters.failureProbability(for: device(index))
        return .runs(after: delay, download: failed ? .failed : .newData)
    }

    /// What a device does with one push.
    public enum Reaction: Sendable, Equatable {
        /// Nothing happens: `swipedAway` (background push to a swiped-away app), `throttled` (iOS chose not
        /// to run it) or `notTapped` (an alert the user did not tap).
        case ignored(reason: String)
        /// The app runs `after` seconds of demo time after the push arrived and downloads the edition.
        case runs(after: TimeInterval, download: DownloadResult)
    }

    /// How the download went: the app posts this as its receipt.
    public enum DownloadResult: String, Sendable {
        case newData, failed
    }

    /// What device `index` does with its `ordinal`-th push (0 = first) of `pushType` ("background" or "alert")
    /// for one edition; any other push type is treated as background.
    ///
    /// Deterministic in (seed, index, pushType, ordinal): the same device reacts the same way under every
    /// strategy (common random numbers). Each ordinal is an independent draw, so a later push may run where
    /// an earlier one did not (which is why follow-up waves help).
    ///
    /// - A background push never runs for a swiped-away app; otherwise it runs with
    ///   ``FleetParameters/runProbability(for:)``, after a log-normal delay (median
    ///   ``FleetParameters/medianDelay``, capped at ``FleetParameters/maxDelay``).
    /// - An alert leads to a download only when the user taps it (``FleetParameters/alertTapProbability``),
    ///   after a longer log-normal delay; a swiped-away app still opens when tapped.
    /// - A download fails with ``FleetParameters/failureOnWiFi`` or ``FleetParameters/failureOnCellular``.
    public func reaction(device index: Int, pushType: String, ordinal: Int) -> Reaction {
        let device = device(index)
        let failed: Bool
        let delay: TimeInterval
        if pushType == "alert" {
            guard uniform(index, .alertTap, ordinal) < parameters.alertTapProbability else { return .ignored(reason: "notTapped") }
            delay = logNormal(
                index,
                .alertDelay,
                ordinal,
                median: parameters.alertMedianDelay,
                spread: parameters.alertDelaySpread,
                cap: parameters.alertMaxDelay
            )
            failed = uniform(index, .alertFailure, ordinal) < parameters.failureProbability(for: device)
        } else {
            if device.swipedAway { return .ignored(reason: "swipedAway") }
            guard uniform(index, .run, ordinal) < parameters.runProbability(for: device) else { return .ignored(reason: "throttled") }
            delay = logNormal(index, .delay, ordinal, median: parameters.medianDelay, spread: parameters.delaySpread, cap: parameters.maxDelay)
            failed = uniform(index, .failure, ordinal) < parameters.failureProbability(for: device)
        }
        return .runs(after: delay, download: failed ? .failed : .newData)
    }

    // MARK: - Counter-based randomness

    /// What a draw is for: each purpose has its own stream, so adding one never shifts another.
    enum Purpose: UInt64 {
        case newer = 1
        case wifi, charging, swipedAway
        case run, delay, delayAngle, failure
        case alertTap, alertDelay, alertDelayAngle, alertFailure
        case doze, deepDoze, dozeInterval, dozePhase, jobDelay, jobDelayAngle, jobFailure
        case notifyWhenReady, nseDelivery, nseDelay, nseDelayAngle, nseFailure
        case readerGroup, readerHabit, readerHabitAngle, readerDaily, readerDailyAngle, readerRegularity, readerWeekend,
            readerWeekendAngle, readerSkip
    }

    static func splitMix64(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1) from (seed, index, purpose, ordinal), and the morning unless the purpose is a
    /// lasting trait (an ordinal is a push's number, far below 1,000).
    func uniform(_ index: Int, _ purpose: Purpose, _ ordinal: Int) -> Double {
        let lasting = purpose == .newer || purpose == .swipedAway || purpose == .notifyWhenReady || Self.readerPurposes.contains(purpose)
        var h = Self.splitMix64(seed)
        h = Self.splitMix64(h ^ UInt64(bitPattern: Int64(index)))
        h = Self.splitMix64(h ^ purpose.rawValue)
        h = Self.splitMix64(h ^ UInt64(bitPattern: Int64(lasting ? ordinal : ordinal + day * 1_000)))
        return Double(h >> 11) * 0x1p-53
    }

    /// A log-normal draw with the given median and σ of its logarithm, capped (Box–Muller from two draws).
    func logNormal(_ index: Int, _ purpose: Purpose, _ ordinal: Int, median: TimeInterval, spread: Double, cap: TimeInterval) -> TimeInterval {
        let angle: Purpose =
            switch purpose {
            case .alertDelay: .alertDelayAngle
            case .jobDelay: .jobDelayAngle
            case .nseDelay: .nseDelayAngle
            default: .delayAngle
            }
        let u1 = 1 - uniform(index, purpose, ordinal)  // (0, 1]
        let u2 = uniform(index, angle, ordinal)
        let z = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
        return min(cap, max(0, median * exp(spread * z)))
    }
}
