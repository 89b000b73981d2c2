import Foundation
import PaperboyCore

/// The most a background-push policy could reach on the fleet model: the share of reachable iOS devices
/// holding the edition by the deadline when every reachable device is pushed from its wave-1 slot at Apple's
/// maximum cadence until it holds the edition or the deadline passes, and that policy's expected pushes.
///
/// Computed as an expectation from the model's own parameters (``FleetParameters``), not by sampling the
/// simulator. Per device, with `q` = its run probability × (1 − its download failure probability):
/// - Push `k` (0 = wave 1) goes out at `slot + k × interval` while that is before the deadline, and only if
///   no earlier push led to a held edition before it: earlier push `j` did so with probability
///   `q × P(delay < slot_k − slot_j)`. A run is an independent draw per push, as in ``FleetModel``.
/// - A push counts only if its run starts before the deadline: `q × P(delay < deadline − slot_k)`, where the
///   delay is the model's capped log-normal (``FleetParameters/medianDelay``, ``FleetParameters/delaySpread``,
///   ``FleetParameters/maxDelay``). A push near the deadline therefore counts only in part, and one at or
///   after it is not sent. A failed download does not hold, and the device is pushed again.
/// - The device holds the edition unless no push counts:
///   `held = 1 − Π_k (1 − q × P(delay < deadline − slot_k))`.
///
/// What it assumes:
/// - A device's wave-1 slot is uniform over the window (the staggered plan: equal cohorts back to back at
///   one rate); the figures are averaged over the slot (midpoints, ``slotSteps`` of them). With a 30-minute
///   window, 20-minute cadence and 2-hour deadline, a device slotted in the first 20 minutes gets 6 chances,
///   a later one 5: that is why the ceiling is a little under the "6 pushes for everyone" figure.
/// - The cadence is `max(minimumWaveInterval, 1 hour / hourlyBudget)`: 20 minutes, so never more than 3
///   background pushes in an hour.
/// - The download itself and the receipt's request take no time: an upper bound by a few seconds per push.
/// - iOS only. An Android data message at normal priority is not run-or-throttled per push: Doze holds it
///   to the next maintenance window and a newer message replaces a held one, so pushing at a cadence does not
///   add chances the way it does on iOS; Android's figures stand on their own in the platform table.
/// - Swiped-away apps are not reachable: they are outside ``heldShare``. A sender cannot tell them apart, so
///   ``pushesPerDevice`` counts them pushed at every slot until the deadline.
public struct Ceiling: Sendable, Codable, Equatable {
    /// Expected share of reachable iOS devices holding the edition by the deadline.
    public var heldShare: Double
    /// Expected pushes per reachable iOS device.
    public var pushesPerReachableDevice: Double
    /// Expected pushes per iOS device, the unreachable ones pushed at every slot.
    public var pushesPerDevice: Double
    /// Seconds between a device's pushes.
    public var interval: TimeInterval
    /// The most pushes a device gets: the one slotted first.
    public var mostPushes: Int
    /// The staggered window wave 1 is spread over, and the deadline, in seconds from the broadcast's start.
    public var window: TimeInterval
    public var deadline: TimeInterval
    /// A fixed number of pushes per device the policy stops at; nil: until the deadline.
    public var maxPushes: Int?

    /// Apple's maximum cadence for background pushes.
    public static let cadence: TimeInterval = max(BroadcastOptions.minimumWaveInterval, 3600 / Double(BroadcastOptions.hourlyBudget))
    /// Slots the window is averaged over.
    public static let slotSteps = 720

    /// The ceiling over devices made with the model's shares (the expected fleet).
    /// - Parameter maxPushes: stop after this many pushes per device (nil: until the deadline), to compare
    ///   with a fixed cap.
    public init(
        parameters: FleetParameters,
        window: TimeInterval,
        deadline: TimeInterval,
        interval: TimeInterval = Ceiling.cadence,
        maxPushes: Int? = nil
    ) {
        var classes: [DeviceClass: Double] = [:]
        for newer in [true, false] {
            for onWiFi in [true, false] {
                for charging in [true, false] {
                    let device = SimulatedDevice(index: 0, newer: newer, onWiFi: onWiFi, charging: charging, swipedAway: false)
                    let weight =
                        (newer ? parameters.newerShare : 1 - parameters.newerShare)
                        * (onWiFi ? parameters.wifiShare : 1 - parameters.wifiShare)
                        * (charging ? parameters.chargingShare : 1 - parameters.chargingShare)
                    classes[DeviceClass(device, parameters), default: 0] += weight
                }
            }
        }
        self.init(
            classes: classes,
            reachableShare: 1 - parameters.swipedAwayShare,
            parameters: parameters,
            window: window,
            deadline: deadline,
            interval: interval,
            maxPushes: maxPushes
        )
    }

