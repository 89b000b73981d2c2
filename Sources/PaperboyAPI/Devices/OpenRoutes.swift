import Foundation
import Hummingbird
import Metrics
import PaperboyCore
import PaperboyStore

/// `/v1/devices/{token}/opens`: the app says it came to the foreground, now.
struct OpenRoutes {
    let habits: HabitRepository
    /// The API's clock: the wall clock, or the demo's faster one.
    let now: @Sendable () -> Date

    func add(to group: RouterGroup<APIRequestContext>) {
        group.post("devices/{token}/opens", use: record)
    }

    /// `POST` (device key, no body): 204. The report itself is not stored. The first open of the reader's day teaches
    /// the device's reading habit (``ReadingHabit``), which moves its cohort key so that its slot comes before its
    /// usual first open; the first open after an edition's publication counts for that edition's broadcast as held or
    /// not (``ReadyAtOpen``). 404 naming `token` for a device the app does not have.
    @Sendable func record(_ request: Request, context: APIRequestContext) async throws -> HTTPResponse.Status {
        let app = try context.requireApp()
        let candidates = try context.tokenCandidates()
        let outcome = try await habits.recordOpen(appID: app.id, candidates: candidates, now: now(), logger: context.logger)
        // By app, and by what the open found: the share of `held` among `held` and `waiting` is the fleet's ready at
        // open; `other` is every other report (no live edition, or not the first open since it was published).
        let found = outcome.held > 0 ? "held" : outcome.waiting > 0 ? "waiting" : "other"
        Counter(label: "paperboy_opens_total", dimensions: [("app", "\(app.id)"), ("edition", found)]).increment()
        return .noContent
    }
}
