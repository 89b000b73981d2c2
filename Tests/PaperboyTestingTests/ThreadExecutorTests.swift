import Foundation
import Testing

@testable import PaperboyTesting

#if canImport(Glibc)
import Glibc
#endif

/// The test cluster's start (`initdb`, `pg_ctl start`, each waited for with a blocking `waitpid`) runs under a
/// ``ThreadExecutor``, so that it holds a thread of its own rather than a cooperative one. Timed, so run by
/// `.ci/run` one test at a time (see ``ChildProcessWaitingTests``).
@Suite("ThreadExecutor")
struct ThreadExecutorTests {
    @Test("async code that blocks for 2 s under each of more executors than cores leaves other tasks running every 50 ms")
    func blockingCodeLeavesTheCooperativeThreadsFree() async throws {
        let executors = (0..<max(4, ProcessInfo.processInfo.activeProcessorCount + 2)).map { _ in ThreadExecutor() }
        let clock = ContinuousClock()
        let start = clock.now
        let ticker = Task {
            var last = start
            var longestGap = Duration.zero
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                let now = clock.now
                longestGap = max(longestGap, now - last)
                last = now
            }
            return longestGap
        }
        await withTaskGroup(of: Void.self) { group in
            for executor in executors {
                group.addTask {
                    // A blocking call, as `waitpid` is, in async code run under the executor's preference.
                    await withTaskExecutorPreference(executor) { _ = sleep(2) }
                }
            }
        }
        ticker.cancel()
        let longestGap = await ticker.value
        #expect(clock.now - start >= .seconds(2), "the ticks were counted while the threads were blocked")
        #expect(longestGap < .milliseconds(1500), "the ticks stopped for \(longestGap)")
    }
}
