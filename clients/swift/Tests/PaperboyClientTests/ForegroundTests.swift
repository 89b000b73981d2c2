import Foundation
import PaperboyClient
import Testing

/// Finding e (issue 50): "ready at open" counts an edition as missing when its receipt has not arrived before the open
/// report. On foregrounding the outbox is drained first, its failure backoff lifted, and the open is reported only when
/// no success receipt still waits.
@Suite("Foregrounding: the outbox before the open report")
struct ForegroundTests {
    static let t0 = Date(timeIntervalSince1970: 1_795_377_909)
    static let edition = "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11"

    /// A receipt for the edition that met a 503 at t0: the outbox holds it back for 30 s, doubling to an hour.
    static func heldBack(_ newsroom: Newsroom, answer: ReceiptOutbox.Answer? = .init(status: 503)) throws {
        try newsroom.outbox.update { contents in
            let receipt = ReceiptReport(editionID: Self.edition, result: .newData, bytes: 64, wave: 1, secondsFromPush: 2)
            contents.outbox.add(receipt, at: Self.t0)
            for _ in 0..<8 { _ = contents.outbox.record(answer, for: receipt, at: Self.t0, jitter: 0) }
        }
    }

    @Test("a receipt held by the backoff (up to an hour) is sent before the open report, so the edition counts as there")
    func receiptBeforeOpen() async throws {
        let newsroom = try Newsroom()
        try Self.heldBack(newsroom)
        #expect(try newsroom.outbox.read().outbox.pausedUntil == Self.t0.addingTimeInterval(3_600))
        let foregrounding = await newsroom.courier.onForeground()
        let token = Newsroom.token.text
        #expect(newsroom.server.calls == ["POST /v1/devices/\(token)/receipts", "POST /v1/devices/\(token)/opens"])
        #expect(foregrounding.openReported)
        #expect(foregrounding.deliveries.map(\.verdict) == [.delivered])
    }

    @Test("a success receipt that still cannot go (a 429's pause) holds the open report back: dropped, never sent biased")
    func openDroppedWhileAReceiptWaits() async throws {
        let newsroom = try Newsroom()
        try Self.heldBack(newsroom, answer: .init(status: 429, retryAfter: 600))
        let foregrounding = await newsroom.courier.onForeground()
        #expect(newsroom.server.calls.isEmpty, "nothing before Retry-After, the open report neither")
        #expect(!foregrounding.openReported)
    }

    @Test("a receipt the server refuses again on foregrounding stays, and the open report is dropped")
    func failsAgain() async throws {
        let newsroom = try Newsroom()
        try Self.heldBack(newsroom)
        newsroom.server.answer("POST", "/v1/devices/\(Newsroom.token.text)/receipts", .init(status: 503))
        let foregrounding = await newsroom.courier.onForeground()
        #expect(newsroom.server.calls == ["POST /v1/devices/\(Newsroom.token.text)/receipts"])
        #expect(foregrounding.deliveries.map(\.verdict) == [.kept])
        #expect(!foregrounding.openReported)
    }

    @Test("nothing waiting: the open is reported at once")
    func nothingWaiting() async throws {
        let newsroom = try Newsroom()
        let foregrounding = await newsroom.courier.onForeground()
        #expect(newsroom.server.calls == ["POST /v1/devices/\(Newsroom.token.text)/opens"])
        #expect(foregrounding.openReported)
    }
}
