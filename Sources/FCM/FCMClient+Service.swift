import ServiceLifecycle

extension FCMClient: Service {
    /// Keeps the client until the service group shuts down gracefully (or cancels this task), then shuts it
    /// down: the requests in flight finish, waiting ones fail as not sent, the connections close.
    public func run() async {
        // Throws only when cancelled, which ends the client the same way.
        try? await gracefulShutdown()
        await shutdown()
    }
}
