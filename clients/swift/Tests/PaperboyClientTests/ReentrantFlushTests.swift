import Foundation
import PaperboyClient
import Testing

/// The courier is an actor, and an actor is reentrant at every `await`: a second flush (a foregrounding, background
/// time, a registration) that starts while the first one's request is out must not post the same receipt again.
@Suite("ReceiptCourier: one flush at a time")
struct ReentrantFlushTests {
    @Test("two flushes at once post a receipt once, oldest first, one at a time")
    func twoFlushesAtOnce() async throws {
        let newsroom = try Newsroom()
        let path = "/v1/devices/\(Newsroom.token.text)/receipts"
        newsroom.server.answer("POST", path, .init(status: 201, takes: 5))
        let receipt = ReceiptReport(editionID: Newsroom.editionID, result: .newData, bytes: 64, wave: 1, secondsFromPush: 2)
        _ = try newsroom.outbox.update { $0.outbox.add(receipt, at: Newsroom.t0) }
        let courier = newsroom.courier
        let (counts, _) = await newsroom.timer.run {
            async let first = try? courier.flush()
            async let second = try? courier.flush()
            async let foreground = courier.onForeground(seconds: 60, timer: newsroom.timer)
            let (a, b, c) = await (first, second, foreground)
            return [a?.count ?? -1, b?.count ?? -1, c.deliveries.count]
        }
        #expect(newsroom.server.calls.filter { $0.hasSuffix("/receipts") } == ["POST \(path)"])
        #expect(counts.sorted() == [0, 0, 1])
        #expect(try await courier.pending.isEmpty)
    }
}