    /// The ceiling over the model's iOS devices `devices` (the fleet a demo run actually had).
    public init(
        model: FleetModel,
        devices: Range<Int>,
        window: TimeInterval,
        deadline: TimeInterval,
        interval: TimeInterval = Ceiling.cadence,
        maxPushes: Int? = nil
    ) {
        var classes: [DeviceClass: Double] = [:]
        var reachable = 0
        for index in devices {
            let device = model.device(index)
            guard !device.swipedAway else { continue }
            reachable += 1
            classes[DeviceClass(device, model.parameters), default: 0] += 1
        }
        self.init(
            classes: classes,
            reachableShare: devices.isEmpty ? 0 : Double(reachable) / Double(devices.count),
            parameters: model.parameters,
            window: window,
            deadline: deadline,
            interval: interval,
            maxPushes: maxPushes
        )
    }

    /// What sets one device's chances: the probability a push leads to a held edition (run × download
    /// succeeds).
    struct DeviceClass: Hashable {
        var success: Double

        init(_ device: SimulatedDevice, _ parameters: FleetParameters) {
            success = parameters.runProbability(for: device) * (1 - parameters.failureProbability(for: device))
        }
    }

    private init(
        classes: [DeviceClass: Double],
        reachableShare: Double,
        parameters: FleetParameters,
        window: TimeInterval,
        deadline: TimeInterval,
        interval: TimeInterval,
        maxPushes: Int?
    ) {
        precondition(interval > 0, "pushes are some time apart")
        self.interval = interval
        self.maxPushes = maxPushes
        let window = max(0, window)
        self.window = window
        self.deadline = deadline
        let delay = { (seconds: TimeInterval) in
            Self.delayBelow(seconds, median: parameters.medianDelay, spread: parameters.delaySpread, cap: parameters.maxDelay)
        }
        let slots = Self.slots(window: window)
        let total = classes.values.reduce(0, +)
        var held = 0.0
        var pushes = 0.0
        // In a fixed order, so that the sums are the same on every run.
        for (deviceClass, weight) in classes.sorted(by: { $0.key.success < $1.key.success }) where weight > 0 {
            var classHeld = 0.0
            var classPushes = 0.0
            for slot in slots {
                let expected = Self.expectation(
                    success: deviceClass.success,
                    slot: slot,
                    deadline: deadline,
                    interval: interval,
                    maxPushes: maxPushes,
                    delayBelow: delay
                )
                classHeld += expected.held
                classPushes += expected.pushes
            }
            held += weight * classHeld / Double(slots.count)
            pushes += weight * classPushes / Double(slots.count)
        }
        heldShare = total > 0 ? held / total : 0
        pushesPerReachableDevice = total > 0 ? pushes / total : 0
        let unreachablePushes =
            slots.map { Double(Self.pushTimes(slot: $0, deadline: deadline, interval: interval, maxPushes: maxPushes).count) }.reduce(0, +)
            / Double(slots.count)
        pushesPerDevice = reachableShare * pushesPerReachableDevice + (1 - reachableShare) * unreachablePushes
        mostPushes = Self.pushTimes(slot: 0, deadline: deadline, interval: interval, maxPushes: maxPushes).count
    }

    /// Midpoints of ``slotSteps`` equal parts of the window; the start alone for no window.
    static func slots(window: TimeInterval) -> [TimeInterval] {
        guard window > 0 else { return [0] }
        return (0..<slotSteps).map { (Double($0) + 0.5) / Double(slotSteps) * window }
    }

    /// A device's push instants: from its slot, `interval` apart, before the deadline, at most `maxPushes`.
    static func pushTimes(slot: TimeInterval, deadline: TimeInterval, interval: TimeInterval, maxPushes: Int? = nil) -> [TimeInterval] {
        var times: [TimeInterval] = []
        var at = slot
        while at < deadline, times.count < (maxPushes ?? .max) {
            times.append(at)
            at += interval
        }
        return times
    }

    /// One device's expected held (0…1) and pushes when a push leads to a held edition with probability
    /// `success` after a run delay `d` with `P(d < t) = delayBelow(t)`.
    public static func expectation(
        success: Double,
        slot: TimeInterval,
        deadline: TimeInterval,
        interval: TimeInterval,
        maxPushes: Int? = nil,
        delayBelow: (TimeInterval) -> Double
    ) -> (held: Double, pushes: Double) {
        let times = pushTimes(slot: slot, deadline: deadline, interval: interval, maxPushes: maxPushes)
        var notHeld = 1.0
        var pushes = 0.0
        for (k, at) in times.enumerated() {
            // Push k goes out unless an earlier one already led to a held edition.
            var sent = 1.0
            for earlier in times[..<k] { sent *= 1 - success * delayBelow(at - earlier) }
            pushes += sent
            notHeld *= 1 - success * delayBelow(deadline - at)
        }
        return (1 - notHeld, pushes)
    }

    /// `P(delay < seconds)` for the model's delay: log-normal with this median and σ of its logarithm,
    /// capped at `cap` (``FleetModel``'s draw).
    public static func delayBelow(_ seconds: TimeInterval, median: TimeInterval, spread: Double, cap: TimeInterval) -> Double {
        guard seconds > 0 else { return 0 }
        if seconds > cap { return 1 }
        guard median > 0 else { return 1 }
        guard spread > 0 else { return min(median, cap) < seconds ? 1 : 0 }
        // Standard normal CDF of ln(t / median) / σ; the cap is an atom at `cap`, below `seconds` only past it.
        let z = log(seconds / median) / spread
        return 0.5 * erfc(-z / 2.0.squareRoot())
    }
}
