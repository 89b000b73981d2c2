import ArgumentParser
import Foundation
import PaperboyCore

/// How a broadcast runs, as flags: pace, cohorts, waves, last resort. Shared by `broadcast` and
/// `schedules add`; absent flags take ``BroadcastOptions``' defaults.
struct BroadcastFlags: ParsableArguments {
    @Option(help: ArgumentHelp("Send wave 1 to every target within this window, e.g. 30m (default: 30m).", valueName: "duration"))
    var window: String?

    @Option(help: ArgumentHelp("Or: the content API's capacity in wake-ups per second, e.g. 2000/s; the window follows.", valueName: "rate"))
    var capacity: String?

    @Option(help: "How many cohorts the targets are split into (1 to 1024; default 16).")
    var cohorts: Int?

    @Option(
        name: .customLong("wave-interval"),
        help: ArgumentHelp("Time between waves to devices without a receipt (at least 20m; default 30m).", valueName: "duration")
    )
    var waveInterval: String?

    @Option(
        name: .customLong("max-pushes"),
        help: ArgumentHelp(
            "Background pushes per device for the edition, over all waves: auto (the default: follow-up waves to devices without a receipt, --wave-interval apart, as long as the next starts before the deadline) or a fixed 1 to 10.",
            valueName: "auto|n"
        )
    )
    var maxPushes: String?

    @Flag(
        name: .customLong("alert-last-resort"),
        help: "After the last wave, one alert (mutable-content) to devices that asked for edition alerts, allow alerts and reported nothing."
    )
    var alertLastResort = false

    @Option(help: ArgumentHelp("The start moves later by up to this much, off the round minute (default 90s).", valueName: "duration"))
    var jitter: String?

    @Option(
        name: .customLong("android-priority"),
        help: ArgumentHelp("FCM's android.priority for Android devices: normal (default) or high.", valueName: "priority")
    )
    var androidPriority: BroadcastOptions.AndroidPriority?

    @Option(
        name: .customLong("dormant-after"),
        help: ArgumentHelp(
            "A device that got pushes for this many editions in a row and posted no receipt is dormant: wave 1's push only, no follow-ups, until a receipt or a new registration revives it (0 to 100; 0 spares nobody; default 3).",
            valueName: "editions"
        )
    )
    var dormantAfter: Int?

    /// The options the flags ask for.
    /// - Throws: `ValidationError` naming the flag at fault.
    func options(minimumWaveInterval: TimeInterval = BroadcastOptions.minimumWaveInterval) throws -> BroadcastOptions {
        var options = BroadcastOptions()
        switch (window, capacity) {
        case (let window?, nil):
            do { options.pace = try StaggerPlan.Pace(window: window) } catch { throw ValidationError("--window: \(error)") }
        case (nil, let capacity?):
            do { options.pace = try StaggerPlan.Pace(capacity: capacity) } catch { throw ValidationError("--capacity: \(error)") }
        case (nil, nil):
            break
        case (.some, .some):
            throw ValidationError("--window and --capacity: give only one; each follows from the other and the device count")
        }
        if let cohorts { options.cohorts = cohorts }
        if let waveInterval {
            do { options.waveInterval = try StaggerPlan.seconds(parsing: waveInterval) } catch { throw ValidationError("--wave-interval: \(error)") }
        }
        if let maxPushes {
            guard let parsed = BroadcastOptions.MaxPushes(maxPushes) else {
                throw ValidationError("--max-pushes: auto or a number from 1 to 10, got '\(maxPushes)'")
            }
            options.maxPushesPerDevice = parsed
        }
        options.alertLastResort = alertLastResort
        if let jitter {
            do { options.jitter = try StaggerPlan.seconds(parsing: jitter, allowingZero: true) } catch { throw ValidationError("--jitter: \(error)") }
        }
        if let androidPriority { options.androidPriority = androidPriority }
        if let dormantAfter { options.dormantAfter = dormantAfter }
        do {
            try options.validate(minimumWaveInterval: minimumWaveInterval)
        } catch {
            throw ValidationError("\(Self.flag(forField: error.field)): \(error.message)")
        }
        return options
    }

    /// The flag of a ``BroadcastOptions`` field, for errors.
    static func flag(forField field: String) -> String {
        switch field {
        case "waveInterval": "--wave-interval"
        case "maxPushesPerDevice": "--max-pushes"
        case "alertLastResort": "--alert-last-resort"
        case "androidPriority": "--android-priority"
        case "dormantAfter": "--dormant-after"
        default: "--\(field)"
        }
    }
}

extension BroadcastOptions.AndroidPriority: ExpressibleByArgument {}
