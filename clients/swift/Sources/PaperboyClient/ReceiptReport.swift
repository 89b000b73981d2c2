import Foundation

/// What became of an edition on the device.
public enum ReceiptResult: String, Codable, Sendable {
    /// Downloaded now: this device gets no more waves for the edition.
    case newData
    /// The device had it already (an earlier wave, or the reader opened the app): no more waves either.
    case noData
    /// The download could not finish: the next wave tries again, and a later `newData` or `noData` replaces it.
    case failed

    /// Whether it stops the follow-up waves.
    public var isSuccess: Bool { self != .failed }
}

/// The body of `POST /v1/devices/{token}/receipts`: what became of an edition on this device, and what the app
/// knew when the push ran.
public struct ReceiptReport: Codable, Sendable, Equatable {
    public enum Network: String, Codable, Sendable {
        case wifi, cellular, none
    }

    public var editionID: String
    public var result: ReceiptResult
    /// Bytes downloaded this time (0 for `noData`).
    public var bytes: Int64
    /// How long the download took (not the time since the push).
    public var seconds: Double
    public var network: Network?
    public var charging: Bool?
    public var lowPowerMode: Bool?
    public var backgroundRefresh: Bool?
    /// The push's wave; nil for a download the reader started (no push).
    public var wave: Int?
    /// ``EditionWakeUp/secondsFromPush(arrival:now:)``; nil without a push.
    public var secondsFromPush: Double?

    enum CodingKeys: String, CodingKey {
        case editionID = "editionId"
        case result, bytes, seconds, network, charging, lowPowerMode, backgroundRefresh, wave, secondsFromPush
    }

    public init(
        editionID: String,
        result: ReceiptResult,
        bytes: Int64 = 0,
        seconds: Double = 0,
        network: Network? = nil,
        charging: Bool? = nil,
        lowPowerMode: Bool? = nil,
        backgroundRefresh: Bool? = nil,
        wave: Int? = nil,
        secondsFromPush: Double? = nil
    ) {
        self.editionID = editionID
        self.result = result
        self.bytes = max(0, bytes)
        self.seconds = seconds.isFinite ? max(0, seconds) : 0
        self.network = network
        self.charging = charging
        self.lowPowerMode = lowPowerMode
        self.backgroundRefresh = backgroundRefresh
        self.wave = wave
        self.secondsFromPush = secondsFromPush.map { min(max(0, $0), 86_400) }
    }

    /// The receipt for a push's edition at `now`, its wave and `secondsFromPush` from the push.
    public init(
        for wakeUp: EditionWakeUp,
        arrival: Date,
        now: Date,
        result: ReceiptResult,
        bytes: Int64 = 0,
        seconds: Double = 0,
        context: DeviceContext = DeviceContext()
    ) {
        self.init(
            editionID: wakeUp.editionID,
            result: result,
            bytes: bytes,
            seconds: seconds,
            network: context.network,
            charging: context.charging,
            lowPowerMode: context.lowPowerMode,
            backgroundRefresh: context.backgroundRefresh,
            wave: wakeUp.wave,
            secondsFromPush: wakeUp.secondsFromPush(arrival: arrival, now: now)
        )
    }
}

/// What the app knew when the push ran; nil where it did not. `DeviceContext.current()` reads it on iOS
/// (Platform/DeviceContext+UIKit.swift).
public struct DeviceContext: Sendable, Equatable {
    public var network: ReceiptReport.Network?
    public var charging: Bool?
    public var lowPowerMode: Bool?
    public var backgroundRefresh: Bool?

    public init(network: ReceiptReport.Network? = nil, charging: Bool? = nil, lowPowerMode: Bool? = nil, backgroundRefresh: Bool? = nil) {
        self.network = network
        self.charging = charging
        self.lowPowerMode = lowPowerMode
        self.backgroundRefresh = backgroundRefresh
    }
}

/// A receipt as Paperboy stored it (the answer to a receipt).
public struct StoredReceipt: Decodable, Sendable, Equatable {
    public var editionID: String
    public var result: ReceiptResult

    enum CodingKeys: String, CodingKey {
        case editionID = "editionId"
        case result
    }
}
