import Foundation

/// How a broadcast is run: its pace, cohorts, follow-up waves and last resort.
///
/// Stored with the broadcast (and with a schedule), so every worker runs it the same way. The JSON is
/// `{"window": 1800}` or `{"capacity": 2000}` for the pace, next to the other fields; absent fields take
/// the defaults.
public struct BroadcastOptions: Codable, Sendable, Equatable {
    /// Spread wave 1 over a window, or send at the content API's capacity.
    public var pace: StaggerPlan.Pace
    /// Cohorts the targets are split into (``DeviceToken/cohort(count:)``).
    public var cohorts: Int
    /// Time between the starts of consecutive waves.
    public var waveInterval: TimeInterval
    /// Background pushes one device may get for one edition, over all waves: `auto` (the default) sends
    /// follow-up waves for as long as the deadline allows, a fixed number stops after that many.
    public var maxPushesPerDevice: MaxPushes
    /// After the last background wave, one alert push (`mutable-content: 1`) to devices whose background
    /// pushes led to no receipt and whose user allowed alerts.
    public var alertLastResort: Bool
    /// The start moves later by up to this many seconds, off the round minute.
    public var jitter: TimeInterval
    /// How Android devices (through FCM) are asked to handle the edition's data messages.
    public var androidPriority: AndroidPriority
    /// A device that got background pushes for this many editions in a row and posted no receipt for any of
    /// them is dormant (a swiped-away app, an abandoned install): it gets wave 1's push and no follow-ups
    /// (neither background waves nor the alert last resort) until a receipt or a newer registration revives
    /// it. 0 spares nobody. Default 3: a live device on a bad morning answers the next one.
    public var dormantAfter: Int

    /// FCM's `android.priority` for a broadcast's data messages.
    public enum AndroidPriority: String, Codable, Sendable, CaseIterable {
        /// Delivered at once unless the device dozes, then at its next maintenance window: the default,
        /// because Android downgrades high-priority messages that lead to no visible notification.
        case normal
        /// May wake a dozing device briefly.
        case high
    }

    public static let defaultWindow: TimeInterval = 30 * 60
    public static let defaultCohorts = 16
    public static let defaultWaveInterval: TimeInterval = 30 * 60
    /// iOS runs a few background pushes per hour at most; waves closer than this only waste the budget.
    public static let minimumWaveInterval: TimeInterval = 20 * 60
    public static let defaultMaxPushesPerDevice = MaxPushes.auto
    public static let maxPushesPerDeviceRange: ClosedRange<Int> = 1...10
    /// The longest window and wave interval: an edition is worth a day at most.
    public static let longestWindow: TimeInterval = 24 * 3600
    /// Capacities a plan accepts, in wake-ups per second.
    public static let capacityRange: ClosedRange<Double> = 0.01...10_000_000
    /// Background pushes to one device in any hour, across all broadcasts: iOS throttles beyond this.
    public static let hourlyBudget = 3
    public static let defaultDormantAfter = 3
    public static let dormantAfterRange: ClosedRange<Int> = 0...100

    public init(
        pace: StaggerPlan.Pace = .window(BroadcastOptions.defaultWindow),
        cohorts: Int = BroadcastOptions.defaultCohorts,
        waveInterval: TimeInterval = BroadcastOptions.defaultWaveInterval,
        maxPushesPerDevice: MaxPushes = BroadcastOptions.defaultMaxPushesPerDevice,
        alertLastResort: Bool = false,
        jitter: TimeInterval = 90,
        androidPriority: AndroidPriority = .normal,
        dormantAfter: Int = BroadcastOptions.defaultDormantAfter
    ) {
        self.pace = pace
        self.cohorts = cohorts
        self.waveInterval = waveInterval
        self.maxPushesPerDevice = maxPushesPerDevice
        self.alertLastResort = alertLastResort
        self.jitter = jitter
        self.androidPriority = androidPriority
        self.dormantAfter = dormantAfter
    }

