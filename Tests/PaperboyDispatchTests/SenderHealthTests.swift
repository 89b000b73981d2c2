import Foundation
import PaperboyCore
import Testing

@testable import PaperboyDispatch

/// A worker that cannot send for an app backs off and says so once per backoff; a broadcast fails only when no
/// worker sends for its app.
@Suite("Workers that cannot send")
struct SenderHealthTests {
    @Test("a failure leaves the app to the others for 15 s, then twice as long each time, at most a minute")
    func backoff() {
        var state = SenderHealth()
        var (problem, news) = state.failed(appID: 3, provider: .fcm, code: "load", reason: "no file", now: 100)
        #expect(news)
        #expect(problem.retryAt == 115)
        #expect(state.excludedApps(now: 110) == [3])
        #expect(state.excludedApps(now: 115) == [])
        (problem, news) = state.failed(appID: 3, provider: .fcm, code: "load", reason: "no file", now: 116)
        #expect(news && problem.retryAt == 146 && problem.since == 100)
        for now in [150.0, 300, 400, 500] { (problem, _) = state.failed(appID: 3, provider: .fcm, code: "load", reason: "no file", now: now) }
        #expect(problem.retryAt == 560, "at most a minute")
    }

    @Test("failures within a backoff (batches leased before the first failure was known) are not news")
    func onceperBackoff() {
        var state = SenderHealth()
        _ = state.failed(appID: 3, provider: .apns, code: "load", reason: "no key", now: 0)
        let (problem, news) = state.failed(appID: 3, provider: .apns, code: "load", reason: "no key", now: 1)
        #expect(!news)
        #expect(problem.failures == 1 && problem.retryAt == 15)
    }

    @Test("a batch sent ends the problem; sends are reported at most every 30 s")
    func recovery() {
        var state = SenderHealth()
        _ = state.failed(appID: 3, provider: .apns, code: "load", reason: "no key", now: 0)
        let ended = state.sent(appID: 3, provider: .apns)
        #expect(ended != nil)
        #expect(state.all.isEmpty)
        let again = state.sent(appID: 3, provider: .apns)
        #expect(again == nil)
        let reports = [(PushProvider.apns, 0.0), (.apns, 29), (.fcm, 29), (.apns, 30)].map {
            state.shouldReportSent(appID: 3, provider: $0.0, now: $0.1)
        }
        #expect(reports == [true, false, true, true])
    }

    @Test("per provider: an FCM problem leaves only the FCM part to others; the app's new batches are left only when every provider it has fails")
    func perProvider() {
        var state = SenderHealth()
        state.saw(appID: 3, providers: [.apns, .fcm])
        _ = state.failed(appID: 3, provider: .fcm, code: "load", reason: "no file", now: 0)
        #expect(state.excludedApps(now: 1) == [], "its APNs devices are still this worker's to send")
        #expect(state.excludedProviders(now: 1) == [AppProvider(appID: 3, provider: .fcm)])
        _ = state.failed(appID: 3, provider: .apns, code: "load", reason: "no key", now: 1)
        #expect(state.excludedApps(now: 2) == [3])
    }

    @Test("a problem not confirmed for a minute after its backoff is forgotten: a worker's readiness does not stay down for an app it no longer sees")
    func expiry() {
        var state = SenderHealth()
        _ = state.failed(appID: 3, provider: .apns, code: "load", reason: "no key", now: 0)
        #expect(state.expire(now: 74).isEmpty)
        #expect(state.expire(now: 75).map(\.appID) == [3])
        #expect(state.all.isEmpty)
    }
}
