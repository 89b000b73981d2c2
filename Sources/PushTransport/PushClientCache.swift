import Synchronization

/// Clients made on first use and shared, one per key (an endpoint and credentials), until shut down: the
/// bookkeeping of ``APNsClients`` and ``FCMClients``.
package final class PushClientCache<Key: Hashable & Sendable, Client: Sendable>: Sendable {
    private struct State {
        var clients: [Key: Client] = [:]
        var isShutdown = false
    }

    private let service: String
    private let state = Mutex(State())
    private let shutdownClient: @Sendable (Client) async -> Void

    /// - Parameters:
    ///   - service: the service's name in errors ("APNs", "FCM").
    ///   - shutdown: shuts one client down.
    package init(service: String, shutdown: @escaping @Sendable (Client) async -> Void) {
        self.service = service
        self.shutdownClient = shutdown
    }

    /// The client for `key`, made by `make` the first time.
    /// - Throws: a ``PushTransportError`` with code `shutdown` once the cache was shut down; what `make` throws.
    package func client(for key: Key, make: () throws -> Client) throws -> Client {
        try state.withLock { state in
            guard !state.isShutdown else { throw PushTransportError(.shutdown, "the \(service) client was shut down") }
            if let client = state.clients[key] { return client }
            let client = try make()
            state.clients[key] = client
            return client
        }
    }

    /// How many clients exist.
    package var count: Int { state.withLock { $0.clients.count } }

    /// Shuts every client down (their in-flight requests finish first) and makes no new ones.
    package func shutdown() async {
        let all = state.withLock { state in
            state.isShutdown = true
            defer { state.clients.removeAll() }
            return Array(state.clients.values)
        }
        await withDiscardingTaskGroup { group in
            for client in all { group.addTask { await self.shutdownClient(client) } }
        }
    }
}
