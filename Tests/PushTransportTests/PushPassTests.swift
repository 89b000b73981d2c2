import PaperboyCore
import Synchronization
import Testing

@testable import PushTransport

/// One pass's answers as they come, without sockets: which are reported at once, which are held for a retry, and
/// what a cancellation does to those.
@Suite("A pass's answers, reported per delivery")
struct PushPassTests {
    /// An outcome with the three kinds a pass tells apart: final, retried after a delay, refused credential.
    enum Outcome: PushOutcome {
        case accepted
        /// A permanent rejection.
        case gone
        /// A rejection retried after a delay (a 503).
        case busy
        /// The credential refused.
        case refused
        case fateUnknown(PushTransportError)
        case notSent(PushTransportError)

        var summary: PushOutcomeSummary {
            switch self {
            case .accepted: .accepted
            case .gone: .rejected(status: 410, reason: "Unregistered", verdict: .tokenDead(since: nil))
            case .busy: .rejected(status: 503, reason: "ServiceUnavailable", verdict: .dropped)
            case .refused: .rejected(status: 403, reason: "ExpiredProviderToken", verdict: .credentialsRejected)
            case .fateUnknown(let error): .fateUnknown(error)
            case .notSent(let error): .notSent(error)
            }
        }

        var isCancelled: Bool {
            if case .notSent(let error) = self { return error.code == .cancelled }
            return false
        }
    }

    /// The reports a pass made, in order.
    final class Reports: Sendable {
        private let reports = Mutex<[(index: Int, result: PushResult<Outcome>)]>([])

        func add(_ index: Int, _ result: PushResult<Outcome>) {
            reports.withLock { $0.append((index, result)) }
        }

        var all: [(index: Int, outcome: Outcome)] { reports.withLock { $0.map { ($0.index, $0.result.outcome) } } }
    }

    static let policy: @Sendable (Outcome, Duration) -> PushRetry = { outcome, _ in
        switch outcome {
        case .busy: .after(.seconds(2))
        case .refused: .withFreshCredential
        default: .no
        }
    }

    /// A pass over the call's deliveries `indices` that reports to `reports`.
    static func pass(_ indices: [Int], _ reports: Reports, replacesRefusedCredential: Bool = true) -> PushPass<Outcome> {
        PushPass(
            indices: indices,
            attempt: 1,
            start: .now,
            replacesRefusedCredential: replacesRefusedCredential,
            policy: policy,
            report: reports.add
        )
    }

    /// Runs `answer` with the pass begun, and returns what it handed back when the last answer was in.
    static func run(_ pass: PushPass<Outcome>, _ answer: @escaping @Sendable () -> Void) async -> PushPass<Outcome>.Retries {
        await withUnsafeContinuation { continuation in
            pass.begin(continuation)
            answer()
        }
    }

    @Test("final answers are reported as they come, in any order; retries are held and handed back at the end")
    func finalAtOnce() async {
        let reports = Reports()
        let pass = Self.pass([10, 11, 12, 13, 14], reports)
        let retries = await Self.run(pass) {
            pass.finish(3, .gone)
            #expect(reports.all.map(\.index) == [13], "reported when it came, before the others")
            pass.finish(1, .busy)
            pass.finish(0, .accepted)
            pass.finish(4, .refused)
            #expect(reports.all.map(\.index) == [13, 10], "the retried ones are held")
            pass.finish(2, .fateUnknown(PushTransportError(.timedOut, "no answer")))
        }
        #expect(reports.all.map(\.index) == [13, 10, 12])
        #expect(retries.delayed.map(\.index) == [11])
        #expect(retries.delayed.map(\.delay) == [.seconds(2)])
        #expect(retries.refused.map(\.index) == [14])
        #expect(retries.credentialRefused)
    }

    @Test("a refused credential already replaced once in the call is final")
    func refusedTwice() async {
        let reports = Reports()
        let pass = Self.pass([0], reports, replacesRefusedCredential: false)
        let retries = await Self.run(pass) { pass.finish(0, .refused) }
        #expect(reports.all.map(\.outcome) == [.refused])
        #expect(retries.isEmpty)
    }

    @Test(
        "cancelled: the held retries are reported not sent at once, and so are later retryable answers; final answers stay as they are"
    )
    func cancelled() async {
        let reports = Reports()
        let pass = Self.pass([0, 1, 2, 3, 4], reports)
        let retries = await Self.run(pass) {
            pass.finish(0, .busy)
            pass.finish(1, .refused)
            #expect(reports.all.isEmpty)
            pass.cancel()
            #expect(Set(reports.all.map(\.index)) == [0, 1], "the held ones, at the cancellation")
            #expect(reports.all.allSatisfy { $0.outcome.isCancelled })
            pass.finish(2, .busy)
            #expect(reports.all.last?.index == 2 && reports.all.last?.outcome.isCancelled == true, "not held for a retry")
            pass.finish(3, .accepted)
            pass.cancel()
            pass.finish(4, .gone)
        }
        #expect(reports.all.count == 5, "each delivery once: \(reports.all)")
        #expect(reports.all.suffix(2).map(\.outcome) == [.accepted, .gone])
        #expect(retries.isEmpty, "nothing is sent again")
        #expect(retries.credentialRefused, "the provider still learns that its credential was refused")
    }

    @Test("a pass resumes its caller only once every delivery is reported or handed back, once, whenever the cancellation comes")
    func resumesAfterReports() async {
        for _ in 0..<200 {
            let reports = Reports()
            let pass = Self.pass(Array(0..<20), reports)
            let retries = await Self.run(pass) {
                Task.detached { pass.cancel() }
                Task.detached { for position in 0..<10 { pass.finish(position, .busy) } }
                Task.detached { for position in 10..<20 { pass.finish(position, position.isMultiple(of: 2) ? .refused : .accepted) } }
            }
            let handedBack = retries.delayed.map(\.index) + retries.refused.map(\.index)
            #expect((reports.all.map(\.index) + handedBack).sorted() == Array(0..<20))
        }
    }
}
