import Foundation
import PaperboyBroadcast
import PaperboyDispatch
import PaperboyStore
import Testing

/// When an ended broadcast's receipt tallies are recounted: pure decisions, no database.
@Suite("Receipt tally recount policy")
struct ReceiptTallyPolicyTests {
    static let now = Date(timeIntervalSince1970: 1_795_464_000)
    static let policy = ReceiptTallyPolicy(settle: 120)
    static func ended(_ id: Int, finishedAgo: TimeInterval, recountedAgo: TimeInterval? = nil) -> ReceiptTallyPolicy.EndedBroadcast {
        ReceiptTallyPolicy.EndedBroadcast(
            id: UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", id))!,
            finishedAt: now.addingTimeInterval(-finishedAgo),
            recountedAt: recountedAgo.map { now.addingTimeInterval(-$0) }
        )
    }

    @Test("a broadcast is recounted once its deliveries have settled, not before, and not again")
    func settles() {
        #expect(Self.policy.due([Self.ended(1, finishedAgo: 60)], now: Self.now) == nil, "batches in flight may still record")
        let due = Self.policy.due([Self.ended(1, finishedAgo: 120)], now: Self.now)
        #expect(due?.id == Self.ended(1, finishedAgo: 0).id)
        #expect(due?.recountedBefore == Self.now, "a recount from the settled instant on is final")
        #expect(Self.policy.due([Self.ended(1, finishedAgo: 600, recountedAgo: 300)], now: Self.now) == nil, "recounted after it settled")
    }

    @Test("a recount before the end or before the deliveries settled (status --exact) does not count as the final one")
    func earlyRecount() {
        let early = Self.ended(1, finishedAgo: 600, recountedAgo: 590)
        #expect(Self.policy.due([early], now: Self.now)?.id == early.id)
        let beforeTheEnd = Self.ended(2, finishedAgo: 600, recountedAgo: 3600)
        #expect(Self.policy.due([beforeTheEnd], now: Self.now)?.id == beforeTheEnd.id)
    }

    @Test("the most recently ended broadcast first, one at a time")
    func newestFirst() {
        let ended = [
            Self.ended(1, finishedAgo: 86_400), Self.ended(2, finishedAgo: 200), Self.ended(3, finishedAgo: 3600), Self.ended(4, finishedAgo: 10),
        ]
        #expect(Self.policy.due(ended, now: Self.now)?.id == ended[1].id)
        #expect(Self.policy.due([], now: Self.now) == nil)
    }

    /// A batch a worker holds when the broadcast ends records its outcomes after that, retrying while the database
    /// fails for the dispatcher's record patience, its last attempt up to its database patience: a recount before
    /// then may miss deliveries and is not final.
    @Test("by default a broadcast is recounted only after a batch held at its end has recorded its outcomes or given up")
    func defaultSettlesAfterRecords() {
        let dispatcher = Dispatcher.Configuration(owner: "test")
        let recording = Double((dispatcher.recordPatience + dispatcher.databasePatience).components.seconds)
        let policy = ReceiptTallyPolicy()
        #expect(policy.due([Self.ended(1, finishedAgo: recording)], now: Self.now) == nil, "a record may still be retried")
        #expect(policy.due([Self.ended(1, finishedAgo: 360)], now: Self.now)?.id == Self.ended(1, finishedAgo: 0).id)
    }

    @Test("the settle time follows the workers' configuration: a lease, the record patience and its last attempt, scaled with the clock")
    func settleFromDispatcher() {
        #expect(ReceiptTallyPolicy().settle == 360, "30 s + 300 s + 30 s")
        var patient = Dispatcher.Configuration(owner: "test")
        patient.recordPatience = .seconds(900)
        patient.databasePatience = .seconds(60)
        #expect(ReceiptTallyPolicy(dispatcher: patient).settle == 30 + 900 + 60)
        #expect(ReceiptTallyPolicy(dispatcher: Dispatcher.Configuration(owner: "demo").scaled(by: 60)).settle == 360 * 60)
    }
}
