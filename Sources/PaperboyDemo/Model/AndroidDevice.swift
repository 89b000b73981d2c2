import Foundation

/// One Android device of the simulated fleet, as it is for the whole morning.
public struct AndroidDevice: Sendable, Equatable {
    /// How Doze holds the device's data messages at normal priority.
    public enum Doze: Sendable, Equatable {
        /// Not dozing (charging, or in use): messages are delivered at once.
        case awake
        /// Dozing: messages wait for the next maintenance window. Windows are at `phase + k × interval`
        /// seconds after the morning's start (k ≥ 0).
        case light(interval: TimeInterval, phase: TimeInterval)
        case deep(interval: TimeInterval, phase: TimeInterval)
    }

    /// The device's position in the fleet, from 0 (Android devices follow the iOS devices).
    public var index: Int
    public var onWiFi: Bool
    public var charging: Bool
    public var doze: Doze

    public init(index: Int, onWiFi: Bool, charging: Bool, doze: Doze) {
        self.index = index
        self.onWiFi = onWiFi
        self.charging = charging
        self.doze = doze
    }

    public var isDozing: Bool { doze != .awake }

    /// When Android hands a message that reached the device at `arrival` (seconds after the morning's
    /// start) to the app: at once when awake or at high priority, else at the next maintenance window.
    public func delivery(arrival: TimeInterval, highPriority: Bool) -> TimeInterval {
        if highPriority { return arrival }
        switch doze {
        case .awake:
            return arrival
        case .light(let interval, let phase), .deep(let interval, let phase):
            guard arrival > phase else { return phase }
            return phase + ((arrival - phase) / interval).rounded(.up) * interval
        }
    }
}
