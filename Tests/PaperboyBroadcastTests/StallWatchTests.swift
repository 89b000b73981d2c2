import Foundation
import Testing

@testable import PaperboyBroadcast

/// The guard that turns a stepping loop stuck on one instant into an error naming where it stood.
@Suite("Stepping stall watch")
struct StallWatchTests {
    @Test("rounds that move the clock less than a second and send nothing are counted; a second of clock or a send resets them")
    func counts() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var watch = StallWatch(from: start)
        // A millisecond a round, as a loop that wakes at once for a batch it cannot move would creep.
        for round in 1..<StallWatch.rounds {
            try watch.check(now: start.addingTimeInterval(Double(round) * 0.000_1), sent: 0, state: "held")
        }
        let stalled = #expect(throws: SteppingStalled.self) {
            try watch.check(now: start.addingTimeInterval(0.3), sent: 0, state: "1 batches held, next wake -0.5 s from now")
        }
        #expect(stalled?.description.contains("1 batches held, next wake -0.5 s from now") == true)

        // A loop that sends, or whose clock moves, is never stalled.
        var sending = StallWatch(from: start)
        for round in 1...(3 * StallWatch.rounds) { try sending.check(now: start, sent: round, state: "") }
        var moving = StallWatch(from: start)
        for round in 1...(3 * StallWatch.rounds) { try moving.check(now: start.addingTimeInterval(Double(round) * 0.5), sent: 0, state: "") }
    }
}
