import Foundation

/// What the app reports after a background push woke it for an edition.
public enum ReceiptResult: String, Codable, CaseIterable, Sendable {
    case newData
    case noData
    case failed
}

/// A device's report for an edition, as sent by the app.
public struct ReceiptReport: Codable, Equatable, Sendable {
    public var editionID: UUID
    public var result: ReceiptResult
    /// Bytes downloaded, 0 when not given.
    public var bytes: Int64
    /// Seconds the download took, 0 when not given.
    public var seconds: Double
    /// What the app knew when the push ran (its fields sit beside these in the JSON); empty when not given.
    public var context: WakeContext

    public init(editionID: UUID, result: ReceiptResult, bytes: Int64 = 0, seconds: Double = 0, context: WakeContext = WakeContext()) {
        self.editionID = editionID
        self.result = result
        self.bytes = bytes
        self.seconds = seconds
        self.context = context
    }

    enum CodingKeys: String, CodingKey {
        case editionID = "editionId"
        case result, bytes, seconds
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        editionID = try container.decode(UUID.self, forKey: .editionID)
        result = try container.decode(ReceiptResult.self, forKey: .result)
        bytes = try container.decodeIfPresent(Int64.self, forKey: .bytes) ?? 0
        seconds = try container.decodeIfPresent(Double.self, forKey: .seconds) ?? 0
        context = try WakeContext(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(editionID, forKey: .editionID)
        try container.encode(result, forKey: .result)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(seconds, forKey: .seconds)
        try context.encode(to: encoder)
    }
}

/// A receipt as stored: one per device and edition.
public struct Receipt: Codable, Equatable, Sendable {
    public var editionID: UUID
    public var result: ReceiptResult
    public var bytes: Int64
    public var seconds: Double
    public var receivedAt: Date
    /// The context stored with it (that of the receipt stored: a repeated report does not change it).
    public var context: WakeContext

    public init(editionID: UUID, result: ReceiptResult, bytes: Int64, seconds: Double, receivedAt: Date, context: WakeContext = WakeContext()) {
        self.editionID = editionID
        self.result = result
        self.bytes = bytes
        self.seconds = seconds
        self.receivedAt = receivedAt
        self.context = context
    }

    enum CodingKeys: String, CodingKey {
        case editionID = "editionId"
        case result, bytes, seconds, receivedAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        editionID = try container.decode(UUID.self, forKey: .editionID)
        result = try container.decode(ReceiptResult.self, forKey: .result)
        bytes = try container.decode(Int64.self, forKey: .bytes)
        seconds = try container.decode(Double.self, forKey: .seconds)
        receivedAt = try container.decode(Date.self, forKey: .receivedAt)
        context = try WakeContext(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(editionID, forKey: .editionID)
        try container.encode(result, forKey: .result)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(seconds, forKey: .seconds)
        try container.encode(receivedAt, forKey: .receivedAt)
        try context.encode(to: encoder)
    }
}
