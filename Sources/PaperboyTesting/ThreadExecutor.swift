import Foundation

/// A task executor that runs its jobs on one thread of its own, for async code that blocks the thread it
/// runs on: run under `withTaskExecutorPreference(_:operation:)`, such code holds this thread rather than one
/// of the cooperative threads (one per core) that every task in the test process shares.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []

    /// Starts the thread, which lives as long as the process: make one per purpose, not per use.
    init() {
        Thread { [self] in runJobs() }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func runJobs() -> Never {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let next = jobs.removeFirst()
            condition.unlock()
            next.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
