import Testing

@testable import PaperboyStore

/// ``ReceiptGrouping``: when the receipts waiting go to the database. Pure: instants are offsets from one origin.
@Suite("Receipts grouped: when a batch starts")
struct ReceiptGroupingTests {
    typealias Instant = ContinuousClock.Instant
    let origin = ContinuousClock.now
    let grouping = ReceiptGrouping(lanes: 2, maxBatch: 64, linger: .milliseconds(5))

    func at(_ milliseconds: Double) -> Instant { origin.advanced(by: .microseconds(Int64((milliseconds * 1000).rounded()))) }

    @Test("a quiet server adds no wait: the first receipt, and one after a pause of the linger or more, goes at once")
    func quiet() {
        #expect(grouping.next(waiting: 1, running: 0, lastStart: nil as Instant?, now: at(0)) == .start(1))
        #expect(grouping.next(waiting: 3, running: 0, lastStart: at(0), now: at(5)) == .start(3))
        #expect(grouping.next(waiting: 1, running: 0, lastStart: at(0), now: at(900)) == .start(1))
    }

    @Test("receipts that come within the linger of a start wait for its end, then go together")
    func linger() {
        #expect(grouping.next(waiting: 1, running: 0, lastStart: at(0), now: at(1)) == .wait(until: at(5)))
        #expect(grouping.next(waiting: 40, running: 0, lastStart: at(0), now: at(4.9)) == .wait(until: at(5)))
        // A statement running: a batch that is not full waits for it, whatever the time.
        #expect(grouping.next(waiting: 40, running: 1, lastStart: at(0), now: at(30)) == .idle)
        #expect(grouping.next(waiting: 0, running: 0, lastStart: at(0), now: at(30)) == .idle)
    }

    @Test("a full batch goes at once, on the second connection too; none goes when both are busy")
    func full() {
        #expect(grouping.next(waiting: 64, running: 0, lastStart: at(0), now: at(1)) == .start(64))
        #expect(grouping.next(waiting: 150, running: 1, lastStart: at(0), now: at(1)) == .start(64))
        #expect(grouping.next(waiting: 150, running: 2, lastStart: at(0), now: at(1)) == .idle)
        let noLinger = ReceiptGrouping(lanes: 1, maxBatch: 64, linger: .zero)
        #expect(noLinger.next(waiting: 7, running: 0, lastStart: at(0), now: at(0)) == .start(7))
    }

    /// Receipts arriving evenly at `rate` a second for `seconds`, each statement taking 0.2 ms + 0.024 ms a receipt
    /// (and `extra`), run through the policy as the batcher runs it: the batch sizes, and each receipt's wait before its
    /// statement started.
    func simulate(rate: Double, seconds: Double, extra: Double = 0) -> (batches: [Int], longestWait: Double) {
        let interval = 1000 / rate
        var arrivals = stride(from: 0.0, to: seconds * 1000, by: interval).map { $0 }
        var waiting: [Double] = []
        var ends: [Double] = []
        var lastStart: Instant?
        var wake: Double?
        var batches: [Int] = []
        var longestWait = 0.0
        var now = 0.0
        while !arrivals.isEmpty || !waiting.isEmpty || !ends.isEmpty {
            // The next event: an arrival, a statement's end or the wake-up.
            now = [arrivals.first, ends.min(), wake].compactMap { $0 }.min()!
            while let first = arrivals.first, first <= now {
                waiting.append(first)
                arrivals.removeFirst()
            }
            ends.removeAll { $0 <= now }
            if let due = wake, due <= now { wake = nil }
            decide: while true {
                switch grouping.next(waiting: waiting.count, running: ends.count, lastStart: lastStart, now: at(now)) {
                case .idle: break decide
                case .wait(let until):
                    wake = (until - origin) / .milliseconds(1)
                    break decide
                case .start(let count):
                    let batch = waiting.prefix(count)
                    longestWait = max(longestWait, batch.map { now - $0 }.max()!)
                    waiting.removeFirst(count)
                    batches.append(count)
                    lastStart = at(now)
                    ends.append(now + 0.2 + 0.024 * Double(count) + extra)
                }
            }
        }
        return (batches, longestWait)
    }

    @Test("receipts coming steadily go in batches of about rate × linger, each waiting at most the linger and one statement")
    func steady() {
        for (rate, expected) in [(2400.0, 12.0), (5000.0, 25.0)] {
            let (batches, longestWait) = simulate(rate: rate, seconds: 2)
            let mean = Double(batches.reduce(0, +)) / Double(batches.count)
            #expect(batches.reduce(0, +) == Int(rate * 2))
            #expect(abs(mean - expected) <= 1.5, "\(rate)/s: batches of \(mean) on average, \(batches.count) statements")
            #expect(longestWait <= 5 + 0.2 + 0.024 * 64 + 0.01, "\(rate)/s: a receipt waited \(longestWait) ms")
        }
        // Slow statements (20 ms, a busy database): the batches grow to what came meanwhile, full ones on the second
        // connection, and none is lost.
        let (batches, _) = simulate(rate: 5000, seconds: 1, extra: 20)
        #expect(batches.reduce(0, +) == 5000)
        #expect(batches.max() == 64)
        // A receipt every 10 ms (less than one a linger): each goes alone, at once.
        let (sparse, sparseWait) = simulate(rate: 100, seconds: 1)
        #expect(sparse.allSatisfy { $0 == 1 })
        #expect(sparseWait == 0)
    }
}
