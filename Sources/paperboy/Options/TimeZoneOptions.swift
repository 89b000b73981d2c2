import ArgumentParser
import Foundation

/// `--time-zone`: the IANA zone times are shown in, and clock times such as `--start 05:00` read in; this
/// machine's by default.
struct TimeZoneOptions: ParsableArguments {
    @Option(
        name: .customLong("time-zone"),
        help: ArgumentHelp("The IANA time zone times are shown and read in (default: this machine's).", valueName: "zone")
    )
    var identifier: String?

    /// The zone asked for, else this machine's.
    /// - Throws: `ValidationError` naming `--time-zone`.
    func zone() throws -> TimeZone {
        guard let identifier else { return .current }
        return try TimeZone(flag: identifier)
    }
}

extension TimeZone {
    /// The zone a `--time-zone` flag names.
    /// - Throws: `ValidationError` naming the flag when `identifier` is not an IANA zone.
    init(flag identifier: String) throws {
        guard let zone = TimeZone(identifier: identifier) else {
            throw ValidationError("--time-zone: '\(identifier)' is not an IANA time zone, e.g. Asia/Tokyo")
        }
        self = zone
    }
}
