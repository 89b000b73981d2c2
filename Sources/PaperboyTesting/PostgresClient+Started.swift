import PostgresNIO
import Synchronization

extension PostgresClient {
    /// Runs the client as a child task of `group` and returns once its `run()` has begun. A query made before that
    /// would wait for it all the same, but PostgresNIO logs a warning for it ("`PostgresClient.run()` hasn't been
    /// called yet"), one line per query, which a healthy test run should not print (it printed some 200 before).
    public func start(in group: inout ThrowingTaskGroup<Void, any Error>) async {
        let (begun, begin) = AsyncStream<Never>.makeStream()
        group.addTask {
            // run() marks itself running before its first suspension: once this is seen, the mark is set.
            begin.finish()
            await self.run()
        }
        for await _ in begun {}
    }

    /// Runs the client in a task of its own and returns that task once its `run()` has begun (as ``start(in:)``):
    /// cancelling it stops the client, and ``Task/ended(within:)`` waits for that a bounded time.
    public func started() async -> Task<Void, Never> {
        let (begun, begin) = AsyncStream<Never>.makeStream()
        let running = Task {
            begin.finish()
            await self.run()
        }
        for await _ in begun {}
        return running
    }
}

extension Task where Success == Void, Failure == Never {
    /// Whether the task ended within `limit`; false when it is still running then (it is left running).
    public func ended(within limit: Duration) async -> Bool {
        let answered = Mutex(false)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answer: @Sendable (Bool) -> Void = { ended in
                if answered.withLock({ was in
                    defer { was = true }
                    return !was
                }) {
                    continuation.resume(returning: ended)
                }
            }
            Task {
                await self.value
                answer(true)
            }
            Task {
                try? await Task<Never, Never>.sleep(for: limit)
                answer(false)
            }
        }
    }
}
