import Synchronization

/// A child's exit, fired once from a thread outside Swift concurrency (Foundation calls a `Process`'s
/// `terminationHandler` on a thread of its own) and awaited by one task, in either order.
final class ExitSignal: Sendable {
    private enum State {
        case pending
        case awaited(CheckedContinuation<Void, Never>)
        case fired
    }

    private let state = Mutex(State.pending)

    /// Resumes the waiting task, or lets the next ``wait()`` return at once; later calls do nothing.
    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state = .fired }
            if case .awaited(let continuation) = state { return continuation }
            return nil
        }
        waiter?.resume()
    }

    /// Returns once ``fire()`` has been called, suspended until then. One task waits.
    func wait() async {
        await withCheckedContinuation { continuation in
            let fired = state.withLock { state -> Bool in
                switch state {
                case .pending:
                    state = .awaited(continuation)
                    return false
                case .fired:
                    return true
                case .awaited:
                    preconditionFailure("one task waits for an ExitSignal")
                }
            }
            if fired { continuation.resume() }
        }
    }
}
