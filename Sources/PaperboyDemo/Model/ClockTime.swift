import Foundation

/// A local clock time, `HH:mm` in JSON and reports: when a group of readers usually first opens the app.
public struct ClockTime: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Minutes after local midnight, 0 ..< 1440.
    public var minutes: Int

    public init(hour: Int, minute: Int) {
        minutes = hour * 60 + minute
    }

    /// `05:35`; nil for anything else (hours 00 to 23, minutes 00 to 59).
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 }), let hour = Int(parts[0]), let minute = Int(parts[1]),
            (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        self.init(hour: hour, minute: minute)
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let time = ClockTime(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not a clock time HH:mm, like 05:35")
            )
        }
        self = time
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public var description: String { String(format: "%02d:%02d", minutes / 60, minutes % 60) }
}
