import Foundation
import PaperboyClient
import Testing

/// The outbox's rules (its header lists them), without I/O: every instant and jitter given.
@Suite("ReceiptOutbox: the rules")
struct ReceiptOutboxTests {
    static let t0 = Date(timeIntervalSince1970: 1_795_377_909)
    static func receipt(_ edition: String, _ result: ReceiptResult) -> ReceiptReport {
        ReceiptReport(editionID: edition, result: result, bytes: result == .newData ? 1_000 : 0, seconds: 2, wave: 1, secondsFromPush: 5)
    }

    @Test("one receipt per edition: a success replaces a failed one, a failed one never a success, a repeat keeps the first")
    func onePerEdition() {
        var outbox = ReceiptOutbox()
        let result1 = outbox.add(Self.receipt("e1", .failed), at: Self.t0)
        #expect(result1)
        let result2 = outbox.add(Self.receipt("e1", .newData), at: Self.t0)
        #expect(result2)
        let result3 = outbox.add(Self.receipt("e1", .failed), at: Self.t0)
        #expect(!result3)
        let result4 = outbox.add(Self.receipt("e1", .noData), at: Self.t0)
        #expect(!result4)
        let result5 = outbox.due(at: Self.t0)
        #expect(result5 == [Self.receipt("e1", .newData)])
    }

