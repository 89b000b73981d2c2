import Foundation
import PaperboyClient
import Testing

/// Finding a (issue 50): a wake-up has about 30 seconds in all, and `timeoutInterval` is an idle timeout, not a total.
/// Every step of a wake runs in virtual time here: a server that answers after a minute takes a minute.
@Suite("WakeBudget: a wake-up's 30 seconds in all")
struct WakeBudgetTests {
    @Test("a first bundle that trickles for minutes is cut at the budget: the wake answers within 25 s and the background session gets every bundle")
    func firstBundleTrickles() async throws {
        let newsroom = try Newsroom()
        newsroom.server.answer("GET", Newsroom.path(.large, 0), .init(body: Data(Newsroom.content(.large, 0).utf8), takes: 300))
        let start = newsroom.timer.now
        let (result, at) = await newsroom.wake()
        #expect(at.timeIntervalSince(start) <= 25)
        #expect(result == .newData)
        #expect(newsroom.transfers.started.map(\.note.index) == [0, 1])
    }

    @Test("a manifest that takes a minute is given up within the budget, and its failed receipt is sent before the wake answers")
    func manifestTakesAMinute() async throws {
        let newsroom = try Newsroom()
        newsroom.server.answer("GET", "/v1/editions/\(Newsroom.editionID)", .init(body: newsroom.manifestJSON, takes: 60))
        let start = newsroom.timer.now
        let (result, at) = await newsroom.wake()
        #expect(at.timeIntervalSince(start) <= 25)
        #expect(result == .failed)
        #expect(newsroom.server.receipts.map(\.result) == [.failed])
        #expect(newsroom.transfers.started.isEmpty)
    }

    @Test("a receipt the server answers after two minutes is left in the outbox at the budget's end: the wake answers within 25 s")
    func receiptTakesTwoMinutes() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1])
        newsroom.server.answer("POST", "/v1/devices/\(Newsroom.token.text)/receipts", .init(status: 201, takes: 120))
        let start = newsroom.timer.now
        let (result, at) = await newsroom.wake(tier: .small)
        #expect(at.timeIntervalSince(start) <= 25)
        #expect(result == .newData)
        #expect(try newsroom.outbox.read().outbox.entries.map(\.receipt.result) == [.newData])
    }

    @Test("only this edition's receipt goes before the wake answers; the outbox's backlog waits for later")
    func backlogLater() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1])
        let earlier = ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"]
        try newsroom.outbox.update { contents in
            for id in earlier {
                contents.outbox.add(ReceiptReport(editionID: id, result: .noData, wave: 3), at: Newsroom.t0.addingTimeInterval(-3_600))
            }
        }
        let (result, _) = await newsroom.wake(tier: .small)
        #expect(result == .newData)
        #expect(newsroom.server.receipts.map(\.editionID) == [Newsroom.editionID])
        #expect(newsroom.backlog.requests == [newsroom.timer.now], "background time asked for the backlog")
        let later = try await newsroom.courier.flush()
        #expect(later.map(\.receipt.editionID) == earlier)
    }

    @Test("the extension's fetch ends within its seconds, however slowly a bundle comes, and says so in a failed receipt")
    func extensionWithinItsSeconds() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1, .large: 2])
        newsroom.server.answer("GET", Newsroom.path(.small, 0), .init(body: Data(Newsroom.content(.small, 0).utf8), takes: 300))
        let start = newsroom.timer.now
        let (ready, at) = await newsroom.fetchInExtension()
        #expect(at.timeIntervalSince(start) <= 30)
        #expect(!ready)
        #expect(newsroom.server.receipts.map(\.result) == [.failed])
    }

    @Test("a request that does not stop when cancelled still loses the race: the wake answers at the manifest's share")
    func ignoresCancellation() async throws {
        let newsroom = try Newsroom()
        newsroom.server.answer(
            "GET",
            "/v1/editions/\(Newsroom.editionID)",
            .init(body: newsroom.manifestJSON, takes: 60, ignoresCancellation: true)
        )
        let start = newsroom.timer.now
        let (result, at) = await newsroom.wake()
        #expect(at.timeIntervalSince(start) <= 25)
        #expect(result == .failed)
    }

    static let t0 = Date(timeIntervalSince1970: 1_795_377_909)

    @Test("the deadline is 25 s from the start, or the edition's when sooner; each step's share; nothing started that cannot be worth it")
    func allowances() {
        let budget = WakeBudget(start: Self.t0)
        #expect(budget.deadline == Self.t0.addingTimeInterval(25))
        #expect(budget.allowance(for: .manifest, at: Self.t0) == 8)
        #expect(budget.allowance(for: .download, at: Self.t0.addingTimeInterval(2)) == 18)
        #expect(budget.allowance(for: .receipt, at: Self.t0.addingTimeInterval(21)) == 4)
        #expect(budget.allowance(for: .download, at: Self.t0.addingTimeInterval(18)) == nil, "2 s is not worth a download")
        #expect(budget.allowance(for: .manifest, at: Self.t0.addingTimeInterval(19.5)) == nil, "the receipt's 5 s are kept back")
        #expect(budget.allowance(for: .receipt, at: Self.t0.addingTimeInterval(24.5)) == nil)
        #expect(budget.remaining(at: Self.t0.addingTimeInterval(40)) == 0)
        let late = WakeBudget(start: Self.t0, editionDeadline: Self.t0.addingTimeInterval(10))
        #expect(late.deadline == Self.t0.addingTimeInterval(10))
        let extensionBudget = WakeBudget.forExtension(.init(seconds: 30, megabytes: 24), start: Self.t0, editionDeadline: nil)
        #expect(extensionBudget.deadline == Self.t0.addingTimeInterval(27))
    }

    @Test("spend: the operation's value within its share; cut at it with Exhausted naming the step; skipped when nothing is left")
    func spend() async throws {
        let timer = VirtualTimer(now: Self.t0)
        let budget = WakeBudget(start: Self.t0)
        let (quick, _) = await timer.run { try? await budget.spend(.download, timer: timer) { 7 } }
        #expect(quick == 7)
        let (cut, at) = await timer.run { () -> (any Error)? in
            do {
                _ = try await budget.spend(.download, timer: timer) { try await timer.sleep(seconds: 600) }
                return nil
            } catch {
                return error
            }
        }
        #expect((cut as? WakeBudget.Exhausted)?.step == .download)
        #expect(at == Self.t0.addingTimeInterval(20))
        timer.pass(4.5)
        let skipped = await #expect(throws: WakeBudget.Exhausted.self) {
            try await budget.spend(.receipt, timer: timer) { 1 }
        }
        #expect(skipped?.step == .receipt)
    }

    @Test("a device context that never comes (the network's first path) holds the wake 2 s at most; the receipt goes without it")
    func contextNeverComes() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1], contextTakes: 3_600)
        let start = newsroom.timer.now
        let (result, at) = await newsroom.wake(tier: .small)
        #expect(result == .newData)
        #expect(at.timeIntervalSince(start) <= 2)
        #expect(newsroom.server.receipts.first?.network == nil)
        #expect(newsroom.server.receipts.first?.backgroundRefresh == true)
    }
}
