import Foundation

/// The Android half of the model: data messages at normal priority are delivered at once to an awake
/// device and at the next Doze maintenance window to a dozing one; at high priority at once. The app then
/// runs its WorkManager job (a network-constrained download) and posts the same receipt as on iOS.
extension FleetModel {
    /// Android device `index`'s fixed traits: Wi-Fi and charging with the iOS shares, Doze only when
    /// unplugged (``FleetParameters/androidDozeShare``), light or deep (``FleetParameters/androidDeepDozeShare``),
    /// with its own interval and the phase of its maintenance windows.
    public func androidDevice(_ index: Int) -> AndroidDevice {
        let onWiFi = uniform(index, .wifi, 0) < parameters.wifiShare
        let charging = uniform(index, .charging, 0) < parameters.chargingShare
        var doze = AndroidDevice.Doze.awake
        if !charging, uniform(index, .doze, 0) < parameters.androidDozeShare {
            if uniform(index, .deepDoze, 0) < parameters.androidDeepDozeShare {
                let low = max(1, parameters.androidDeepDozeMinInterval)
                let high = max(low, parameters.androidDeepDozeMaxInterval)
                let interval = low * exp(log(high / low) * uniform(index, .dozeInterval, 0))
                doze = .deep(interval: interval, phase: interval * uniform(index, .dozePhase, 0))
            } else {
                let interval = max(1, parameters.androidLightDozeInterval)
                doze = .light(interval: interval, phase: interval * uniform(index, .dozePhase, 0))
            }
        }
        return AndroidDevice(index: index, onWiFi: onWiFi, charging: charging, doze: doze)
    }

    /// What Android device `index` does with its `ordinal`-th message (0 = first), which reached it
    /// `arrival` seconds after the morning's start.
    ///
    /// Deterministic in (seed, index, ordinal, arrival, priority): the device's Doze schedule is fixed for the
    /// morning, so the same message at the same time waits the same under every strategy.
    ///
    /// - Parameters:
    ///   - highPriority: `android.priority: high`, which wakes a dozing device at once.
    ///   - expiry: seconds after the morning's start when the message's `ttl` runs out: a message still held
    ///     by Doze then is dropped (`expired`).
    /// - Returns: `.runs(after:download:)` with the time from arrival to the job's start (Doze's wait plus
    ///   the job's delay), or `.ignored(reason: "expired")`.
    public func androidReaction(device index: Int, arrival: TimeInterval, highPriority: Bool, expiry: TimeInterval, ordinal: Int) -> Reaction {
        let device = androidDevice(index)
        let delivered = device.delivery(arrival: arrival, highPriority: highPriority)
        guard delivered < expiry else { return .ignored(reason: "expired") }
        let job = logNormal(
            index,
            .jobDelay,
            ordinal,
            median: parameters.androidJobMedianDelay,
            spread: parameters.androidJobDelaySpread,
            cap: parameters.androidJobMaxDelay
        )
        let failure = device.onWiFi ? parameters.failureOnWiFi : parameters.failureOnCellular
        let failed = uniform(index, .jobFailure, ordinal) < failure
        return .runs(after: delivered - arrival + job, download: failed ? .failed : .newData)
    }
}