    /// Checks the options; the error names the field (as in the JSON and the API).
    ///
    /// - Parameter minimumWaveInterval: the shortest interval allowed; only the demo and tests, which
    ///   compress time, pass a smaller one.
    public func validate(minimumWaveInterval: TimeInterval = BroadcastOptions.minimumWaveInterval) throws(BroadcastOptionsError) {
        switch pace {
        case .window(let seconds):
            guard seconds.isFinite, seconds >= 1, seconds <= Self.longestWindow else {
                throw BroadcastOptionsError(field: "window", message: "the window must be between 1 second and 24 hours")
            }
        case .capacity(let perSecond):
            guard perSecond.isFinite, Self.capacityRange.contains(perSecond) else {
                throw BroadcastOptionsError(field: "capacity", message: "the capacity must be between 0.01 and 10,000,000 wake-ups per second")
            }
        }
        guard (1...1024).contains(cohorts) else {
            throw BroadcastOptionsError(field: "cohorts", message: "cohorts must be between 1 and 1024")
        }
        guard waveInterval.isFinite, waveInterval >= minimumWaveInterval, waveInterval <= Self.longestWindow else {
            throw BroadcastOptionsError(
                field: "waveInterval",
                message: "waves must be at least \(Int(minimumWaveInterval / 60)) minutes (iOS budgets background pushes) and at most 24 hours apart"
            )
        }
        if case .fixed(let count) = maxPushesPerDevice, !Self.maxPushesPerDeviceRange.contains(count) {
            throw BroadcastOptionsError(
                field: "maxPushesPerDevice",
                message:
                    "maxPushesPerDevice must be auto or between \(Self.maxPushesPerDeviceRange.lowerBound) and \(Self.maxPushesPerDeviceRange.upperBound)"
            )
        }
        guard jitter.isFinite, jitter >= 1, jitter <= 3600 else {
            throw BroadcastOptionsError(field: "jitter", message: "the jitter must be between 1 second and 1 hour")
        }
        guard Self.dormantAfterRange.contains(dormantAfter) else {
            throw BroadcastOptionsError(
                field: "dormantAfter",
                message: "dormantAfter must be between 0 (spare nobody) and \(Self.dormantAfterRange.upperBound) editions"
            )
        }
    }

    enum CodingKeys: String, CodingKey {
        case window, capacity, cohorts, waveInterval, maxPushesPerDevice, alertLastResort, jitter, androidPriority, dormantAfter
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let window = try container.decodeIfPresent(Double.self, forKey: .window)
        let capacity = try container.decodeIfPresent(Double.self, forKey: .capacity)
        switch (window, capacity) {
        case (let window?, nil): pace = .window(window)
        case (nil, let capacity?): pace = .capacity(perSecond: capacity)
        case (nil, nil): pace = .window(Self.defaultWindow)
        case (_?, _?):
            throw DecodingError.dataCorruptedError(forKey: .capacity, in: container, debugDescription: "give either window or capacity, not both")
        }
        cohorts = try container.decodeIfPresent(Int.self, forKey: .cohorts) ?? Self.defaultCohorts
        waveInterval = try container.decodeIfPresent(Double.self, forKey: .waveInterval) ?? Self.defaultWaveInterval
        maxPushesPerDevice = try container.decodeIfPresent(MaxPushes.self, forKey: .maxPushesPerDevice) ?? Self.defaultMaxPushesPerDevice
        alertLastResort = try container.decodeIfPresent(Bool.self, forKey: .alertLastResort) ?? false
        jitter = try container.decodeIfPresent(Double.self, forKey: .jitter) ?? 90
        androidPriority = try container.decodeIfPresent(AndroidPriority.self, forKey: .androidPriority) ?? .normal
        dormantAfter = try container.decodeIfPresent(Int.self, forKey: .dormantAfter) ?? Self.defaultDormantAfter
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch pace {
        case .window(let seconds): try container.encode(seconds, forKey: .window)
        case .capacity(let perSecond): try container.encode(perSecond, forKey: .capacity)
        }
        try container.encode(cohorts, forKey: .cohorts)
        try container.encode(waveInterval, forKey: .waveInterval)
        try container.encode(maxPushesPerDevice, forKey: .maxPushesPerDevice)
        try container.encode(alertLastResort, forKey: .alertLastResort)
        try container.encode(jitter, forKey: .jitter)
        try container.encode(androidPriority, forKey: .androidPriority)
        try container.encode(dormantAfter, forKey: .dormantAfter)
    }
}

/// Broadcast options that cannot be used, naming the field.
public struct BroadcastOptionsError: Error, Equatable, CustomStringConvertible {
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}
