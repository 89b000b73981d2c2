import Synchronization

/// Gathers the answers of one batch from the connections' event loops and resumes the caller once, with
/// each answer and when it came, in the batch's order.
package final class PushBatchCollector<Outcome: Sendable>: Sendable {
    private struct State {
        var answers: [(Outcome, ContinuousClock.Instant)?]
        var remaining: Int
    }

    private let state: Mutex<State>
    private let continuation: UnsafeContinuation<[(Outcome, ContinuousClock.Instant)], Never>

    package init(count: Int, continuation: UnsafeContinuation<[(Outcome, ContinuousClock.Instant)], Never>) {
        self.state = Mutex(State(answers: Array(repeating: nil, count: count), remaining: count))
        self.continuation = continuation
        if count == 0 { continuation.resume(returning: []) }
    }

    package func finish(_ position: Int, _ outcome: Outcome) {
        let now = ContinuousClock.now
        let done = state.withLock { state -> [(Outcome, ContinuousClock.Instant)]? in
            state.answers[position] = (outcome, now)
            state.remaining -= 1
            return state.remaining == 0 ? state.answers.map { $0! } : nil
        }
        if let done { continuation.resume(returning: done) }
    }
}

extension Duration {
    /// The whole nanoseconds, for metrics timers.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
