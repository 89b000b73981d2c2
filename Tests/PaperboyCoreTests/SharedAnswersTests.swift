import Foundation
import PaperboyCore
import Synchronization
import Testing

/// Costly answers shared and kept a while (the console's plan counts and wake rates, the readiness check).
@Suite("Answers shared by page views")
struct SharedAnswersTests {
    /// How many computations ran, from any task.
    final class Computations: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("fifty page views asking for one key at once share one computation, and all get its answer")
    func sharedWhileRunning() async throws {
        let cache = SharedAnswers<Int, Int>(timeToLive: 60, capacity: 10)
        let computations = Computations()
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await cache.value(1, now: Self.start) {
                        computations.add()
                        try await Task.sleep(for: .milliseconds(200))
                        return 42
                    }.value
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(answers == Array(repeating: 42, count: 50))
        #expect(computations.value == 1)
    }

    @Test("past its capacity the cache drops its oldest answer only: a viewer paging through many keys does not empty it")
    func evictsTheOldest() async throws {
        let cache = SharedAnswers<Int, Int>(timeToLive: 600, capacity: 3)
        let computations = Computations()
        @Sendable func compute(_ key: Int) -> @Sendable () async throws -> Int {
            {
                computations.add()
                return key * 10
            }
        }
        for key in 1...4 { _ = try await cache.value(key, now: Self.start.addingTimeInterval(Double(key)), compute: compute(key)) }
        #expect(await cache.count == 3)
        #expect(computations.value == 4)
        #expect(try await cache.value(2, now: Self.start.addingTimeInterval(5), compute: compute(2)).value == 20)
        #expect(computations.value == 4, "key 2 was kept")
        _ = try await cache.value(1, now: Self.start.addingTimeInterval(6), compute: compute(1))
        #expect(computations.value == 5, "key 1, the oldest, was dropped")
    }

    @Test("an answer is kept for its time to live, a failed computation not at all")
    func timeToLiveAndFailures() async throws {
        struct Failed: Error {}
        let cache = SharedAnswers<String, Int>(timeToLive: 60, capacity: 10)
        let computations = Computations()
        await #expect(throws: Failed.self) {
            try await cache.value("a", now: Self.start) {
                computations.add()
                throw Failed()
            }
        }
        let first = try await cache.value("a", now: Self.start) {
            computations.add()
            return 1
        }
        #expect(first.value == 1 && computations.value == 2)
        let kept = try await cache.value("a", now: Self.start.addingTimeInterval(59)) { 2 }
        #expect(kept.value == 1 && kept.at == Self.start)
        let renewed = try await cache.value("a", now: Self.start.addingTimeInterval(61)) { 3 }
        #expect(renewed.value == 3)
    }

    /// The most bodies that ran at once.
    final class Overlap: Sendable {
        private let state = Mutex((now: 0, most: 0))
        func enter() {
            state.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
        }
        func leave() { state.withLock { $0.now -= 1 } }
        var most: Int { state.withLock { $0.most } }
    }

    @Test(
        "costly work one at a time per key: 20 views of one publication asking for 20 cohort counts at once run one count at a time; another publication's runs beside them"
    )
    func oneAtATimePerKey() async throws {
        let gate = OneAtATime<Int>()
        let first = Overlap()
        let other = Overlap()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<22 {
                let publication = index < 20 ? 1 : 2
                let overlap = publication == 1 ? first : other
                group.addTask {
                    try await gate.run(publication) {
                        overlap.enter()
                        try await Task.sleep(for: .milliseconds(20))
                        overlap.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(first.most == 1, "one count of the publication at a time")
        #expect(other.most == 1)
        #expect(await gate.keys == 0, "nothing kept once idle")
    }
}
