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

    public init(editionID: UUID, result: ReceiptResult, bytes: Int64 = 0, seconds: Double = 0) {
        self.editionID = editionID
        self.result = result
        self.bytes = bytes
        self.seconds = seconds
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
    }
}

/// A receipt as stored: one per device and edition.
public struct Receipt: Codable, Equatable, Sendable {
    public var editionID: UUID
    public var result: ReceiptResult
    public var bytes: Int64
    public var seconds: Double
    public var receivedAt: Date

    public init(editionID: UUID, result: ReceiptResult, bytes: Int64, seconds: Double, receivedAt: Date) {
        self.editionID = editionID
        self.result = result
        self.bytes = bytes
        self.seconds = seconds
        self.receivedAt = receivedAt
    }

    enum CodingKeys: String, CodingKey {
        case editionID = "editionId"
        case result, bytes, seconds, receivedAt
    }
}
