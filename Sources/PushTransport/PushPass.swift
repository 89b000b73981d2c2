import Synchronization

/// One pass of a call over the wire (its first attempt, or one wave of retries): reports each delivery's result
/// the moment it is final, and holds back those the provider's policy sends again until every answer of the pass
/// is in, then hands them to the caller, who groups them in waves (``PushRetryWave``).
///
/// Answers arrive on the connections' event loops, in any order. A result is final when no retry follows it:
/// accepted; rejected and not retried (a permanent rejection, or retries used up); a refused credential that may
/// not be replaced again in this call; a fate unknown; not sent.
///
/// Once the caller is cancelled (``cancel()``) nothing is sent again: the deliveries held for a retry are reported
/// at once as not sent (`cancelled`), in place of the answer the retry would have replaced, and so is every later
/// answer that would have been retried. Answers that are final are reported as they are.
package final class PushPass<Outcome: PushOutcome>: Sendable {
    package typealias Report = @Sendable (_ index: Int, _ result: PushResult<Outcome>) -> Void

    /// What a pass hands back when every answer is in: the deliveries to send again.
    package struct Retries: Sendable {
        /// Rejections the policy retries after a delay (a backoff, a `Retry-After`): the delivery's index, the delay
        /// and the rejection.
        package var delayed: [(index: Int, delay: Duration, outcome: Outcome)] = []
        /// Rejections of the credential, with their results: sent again with a new credential if there is one, else
        /// their results stand.
        package var refused: [(index: Int, result: PushResult<Outcome>)] = []
        /// Whether the credential was refused at all, held back or not: the provider is told, so that the next call
        /// does not use it again.
        package var credentialRefused = false

        package var isEmpty: Bool { delayed.isEmpty && refused.isEmpty }
    }

    private struct State {
        var retries = Retries()
        /// Answers not yet in, plus one while ``cancel()`` reports what it took: the pass resumes its caller at zero.
        var remaining: Int
        var cancelled = false
        var continuation: UnsafeContinuation<Retries, Never>?
    }

    /// The deliveries' indices in the call, by position in the pass.
    private let indices: [Int]
    private let attempt: Int
    private let start: ContinuousClock.Instant
    /// Whether a refused credential may still be replaced in this call (once per call).
    private let replacesRefusedCredential: Bool
    private let policy: @Sendable (_ outcome: Outcome, _ elapsed: Duration) -> PushRetry
    private let report: Report
    private let state: Mutex<State>

    /// - Parameters:
    ///   - indices: the deliveries of the pass, as their indices in the call.
    ///   - attempt: the attempt these requests are (1 for the first).
    ///   - start: when the call began: results' latencies count from it.
    ///   - replacesRefusedCredential: whether a refused credential may still be replaced in this call.
    ///   - policy: whether an outcome that is not accepted, `elapsed` after `start`, is sent again (the provider's).
    ///   - report: where final results go.
    package init(
        indices: [Int],
        attempt: Int,
        start: ContinuousClock.Instant,
        replacesRefusedCredential: Bool,
        policy: @escaping @Sendable (_ outcome: Outcome, _ elapsed: Duration) -> PushRetry,
        report: @escaping Report
    ) {
        self.indices = indices
        self.attempt = attempt
        self.start = start
        self.replacesRefusedCredential = replacesRefusedCredential
        self.policy = policy
        self.report = report
        self.state = Mutex(State(remaining: indices.count))
    }

    /// Where the pass resumes its caller when every answer is in: at once for a pass of nothing. Call it before any
    /// answer can arrive.
    package func begin(_ continuation: UnsafeContinuation<Retries, Never>) {
        let resume = state.withLock { state -> Bool in
            guard state.remaining > 0 else { return true }
            state.continuation = continuation
            return false
        }
        if resume { continuation.resume(returning: Retries()) }
    }

    /// The answer to the delivery at `position` in the pass: reported now when it is final, else held for a retry
    /// (or reported as not sent, when the caller was cancelled).
    package func finish(_ position: Int, _ outcome: Outcome) {
        let now = ContinuousClock.now
        let index = indices[position]
        let result = PushResult(outcome: outcome, latency: now - start, attempts: attempt)
        // Nothing accepted is sent again: no retry decision, and no random number (a system call) for its jitter.
        let decision = outcome.isAccepted ? .no : policy(outcome, now - start)
        switch decision {
        case .no:
            report(index, result)
            release()
        case .after(let delay):
            hold(index, result, .delayed(delay))
        case .withFreshCredential:
            guard replacesRefusedCredential else {
                report(index, result)
                release()
                return
            }
            hold(index, result, .refused)
        }
    }

    /// The caller was cancelled: what waits for a retry is reported as not sent now, and so is every later answer
    /// that would be retried. Requests not yet written are the pool's to withdraw.
    package func cancel() {
        let taken = state.withLock { state -> Retries? in
            guard !state.cancelled, state.remaining > 0 else { return nil }
            state.cancelled = true
            // Held until reported, so that the caller does not return before these are.
            state.remaining += 1
            let taken = state.retries
            state.retries = Retries(credentialRefused: taken.credentialRefused)
            return taken
        }
        guard let taken else { return }
        let now = ContinuousClock.now
        for index in taken.delayed.map(\.index) + taken.refused.map(\.index) {
            report(index, cancelledResult(now: now))
        }
        release()
    }

    private enum Held {
        case delayed(Duration)
        case refused
    }

    /// Holds a delivery for its retry, or reports it as not sent when the caller was cancelled.
    private func hold(_ index: Int, _ result: PushResult<Outcome>, _ held: Held) {
        let cancelled = state.withLock { state -> Bool in
            if case .refused = held { state.retries.credentialRefused = true }
            guard !state.cancelled else { return true }
            switch held {
            case .delayed(let delay): state.retries.delayed.append((index, delay, result.outcome))
            case .refused: state.retries.refused.append((index, result))
            }
            return false
        }
        if cancelled { report(index, cancelledResult(now: ContinuousClock.now)) }
        release()
    }

    private func cancelledResult(now: ContinuousClock.Instant) -> PushResult<Outcome> {
        PushResult(
            outcome: .notSent(PushTransportError(.cancelled, "the sender was cancelled while it waited to be sent again")),
            latency: now - start,
            attempts: attempt
        )
    }

    /// One answer (or ``cancel()``'s reports) done: at the last, the caller resumes with what is to be sent again.
    private func release() {
        let done = state.withLock { state -> (UnsafeContinuation<Retries, Never>, Retries)? in
            state.remaining -= 1
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, state.retries)
        }
        if let (continuation, retries) = done { continuation.resume(returning: retries) }
    }
}

extension Duration {
    /// The whole nanoseconds, for metrics timers.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
