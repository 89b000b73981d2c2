import Foundation
import PaperboyCore
import Testing

@testable import PaperboyBroadcast
@testable import PaperboyStore

/// A worker that cannot send for an app backs off and says so once per backoff; a broadcast fails only when no
/// worker sends for its app.
@Suite("Workers that cannot send")
struct SenderHealthTests {
    @Test("a failure leaves the app to the others for 15 s, then twice as long each time, at most a minute")
    func backoff() {
        var state = SenderHealth.State()
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
        var state = SenderHealth.State()
        _ = state.failed(appID: 3, provider: .apns, code: "load", reason: "no key", now: 0)
        let (problem, news) = state.failed(appID: 3, provider: .apns, code: "load", reason: "no key", now: 1)
        #expect(!news)
        #expect(problem.failures == 1 && problem.retryAt == 15)
    }

    @Test("a batch sent ends the problem; sends are reported at most every 30 s")
    func recovery() {
        var state = SenderHealth.State()
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

    static let now = Date(timeIntervalSince1970: 2_000_000)

    static func status(
        _ worker: String,
        problem: String? = nil,
        since: TimeInterval? = nil,
        lastSent: TimeInterval? = nil,
        updated: TimeInterval = 0
    )
        -> SenderStatus
    {
        SenderStatus(
            appID: 1,
            provider: .fcm,
            worker: worker,
            lastSentAt: lastSent.map { now.addingTimeInterval($0) },
            problem: problem,
            problemSince: since.map { now.addingTimeInterval($0) },
            updatedAt: now.addingTimeInterval(updated)
        )
    }

    @Test("one worker without its secret while another sends: the broadcast goes on")
    func anotherSends() {
        let broadcast = GivenBackBroadcast(
            broadcastID: UUID(),
            appID: 1,
            statuses: [Self.status("a", problem: "no file", since: -900), Self.status("b", lastSent: -20, updated: -20)]
        )
        #expect(UnsendablePolicy.failures([broadcast], now: Self.now, configuration: .init()).isEmpty)
    }

    @Test("no worker has sent for the app for --fail-after while problems are reported: the broadcast fails, naming each worker's reason")
    func nobodySends() {
        let id = UUID()
        let broadcast = GivenBackBroadcast(
            broadcastID: id,
            appID: 1,
            statuses: [
                Self.status("b", problem: "service account unreadable", since: -320, updated: -10),
                Self.status("a", problem: "no file", since: -400, lastSent: -3600, updated: -5),
            ]
        )
        let failures = UnsendablePolicy.failures([broadcast], now: Self.now, configuration: .init(failAfter: 300))
        #expect(failures.map(\.broadcastID) == [id])
        #expect(failures.first?.provider == .fcm)
        #expect(failures.first?.reason.contains("a: no file; b: service account unreadable") == true)
        #expect(UnsendablePolicy.failures([broadcast], now: Self.now.addingTimeInterval(-120), configuration: .init(failAfter: 300)).isEmpty)
    }

    @Test("a problem nobody reported for a while is a worker's that is gone: it fails nothing")
    func staleProblems() {
        let broadcast = GivenBackBroadcast(
            broadcastID: UUID(),
            appID: 1,
            statuses: [Self.status("gone", problem: "no file", since: -3600, updated: -600)]
        )
        #expect(UnsendablePolicy.failures([broadcast], now: Self.now, configuration: .init()).isEmpty)
    }
}
