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

    /// Whether a push of background wave `wave` at `start` (the wave's start, or a device's send instant) is
    /// the last background follow-up: wave 2 or later, with no background push after it. Devices whose
    /// reader asked to be told when the edition is ready get an alert for their Notification Service
    /// Extension in its place (``DeviceRegistration/notifyWhenReady``).
    public func isLastBackgroundFollowUp(wave: Int, start: Date, deadline: Date) -> Bool {
        lastBackgroundFollowUp(wave: wave, deadline: deadline).map { start >= $0 } ?? false
    }

    /// From which send instant a device's push in background wave `wave` is its last background follow-up, or
    /// nil for wave 1.
    ///
    /// A device's next push comes at least `waveInterval` after this one (a later wave keeps each device's
    /// spacing: ``StaggerPlan/init(cohortCounts:rate:following:shift:)``), so a push at or after
    /// `deadline - waveInterval` has no background push after it (with `auto` and the alert last resort,
    /// whose slot is the last, `deadline - 2 × waveInterval`). The rule per device, not per wave: a device
    /// late in wave 1 has its last slot before the deadline a wave earlier than one early in it. With a fixed
    /// cap, every push of the capped wave is the last.
    public func lastBackgroundFollowUp(wave: Int, deadline: Date) -> Date? {
        guard wave >= 2 else { return nil }
        guard maxPushesPerDevice.allowsWave(after: wave) else { return .distantPast }
        let slotsAfter: Double = maxPushesPerDevice == .auto && alertLastResort ? 2 : 1
        return deadline.addingTimeInterval(-slotsAfter * waveInterval)
    }
}
