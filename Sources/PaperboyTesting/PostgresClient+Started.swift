import PostgresNIO

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
}
