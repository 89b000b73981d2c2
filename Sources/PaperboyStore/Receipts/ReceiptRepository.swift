import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Receipts in PostgreSQL: what each device reported for each edition, one row per device and edition.
public struct ReceiptRepository: Sendable {
    let client: PostgresClient
    /// The client receipts are recorded and read back with: `recordingClient`, else `client`.
    let recording: PostgresClient
    /// Receipts recorded at the same time share a statement (``ReceiptBatcher``): one per repository, so every
    /// request of a server that builds its repository once shares it.
    let batcher: ReceiptBatcher<ContinuousClock>

    /// - Parameter recordingClient: a client for recording receipts alone, made by
    ///   ``DatabaseConfiguration/makeReceiptClient(logger:)`` so that its statements are planned once per connection;
    ///   nil: `client` records them too (tests, tools).
    public init(client: PostgresClient, recordingClient: PostgresClient? = nil) {
        self.client = client
        self.recording = recordingClient ?? client
        self.batcher = ReceiptBatcher(client: recording, clock: ContinuousClock())
    }

    /// Records a device's receipt for an edition, idempotently per device and edition.
    ///
    /// The first receipt for a device and edition is stored (`created` is true). A later one leaves the
    /// stored receipt unchanged — the same report sent again, or a different result — with one exception:
    /// when the stored result is `failed` and the new one is `newData` or `noData` (a retry that
    /// succeeded), the new receipt replaces it. Either way the receipt now stored is returned.
    ///
    /// The receipt's ``WakeContext`` is stored with it, and replaced with it only when the receipt is.
    ///
    /// - Throws: `StoreError` (not found) naming `token` when the app has no device with this token, or
    ///   `editionId` when the app has no such edition; `invalid` naming `bytes` or `seconds` when negative, or
    ///   the context's field out of range (``WakeContext/validate()``). Nothing is stored then.
    /// - Parameter candidates: the tokens the path's text may be (``PushToken/candidates(_:)``).
    public func record(
        appID: Int,
        candidates: [PushToken],
        _ report: ReceiptReport,
        logger: Logger
    ) async throws -> (receipt: Receipt, created: Bool) {
        guard report.bytes >= 0 else { throw StoreError(code: .invalid, field: "bytes", message: "bytes must be 0 or more") }
        guard report.seconds >= 0, report.seconds.isFinite else {
            throw StoreError(code: .invalid, field: "seconds", message: "seconds must be 0 or more")
        }
        try report.context.validate()
        let row = try await batcher.record(RecordReceipt(appID: appID, candidates: candidates, report), logger: logger)
        guard let deviceID = row.0 else {
            throw StoreError(code: .notFound, field: "token", message: "no device with this token is registered")
        }
        guard row.1 else {
            throw StoreError(
                code: .notFound,
                field: "editionId",
                message: "there is no edition \(report.editionID.uuidString.lowercased())"
            )
        }
        if let result = row.2.flatMap(ReceiptResult.init(rawValue:)), let bytes = row.3, let seconds = row.4, let receivedAt = row.5 {
            let context = Self.context(
                network: row.7,
                charging: row.8,
                lowPowerMode: row.9,
                backgroundRefresh: row.10,
                wave: row.11,
                secondsFromPush: row.12
            )
            let receipt = Receipt(
                editionID: report.editionID,
                result: result,
                bytes: bytes,
                seconds: seconds,
                receivedAt: receivedAt,
                context: context
            )
            return (receipt, row.6 ?? false)
        }
        // Nothing inserted or updated: a receipt is stored already and is kept. Read it in a new snapshot,
        // which also sees one inserted concurrently.
        guard let stored = try await find(deviceID: deviceID, editionID: report.editionID, logger: logger) else {
            throw StoreError(code: .conflict, field: "editionId", message: "the receipt was not stored")
        }
        return (stored, false)
    }

    /// The receipts of an edition, counted by result; results with none are left out. From the tallies
    /// (``ReceiptTallies/counts(editionID:logger:)``): the receipts that arrived up to their watermark, a few
    /// seconds ago while workers run.
    public func counts(editionID: UUID, logger: Logger) async throws -> [ReceiptResult: Int] {
        try await ReceiptTallies(client: client).counts(editionID: editionID, logger: logger)
    }

    private func find(deviceID: Int64, editionID: UUID, logger: Logger) async throws -> Receipt? {
        for row in try await recording.executePrepared(FindReceipt(deviceID: deviceID, editionID: editionID), logger: logger) {
            guard let result = ReceiptResult(rawValue: row.0) else { continue }
            let context = Self.context(
                network: row.4,
                charging: row.5,
                lowPowerMode: row.6,
                backgroundRefresh: row.7,
                wave: row.8,
                secondsFromPush: row.9
            )
            return Receipt(editionID: editionID, result: result, bytes: row.1, seconds: row.2, receivedAt: row.3, context: context)
        }
        return nil
    }

    /// The context from its columns (migration 0010).
    static func context(
        network: Int16?,
        charging: Bool?,
        lowPowerMode: Bool?,
        backgroundRefresh: Bool?,
        wave: Int16?,
        secondsFromPush: Int32?
    ) -> WakeContext {
        WakeContext(
            network: network.flatMap(WakeContext.Network.init(storageCode:)),
            charging: charging,
            lowPowerMode: lowPowerMode,
            backgroundRefresh: backgroundRefresh,
            wave: wave.map(Int.init),
            secondsFromPush: secondsFromPush.map(Int.init)
        )
    }
}

extension ReceiptRepository {
    /// Records the receipt of the device with this APNs token: ``record(appID:candidates:_:logger:)``.
    public func record(appID: Int, token: DeviceToken, _ report: ReceiptReport, logger: Logger) async throws -> (receipt: Receipt, created: Bool) {
        try await record(appID: appID, candidates: [.apns(token)], report, logger: logger)
    }
}
