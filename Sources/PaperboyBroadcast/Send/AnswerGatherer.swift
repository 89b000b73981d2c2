import PaperboyDispatch
import Synchronization

/// Hands a send's answers to the dispatcher as they come, a few at a time: the first answer after a quiet spell
/// starts a short window (``window``), and what came within it goes back as one group. A connection that stalls
/// therefore holds back only its own requests' answers, not those of the whole send: the answers already known
/// are recorded, and a drain or a lost lease leaves unwritten only what is truly unknown. Grouping keeps the
/// dispatcher's events to a few per send instead of one per device.
final class AnswerGatherer: Sendable {
    private struct State {
        var pending: [BatchSendMachine.Answer] = []
        var flushScheduled = false
        var noted = false
    }

    /// How long answers gather before they go back.
    let window: Duration
    private let report: @Sendable ([BatchSendMachine.Answer]) -> Void
    private let state = Mutex(State())

    init(window: Duration = .milliseconds(20), report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void) {
        self.window = window
        self.report = report
    }

    /// Whether any answer was added with `noting` set (an answer the caller logs once per send).
    var noted: Bool { state.withLock { $0.noted } }

    /// One answer, from any thread.
    func add(_ answer: BatchSendMachine.Answer, noting: Bool = false) {
        let schedule = state.withLock { state in
            state.pending.append(answer)
            state.noted = state.noted || noting
            guard !state.flushScheduled else { return false }
            state.flushScheduled = true
            return true
        }
        guard schedule else { return }
        let window = self.window
        Task {
            do {
                try await Task.sleep(for: window)
            } catch {
                // Never cancelled (an unstructured task nobody holds); were it, the answers would go back now.
            }
            self.flush()
        }
    }

    /// Answers known but not handed back yet, handed back now: called when the send returns, so that every answer is
    /// back before it does.
    func flush() {
        let answers = state.withLock { state in
            state.flushScheduled = false
            defer { state.pending = [] }
            return state.pending
        }
        if !answers.isEmpty { report(answers) }
    }
}
