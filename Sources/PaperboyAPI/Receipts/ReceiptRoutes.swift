import Foundation
import Hummingbird
import Metrics
import PaperboyCore
import PaperboyStore

/// `/v1/devices/{token}/receipts`: the app reports what it did after a background push woke it.
struct ReceiptRoutes {
    let receipts: ReceiptRepository
    let maxBodyBytes: Int

    /// The values an enum field may take, for the 400 that names them: made once, not on every receipt.
    private static let allowedValues = [
        "result": ReceiptResult.allCases.map(\.rawValue).joined(separator: ", "),
        "network": WakeContext.Network.allCases.map(\.rawValue).joined(separator: ", "),
    ]

    func add(to group: RouterGroup<APIRequestContext>) {
        group.post("devices/{token}/receipts", use: record)
    }

    /// `POST` (device key): records the device's receipt for an edition, idempotently per device and
    /// edition. The first receipt answers 201 with it. Any later one answers 200 with the receipt then
    /// stored, which is the first one, unchanged — unless the first was `failed` and the new one is
    /// `newData` or `noData` (a retry that succeeded): that one replaces it.
    ///
    /// The optional context (``WakeContext``: `network`, `charging`, `lowPowerMode`, `backgroundRefresh`,
    /// `wave`, `secondsFromPush`) is stored with the receipt and answered with it; a report without it is
    /// served as before.
    ///
    /// 404 naming `token` for a device the app does not have, `editionId` for an edition it does not
    /// have (another app's included); 400 naming the field for a bad body, with nothing stored.
    @Sendable func record(_ request: Request, context: APIRequestContext) async throws -> EditedResponse<ReceiptResponse> {
        let app = try context.requireApp()
        let candidates = try context.tokenCandidates()
        let report = try await request.decodeJSON(ReceiptReport.self, limit: maxBodyBytes, allowedValues: Self.allowedValues)
        guard report.bytes >= 0 else { throw APIError.invalid("bytes", "bytes must be 0 or more") }
        guard report.seconds >= 0 else { throw APIError.invalid("seconds", "seconds must be 0 or more") }
        let (receipt, created) = try await receipts.record(appID: app.id, candidates: candidates, report, logger: context.logger)
        // Counted by what the device reported, stored or not (a repeated report is still a wake-up that ran); by app,
        // so that the alert on receipts that stopped arriving names the app whose pushes go unanswered.
        Counter(label: "paperboy_receipts_total", dimensions: [("app", "\(app.id)"), ("result", report.result.rawValue)]).increment()
        return EditedResponse(status: created ? .created : .ok, response: ReceiptResponse(token: candidates[0].text, receipt))
    }
}

/// A stored receipt as the API shows it: the context's fields only when stored.
struct ReceiptResponse: ResponseEncodable {
    var token: String
    var editionId: String
    var result: ReceiptResult
    var bytes: Int64
    var seconds: Double
    var receivedAt: Date
    var network: WakeContext.Network?
    var charging: Bool?
    var lowPowerMode: Bool?
    var backgroundRefresh: Bool?
    var wave: Int?
    var secondsFromPush: Int?

    init(token: String, _ receipt: Receipt) {
        self.token = token
        editionId = receipt.editionID.uuidString.lowercased()
        result = receipt.result
        bytes = receipt.bytes
        seconds = receipt.seconds
        receivedAt = receipt.receivedAt
        network = receipt.context.network
        charging = receipt.context.charging
        lowPowerMode = receipt.context.lowPowerMode
        backgroundRefresh = receipt.context.backgroundRefresh
        wave = receipt.context.wave
        secondsFromPush = receipt.context.secondsFromPush
    }
}
