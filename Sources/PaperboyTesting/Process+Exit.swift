import Foundation

extension Process {
    /// How often ``exited()`` and ``exited(within:)`` look, suspended in between.
    static let exitPollInterval: Duration = .milliseconds(10)

    /// Returns once the process has exited, suspended meanwhile rather than holding one of the few
    /// cooperative threads as `waitUntilExit()` does.
    ///
    /// It looks at `isRunning` every 10 ms, as `waitUntilExit()` does from its run loop: for a process
    /// already started, Foundation's `terminationHandler` cannot be set safely (Foundation reads it on its
    /// own thread, without a lock, when the child exits), so ``CommandRun`` uses that and tests that start a
    /// `Process` themselves use this.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first; the process keeps running.
    public func exited() async throws {
        while isRunning { try await Task.sleep(for: Self.exitPollInterval) }
    }

    /// Waits at most `limit` for the process to exit, suspended meanwhile: for cleanup, where a child that
    /// does not exit must not hold the test forever.
    ///
    /// - Returns: whether it has exited; false when it was still running when the time ran out or the task
    ///   was cancelled.
    @discardableResult
    public func exited(within limit: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while isRunning {
            let left = deadline - clock.now
            guard left > .zero, (try? await Task.sleep(for: min(left, Self.exitPollInterval))) != nil else { return !isRunning }
        }
        return true
    }
}

/// Runs `body`, a call that blocks until a child process writes or exits (reading its pipe to the end, say),
/// on a thread started for it, and returns its result, suspended meanwhile: blocked there, it would hold one
/// of the cooperative threads (one per core) that every task in the test process shares.
public func onDedicatedThread<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
