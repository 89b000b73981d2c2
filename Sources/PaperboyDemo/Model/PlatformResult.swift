import Foundation

/// One platform's share of a strategy's run: iOS devices (APNs) or Android devices (FCM).
public struct PlatformResult: Sendable, Codable, Equatable {
    public enum Platform: String, Sendable, Codable {
        case ios, android

        public var title: String { self == .ios ? "iOS" : "Android" }
    }

    public var platform: Platform
    public var devices: Int
    /// Devices a push can reach the app on at all (iOS: the app was not swiped away; Android: all).
    public var reachable: Int
    /// Pushes the simulators accepted for these devices.
    public var pushes: Int
    public var pushesPerDevice: Double
    /// Devices with a `newData` or `noData` receipt before the deadline.
    public var held: Int
    /// ``held`` / ``reachable``.
    public var heldShare: Double
    /// Seconds from the broadcast's start to the first holding receipt, at the median and the 90th percentile
    /// of the devices that held the edition (nil when none did).
    public var timeToHoldMedian: TimeInterval?
    public var timeToHoldP90: TimeInterval?

    /// The figures of `platform`'s devices in `recording`.
    public init(_ platform: Platform, recording: DemoRecording, reachable: Int) {
        self.platform = platform
        let mine = { (device: Int) in recording.isAndroid(device) == (platform == .android) }
        devices = platform == .android ? recording.androidDevices : recording.devices - recording.androidDevices
        self.reachable = reachable
        pushes = recording.pushes.count { mine($0.device) }
        pushesPerDevice = devices > 0 ? Double(pushes) / Double(devices) : 0
        var firstHeld: [Int: TimeInterval] = [:]
        for receipt in recording.receipts where mine(receipt.device) && receipt.at < recording.deadline {
            guard receipt.result == "newData" || receipt.result == "noData" else { continue }
            firstHeld[receipt.device] = min(firstHeld[receipt.device] ?? .infinity, receipt.at)
        }
        held = firstHeld.count
        heldShare = reachable > 0 ? Double(held) / Double(reachable) : 0
        let times = firstHeld.values.sorted()
        func quantile(_ q: Double) -> TimeInterval? {
            times.isEmpty ? nil : times[min(times.count - 1, Int((Double(times.count - 1) * q).rounded()))]
        }
        timeToHoldMedian = quantile(0.5)
        timeToHoldP90 = quantile(0.9)
    }
}
