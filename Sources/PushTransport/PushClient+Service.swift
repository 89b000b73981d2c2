import ServiceLifecycle

extension PushClient: Service {
    /// Keeps the client until the service group shuts down gracefully (or cancels this task), then shuts it down:
    /// the requests in flight finish, waiting ones fail as not sent, the connections close.
    ///
    /// Nothing runs meanwhile: connections open on demand, so a client also works without `run()`.
    public func run() async {
        // Throws only when cancelled, which ends the client the same way.
        try? await gracefulShutdown()
        await shutdown()
    }
}

extension PushClients: Service {
    /// Keeps the clients until the service group shuts down gracefully (or cancels this task), then shuts them
    /// down: see ``shutdown()``.
    public func run() async {
        // Throws only when cancelled, which ends the clients the same way.
        try? await gracefulShutdown()
        await shutdown()
    }
}
