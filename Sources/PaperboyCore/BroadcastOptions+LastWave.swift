import Foundation

extension BroadcastOptions {
    /// Whether another background wave follows one that started at `start`, given the background waves sent
    /// so far (that one included) and the edition's deadline: the one rule for the wave policy, which starts
    /// waves, and the dispatcher, which sends the last follow-up differently to some devices.
    ///
    /// The next wave starts `waveInterval` after `start`; it must start before the deadline and, with a fixed
    /// ``maxPushesPerDevice``, fewer background waves than that may have been sent. With `auto` and the alert
    /// last resort, the alert takes the last slot before the deadline, so a background wave follows only when
    /// another slot follows it.
    public func allowsBackgroundWave(after backgroundWaves: Int, lastStart start: Date, deadline: Date) -> Bool {
        let next = start.addingTimeInterval(waveInterval)
        guard maxPushesPerDevice.allowsWave(after: backgroundWaves), next < deadline else { return false }
        if maxPushesPerDevice == .auto, alertLastResort {
            return next.addingTimeInterval(waveInterval) < deadline
        }
        return true
    }

    /// Whether background wave `wave` (starting at `start`) is the last background follow-up: wave 2 or later,
    /// with no background wave after it. Devices whose reader asked to be told when the edition is ready get
    /// an alert for their Notification Service Extension in its place (``DeviceRegistration/notifyWhenReady``).
    public func isLastBackgroundFollowUp(wave: Int, start: Date, deadline: Date) -> Bool {
        wave >= 2 && !allowsBackgroundWave(after: wave, lastStart: start, deadline: deadline)
    }
}
