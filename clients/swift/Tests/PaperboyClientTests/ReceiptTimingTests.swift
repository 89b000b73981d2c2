import Foundation
import PaperboyClient
import Testing

/// Finding d (issue 50): the receipt at the edges. No receipt after the deadline; `secondsFromPush` is how long the
/// system held the push (from `sentAt` to the run, openapi.yaml), so it is measured when the wake ran, never when a
/// background session's events were delivered; `seconds` (the download's time) ends when its bytes arrived.
@Suite("Receipts at the edges: the deadline, and what the times measure")
struct ReceiptTimingTests {
    @Test("a background transfer that fails at the deadline (its session's resource timeout) posts nothing, nor one after it")
    func noReceiptAfterTheDeadline() async throws {
        let newsroom = try Newsroom(bundles: [.large: 2])
        _ = await newsroom.wake(tier: .large)
        let transfer = try #require(newsroom.transfers.started.first)
        #expect(newsroom.downloader.transferFailed(transfer.note, at: newsroom.deadline) == nil)
        let second = try #require(newsroom.transfers.started.first)
        #expect(newsroom.downloader.transferFailed(second.note, at: newsroom.deadline.addingTimeInterval(3_600)) == nil)
    }

    @Test("an edition finished by its background session: secondsFromPush is the wake's, seconds end when the last bytes arrived")
    func measuredAtTheRun() async throws {
        let newsroom = try Newsroom(bundles: [.large: 2])
        let (result, _) = await newsroom.wake(tier: .large)  // arrives 2 s after sentAt
        #expect(result == .newData)
        let transfer = try #require(newsroom.transfers.started.first)
        let arrived = Newsroom.t0.addingTimeInterval(2 + 600)  // the bytes, 10 minutes later
        let file = try newsroom.transferFile(transfer, arrived: arrived)
        // iOS relaunches the app for the session's events three hours later.
        let receipt = try #require(newsroom.downloader.transferArrived(transfer.note, file: file, at: arrived.addingTimeInterval(3 * 3_600)))
        #expect(receipt.result == .newData)
        #expect(receipt.secondsFromPush == 2, "how long the system held the push")
        #expect(receipt.seconds == 600, "the download's own time")
    }

    @Test("an edition finished in the wake: secondsFromPush is the wake's, not the wake's plus its download")
    func foregroundMeasuredAtTheRun() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1])
        newsroom.server.answer("GET", Newsroom.path(.small, 0), .init(body: Data(Newsroom.content(.small, 0).utf8), takes: 10))
        let (result, _) = await newsroom.wake(tier: .small)
        #expect(result == .newData)
        #expect(newsroom.server.receipts.first?.secondsFromPush == 2)
        #expect(newsroom.server.receipts.first?.seconds == 10)
    }

    @Test("under a minute before the deadline, nothing is handed to a background session: the wake says failed while it may")
    func noHandoverAtTheDeadline() async throws {
        let newsroom = try Newsroom(bundles: [.large: 2])
        newsroom.timer.pass(8 * 3_600 - 2 - 40)  // the push came late: 40 s before the deadline
        newsroom.server.answer("GET", Newsroom.path(.large, 0), .init(status: 503))
        let (result, _) = await newsroom.wake(tier: .large)
        #expect(newsroom.transfers.started.isEmpty, "a session would run past the deadline")
        #expect(result == .failed)
        #expect(newsroom.server.receipts.map(\.result) == [.failed])
    }
}
