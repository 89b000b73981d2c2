import Foundation
import Hummingbird
import PaperboyCore
import PaperboyStore

/// `/v1/insights` (admin): what the ledger says about the fleet. The same as `paperboy insights`.
struct InsightsRoutes {
    let wakeRates: WakeRateRepository
    /// The clock the window ends at.
    let now: @Sendable () -> Date

    init(wakeRates: WakeRateRepository, now: @escaping @Sendable () -> Date = { Date() }) {
        self.wakeRates = wakeRates
        self.now = now
    }

    func add(to group: RouterGroup<APIRequestContext>) {
        group.get("insights/wake-rates", use: showWakeRates)
    }

    /// `GET /v1/insights/wake-rates?publication=P&days=14` (`app` to pick the app when several have the
    /// publication; `sample=N|all`, the pushes to count before sampling devices): receipts per accepted
    /// background push by wave, platform, model family, OS, network, charging, Low Power Mode, Background App
    /// Refresh and local hour (``WakeRates``). 400 naming `days`, `app` or `sample` for a bad value; 404 naming
    /// `publication` or `app` for one that does not exist.
    @Sendable func showWakeRates(_ request: Request, context: APIRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        var days = 14
        if let text = query.get("days") {
            guard let value = Int(text), (1...WakeRateRepository.maxDays).contains(value) else {
                throw APIError.invalid("days", "days must be a whole number from 1 to \(WakeRateRepository.maxDays), like ?days=14")
            }
            days = value
        }
        var appID: Int?
        if let text = query.get("app") {
            guard let value = Int(text), value >= 1 else { throw APIError.invalid("app", "app must be an app id, a number") }
            appID = value
        }
        var publication: String?
        if let text = query.get("publication") {
            guard !text.isEmpty, !text.contains("\u{0}") else {
                throw APIError.invalid("publication", "publication must be a publication's id, like ?publication=morning")
            }
            publication = text
        }
        var samplePushes: Int? = WakeRates.defaultSamplePushes
        if let text = query.get("sample") {
            guard let target = WakeRates.SampleTarget(text) else {
                throw APIError.invalid("sample", "sample must be \(WakeRates.SampleTarget.rule)")
            }
            samplePushes = target.pushes
        }
        let rates = try await wakeRates.wakeRates(
            publication: publication,
            appID: appID,
            days: days,
            now: now(),
            samplePushes: samplePushes,
            logger: context.logger
        )
        return try BroadcastRoutes.json(rates, status: .ok)
    }
}