    @Test("oldest first; a stored receipt (200 or 201) leaves; a 400 or a 404 naming the edition drops it")
    func deliveredAndDropped() {
        var outbox = ReceiptOutbox()
        outbox.add(Self.receipt("e1", .newData), at: Self.t0)
        outbox.add(Self.receipt("e2", .noData), at: Self.t0.addingTimeInterval(1))
        outbox.add(Self.receipt("e3", .noData), at: Self.t0.addingTimeInterval(2))
        let result6 = outbox.due(at: Self.t0).map(\.editionID)
        #expect(result6 == ["e1", "e2", "e3"])
        let result7 = outbox.record(.init(status: 201), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        #expect(result7 == .delivered)
        let result8 = outbox.record(.init(status: 404, field: "editionId"), for: Self.receipt("e2", .noData), at: Self.t0, jitter: 0)
        #expect(result8 == .dropped)
        let result9 = outbox.record(.init(status: 400, field: "wave"), for: Self.receipt("e3", .noData), at: Self.t0, jitter: 0)
        #expect(result9 == .dropped)
        #expect(outbox.entries.isEmpty)
    }

    @Test("429: nothing before Retry-After plus 1 to 2 s of jitter, for every receipt; then all")
    func rateLimited() {
        var outbox = ReceiptOutbox()
        outbox.add(Self.receipt("e1", .newData), at: Self.t0)
        outbox.add(Self.receipt("e2", .newData), at: Self.t0)
        let result10 = outbox.record(.init(status: 429, retryAfter: 10), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0.5)
        #expect(result10 == .kept)
        let due101 = outbox.due(at: Self.t0.addingTimeInterval(11.4))
        #expect(due101.isEmpty)
        let due102 = outbox.due(at: Self.t0.addingTimeInterval(11.5))
        #expect(due102.count == 2)
    }

    @Test("5xx or no answer: 30 s, doubling to at most an hour, stretched by up to half by the jitter; a delivery resets it")
    func backoff() {
        var outbox = ReceiptOutbox()
        let receipt = Self.receipt("e1", .newData)
        outbox.add(receipt, at: Self.t0)
        var now = Self.t0
        var waits: [TimeInterval] = []
        for attempt in 0..<9 {
            let answer: ReceiptOutbox.Answer? = attempt % 2 == 0 ? .init(status: 503) : nil
            let result11 = outbox.record(answer, for: receipt, at: now, jitter: 0)
            #expect(result11 == .kept)
            let until = outbox.pausedUntil!
            waits.append(until.timeIntervalSince(now))
            let due103 = outbox.due(at: until.addingTimeInterval(-0.001))
            #expect(due103.isEmpty)
            now = until
            let due104 = outbox.due(at: now)
            #expect(due104.count == 1)
        }
        #expect(waits == [30, 60, 120, 240, 480, 960, 1_920, 3_600, 3_600])
        let result12 = outbox.record(.init(status: 500), for: receipt, at: now, jitter: 1)
        #expect(result12 == .kept)
        #expect(outbox.pausedUntil!.timeIntervalSince(now) == 5_400)
        let result13 = outbox.record(.init(status: 200), for: receipt, at: now, jitter: 0)
        #expect(result13 == .delivered)
        #expect(outbox.failures == 0)
        #expect(outbox.pausedUntil == nil)
    }

    @Test("404 naming the token: everything waits for a registration, then goes at once")
    func awaitsRegistration() {
        var outbox = ReceiptOutbox()
        outbox.add(Self.receipt("e1", .newData), at: Self.t0)
        let result14 = outbox.record(.init(status: 404, field: "token"), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        #expect(result14 == .kept)
        let due105 = outbox.due(at: Self.t0.addingTimeInterval(86_400))
        #expect(due105.isEmpty)
        outbox.registered()
        let due106 = outbox.due(at: Self.t0.addingTimeInterval(1))
        #expect(due106.count == 1)
    }

    @Test("401: nothing more in this process; a new process (a new app version with its key) starts clean")
    func unauthorized() throws {
        var outbox = ReceiptOutbox()
        outbox.add(Self.receipt("e1", .newData), at: Self.t0)
        let result15 = outbox.record(.init(status: 401, field: "X-API-Key"), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        #expect(result15 == .kept)
        let due107 = outbox.due(at: Self.t0.addingTimeInterval(86_400))
        #expect(due107.isEmpty)
        let reloaded = try JSONDecoder().decode(ReceiptOutbox.self, from: JSONEncoder().encode(outbox))
        var next = reloaded
        #expect(next.due(at: Self.t0.addingTimeInterval(60)).count == 1)
    }

    @Test("a receipt older than 7 days is dropped; at most 64 are kept, the oldest dropped first")
    func bounds() {
        var outbox = ReceiptOutbox()
        for index in 0..<70 { outbox.add(Self.receipt("e\(index)", .noData), at: Self.t0.addingTimeInterval(Double(index) * 3_600)) }
        #expect(outbox.entries.count == 64)
        #expect(outbox.entries.first?.receipt.editionID == "e6")
        let later = Self.t0.addingTimeInterval(7 * 86_400 + 10 * 3_600 + 1)
        let remaining = outbox.due(at: later)
        #expect(remaining.first?.editionID == "e11")
    }

    @Test("on foregrounding the failure backoff is lifted; a 429's pause, a 401 and an awaited registration still hold")
    func foregroundDue() {
        var failing = ReceiptOutbox()
        failing.add(Self.receipt("e1", .newData), at: Self.t0)
        _ = failing.record(.init(status: 503), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        let held = failing.due(at: Self.t0.addingTimeInterval(1))
        #expect(held.isEmpty)
        let lifted = failing.dueOnForeground(at: Self.t0.addingTimeInterval(1))
        #expect(lifted.map(\.editionID) == ["e1"])
        var limited = failing
        _ = limited.record(.init(status: 429, retryAfter: 60), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        let rateLimited = limited.dueOnForeground(at: Self.t0.addingTimeInterval(30))
        #expect(rateLimited.isEmpty)
        let afterIt = limited.dueOnForeground(at: Self.t0.addingTimeInterval(62))
        #expect(afterIt.count == 1)
        var unregistered = failing
        _ = unregistered.record(.init(status: 404, field: "token"), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        let awaiting = unregistered.dueOnForeground(at: Self.t0.addingTimeInterval(1))
        #expect(awaiting.isEmpty)
        var refused = failing
        _ = refused.record(.init(status: 401), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        let unauthorized = refused.dueOnForeground(at: Self.t0.addingTimeInterval(1))
        #expect(unauthorized.isEmpty)
    }

    @Test("the open report goes only when no success receipt of the last day waits; failed ones and older ones hold nothing")
    func openReport() {
        var outbox = ReceiptOutbox()
        #expect(outbox.openReport(at: Self.t0) == .send)
        outbox.add(Self.receipt("e1", .failed), at: Self.t0)
        #expect(outbox.openReport(at: Self.t0) == .send)
        outbox.add(Self.receipt("e2", .noData), at: Self.t0)
        outbox.add(Self.receipt("e3", .newData), at: Self.t0.addingTimeInterval(-2 * 86_400))
        #expect(outbox.openReport(at: Self.t0) == .drop(waiting: 1))
        #expect(outbox.openReport(at: Self.t0.addingTimeInterval(86_401)) == .send)
    }

    @Test("the next attempt, for background time: now when due, the pause's end, none when empty or stopped by a 401 or a registration")
    func nextAttempt() {
        var outbox = ReceiptOutbox()
        #expect(outbox.nextAttempt(at: Self.t0) == nil)
        outbox.add(Self.receipt("e1", .newData), at: Self.t0)
        #expect(outbox.nextAttempt(at: Self.t0) == Self.t0)
        _ = outbox.record(.init(status: 500), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        #expect(outbox.nextAttempt(at: Self.t0) == Self.t0.addingTimeInterval(30))
        _ = outbox.record(.init(status: 404, field: "token"), for: Self.receipt("e1", .newData), at: Self.t0, jitter: 0)
        #expect(outbox.nextAttempt(at: Self.t0) == nil)
    }

    @Test("an outbox file written before the rate-limit pause was kept apart still reads")
    func olderFile() throws {
        let json = #"{"entries": [], "failures": 2, "awaitingRegistration": false, "pausedUntil": 800000000}"#
        let outbox = try JSONDecoder().decode(ReceiptOutbox.self, from: Data(json.utf8))
        #expect(outbox.failures == 2)
        #expect(outbox.rateLimitedUntil == nil)
    }

    @Test("the outbox file keeps receipts and the token across processes, and a courier without a token sends nothing")
    func file() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-outbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = ReceiptOutboxFile(url: directory.appendingPathComponent("receipts.json"))
        let api = PaperboyAPIClient(baseURL: URL(string: "http://127.0.0.1:1")!, apiKey: "pb_test")
        let courier = ReceiptCourier(api: api, file: file, now: { Self.t0 }, jitter: { 0 })
        let deliveries = try await courier.post(Self.receipt("e1", .newData))
        #expect(deliveries.isEmpty, "no registration yet: no token to post under")
        // Another process (the extension) reads the same file.
        let other = ReceiptOutboxFile(url: directory.appendingPathComponent("receipts.json"))
        #expect(try other.read().outbox.entries.map(\.receipt.editionID) == ["e1"])
        try other.update { $0.token = .apns(Data([1, 2, 3])) }
        // Now there is a token, but port 1 answers nothing: kept, and a pause of 30 s.
        let attempt = try await courier.flush()
        #expect(attempt.map(\.verdict) == [.kept])
        #expect(attempt.first?.error?.status == nil)
        #expect(try file.read().outbox.pausedUntil == Self.t0.addingTimeInterval(30))
        #expect(try await courier.flush().isEmpty, "paused")
    }
}
