import Foundation

extension BroadcastOptions {
    /// How many background pushes one device may get for one edition, over all waves.
    ///
    /// JSON: `"auto"` or an integer. Broadcasts and schedules stored before `auto` existed hold an integer,
    /// which still reads as ``fixed(_:)``.
    public enum MaxPushes: Sendable, Hashable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
        /// Follow-up waves go on while the next one starts before the edition's deadline: the wave interval
        /// (at least 20 minutes, so at most 3 background pushes an hour) and the deadline are the limits.
        case auto
        /// At most this many background waves (1 to 10).
        case fixed(Int)

        public init(integerLiteral value: Int) {
            self = .fixed(value)
        }

        /// `auto` or a number, as the flag `--max-pushes` and the API take it; nil for anything else.
        public init?(_ text: String) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if trimmed.lowercased() == "auto" {
                self = .auto
            } else if let count = Int(trimmed) {
                self = .fixed(count)
            } else {
                return nil
            }
        }

        /// Whether a broadcast that has sent `backgroundWaves` background waves may send another (the
        /// deadline is checked apart, by ``WavePolicy``).
        public func allowsWave(after backgroundWaves: Int) -> Bool {
            switch self {
            case .auto: true
            case .fixed(let count): backgroundWaves < count
            }
        }

        /// The most background pushes for the edition a device may have had to be in background wave
        /// `wave`'s audience, exclusive: the fixed number, or with `auto` the wave's number (one push per
        /// wave before it, so a device that also got pushes from an earlier broadcast of the edition is
        /// not pushed more often than the waves so far).
        public func audienceCap(wave: Int) -> Int {
            switch self {
            case .auto: max(1, wave)
            case .fixed(let count): count
            }
        }

        public var description: String {
            switch self {
            case .auto: "auto"
            case .fixed(let count): "\(count)"
            }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let count = try? container.decode(Int.self) {
                self = .fixed(count)
                return
            }
            guard let text = try? container.decode(String.self), text == "auto" else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"auto\" or an integer from 1 to 10")
            }
            self = .auto
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .auto: try container.encode("auto")
            case .fixed(let count): try container.encode(count)
            }
        }
    }
}
