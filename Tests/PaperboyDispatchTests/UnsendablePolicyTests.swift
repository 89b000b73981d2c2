import Foundation
import PaperboyCore
import Testing

@testable import PaperboyDispatch

/// A broadcast fails only when no worker can send it, counted in this broadcast.
@Suite("Broadcasts nobody can send")
struct UnsendablePolicyTests {
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
            statuses: [Self.status("a", problem: "no file", since: -900), Self.status("b", lastSent: -20, updated: -20)],
            givenBackSince: [.fcm: Self.now.addingTimeInterval(-900)]
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
            ],
            givenBackSince: [.fcm: Self.now.addingTimeInterval(-400)]
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
            statuses: [Self.status("gone", problem: "no file", since: -3600, updated: -600)],
            givenBackSince: [.fcm: Self.now.addingTimeInterval(-3600)]
        )
        #expect(UnsendablePolicy.failures([broadcast], now: Self.now, configuration: .init()).isEmpty)
    }

    @Test(
        "a keyless pod left from the morning gives back the evening's first batch while the healthy worker is paused: the silence is counted from that give-back, not from the morning's last send"
    )
    func silenceCountedInThisBroadcast() {
        // The healthy worker's last send was the morning's, 12 hours ago; the keyless worker has reported its
        // problem all day (its problem_since is the morning's). The evening broadcast's first batch was given back
        // 3 s ago.
        let broadcast = GivenBackBroadcast(
            broadcastID: UUID(),
            appID: 1,
            statuses: [
                Self.status("keyless", problem: "no file", since: -43_200, updated: -3),
                Self.status("healthy", lastSent: -43_000, updated: -43_000),
            ],
            givenBackSince: [.fcm: Self.now.addingTimeInterval(-3)]
        )
        #expect(UnsendablePolicy.failures([broadcast], now: Self.now, configuration: .init(failAfter: 300)).isEmpty)
        var later = broadcast
        later.statuses[0].updatedAt = Self.now.addingTimeInterval(290)
        #expect(
            UnsendablePolicy.failures([later], now: Self.now.addingTimeInterval(297), configuration: .init(failAfter: 300)).count == 1,
            "and it fails once nobody sent it for --fail-after, the keyless worker still reporting its problem"
        )
    }

    @Test("a provider with no batch given back for it fails nothing, whatever the workers report")
    func onlyGivenBackProviders() {
        let broadcast = GivenBackBroadcast(
            broadcastID: UUID(),
            appID: 1,
            statuses: [Self.status("a", problem: "no file", since: -900, updated: -1)],
            givenBackSince: [.apns: Self.now.addingTimeInterval(-900)]
        )
        #expect(UnsendablePolicy.failures([broadcast], now: Self.now, configuration: .init()).isEmpty)
    }
}
