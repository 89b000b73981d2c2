import Foundation

/// What the app knew when a push ran, sent with its receipt; every field is optional, and an app that sends
/// none of them (every app before this existed) is served as before.
///
/// It is what `paperboy insights wake-rates` measures wake rates by: which pushes iOS and Android actually
/// run is decided on the device, from the network, the battery and the user's settings, and only the app can
/// tell.
public struct WakeContext: Codable, Equatable, Sendable {
    /// The network the device was on when the app ran.
    public enum Network: String, Codable, CaseIterable, Sendable {
        case wifi
        case cellular
        case none

        /// The `receipts.network` code (migration 0010).
        public var storageCode: Int16 {
            switch self {
            case .wifi: 0
            case .cellular: 1
            case .none: 2
            }
        }

        public init?(storageCode: Int16) {
            guard let network = Self.allCases.first(where: { $0.storageCode == storageCode }) else { return nil }
            self = network
        }
    }

    /// The longest `secondsFromPush` accepted: a day. A push is worthless after its edition's deadline, so a
    /// longer one is a clock or unit mistake in the app.
    public static let maxSecondsFromPush = 86_400

    public var network: Network?
    public var charging: Bool?
    public var lowPowerMode: Bool?
    /// The user's Background App Refresh setting for the app (iOS); on Android, whether background work is
    /// allowed for it.
    public var backgroundRefresh: Bool?
    /// The wave of the push that ran: the `wave` key of the push's payload, echoed.
    public var wave: Int?
    /// Whole seconds from the push's arrival on the device to the run (sent as any number ≥ 0, stored rounded).
    public var secondsFromPush: Int?

    public init(
        network: Network? = nil,
        charging: Bool? = nil,
        lowPowerMode: Bool? = nil,
        backgroundRefresh: Bool? = nil,
        wave: Int? = nil,
        secondsFromPush: Int? = nil
    ) {
        self.network = network
        self.charging = charging
        self.lowPowerMode = lowPowerMode
        self.backgroundRefresh = backgroundRefresh
        self.wave = wave
        self.secondsFromPush = secondsFromPush
    }

    /// Whether the app sent nothing of it.
    public var isEmpty: Bool { self == WakeContext() }

    /// Refuses values the decoder cannot: a wave outside 1…32767 (the push's wave is 1 or more, stored as a
    /// smallint) and seconds outside 0…``maxSecondsFromPush``.
    /// - Throws: `StoreError` (invalid) naming `wave` or `secondsFromPush`.
    public func validate() throws(StoreError) {
        if let wave, !(1...Int(Int16.max)).contains(wave) {
            throw StoreError(code: .invalid, field: "wave", message: "wave must be the push's wave, a whole number from 1 to \(Int16.max)")
        }
        if let secondsFromPush, !(0...Self.maxSecondsFromPush).contains(secondsFromPush) {
            throw StoreError(
                code: .invalid,
                field: "secondsFromPush",
                message: "secondsFromPush must be from 0 to \(Self.maxSecondsFromPush) (a day): the seconds from the push's arrival to the run"
            )
        }
    }

    enum CodingKeys: String, CodingKey {
        case network, charging, lowPowerMode, backgroundRefresh, wave, secondsFromPush
    }

    /// Reads the fields beside the receipt's own (they share one JSON object). `secondsFromPush` may be any
    /// number: a fraction is rounded to whole seconds, and a negative one stays negative so that ``validate()``
    /// names it (-0.4 is not rounded to an acceptable 0).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        network = try container.decodeIfPresent(Network.self, forKey: .network)
        charging = try container.decodeIfPresent(Bool.self, forKey: .charging)
        lowPowerMode = try container.decodeIfPresent(Bool.self, forKey: .lowPowerMode)
        backgroundRefresh = try container.decodeIfPresent(Bool.self, forKey: .backgroundRefresh)
        // Read as a number and checked here: the decoder's own refusal of 1.5 as an Int names no field.
        if let number = try container.decodeIfPresent(Double.self, forKey: .wave) {
            guard number.rounded() == number, number.magnitude < 1e9 else {
                throw DecodingError.dataCorruptedError(forKey: .wave, in: container, debugDescription: "wave must be a whole number")
            }
            wave = Int(number)
        }
        if let seconds = try container.decodeIfPresent(Double.self, forKey: .secondsFromPush) {
            secondsFromPush = seconds < 0 ? -1 : Int(min(seconds, 1e9).rounded())
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(network, forKey: .network)
        try container.encodeIfPresent(charging, forKey: .charging)
        try container.encodeIfPresent(lowPowerMode, forKey: .lowPowerMode)
        try container.encodeIfPresent(backgroundRefresh, forKey: .backgroundRefresh)
        try container.encodeIfPresent(wave, forKey: .wave)
        try container.encodeIfPresent(secondsFromPush, forKey: .secondsFromPush)
    }
}
