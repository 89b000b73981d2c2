import NIOCore
import NIOPosix
import Synchronization

/// A simulator's listening socket and its event loops, the same for both: bound with the socket options a load
/// test wants (a deep backlog, `SO_REUSEADDR`, `TCP_NODELAY`, 16 reads per wake-up), each accepted connection set up
/// by the simulator, and closed with every connection.
package final class SimulatorListener: Sendable {
    private struct Running {
        var group: MultiThreadedEventLoopGroup?
        var channel: (any Channel)?
        var port = 0
    }

    private let running = Mutex(Running())

    package init() {}

    /// Binds `host:port` (0 picks a free port) on `threads` event loops of its own.
    ///
    /// - Parameter setUp: sets up each accepted connection's pipeline, on its event loop.
    /// - Returns: the bound port.
    package func start(
        host: String,
        port: Int,
        threads: Int,
        setUp: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> Int {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in channel.eventLoop.makeCompletedFuture { try setUp(channel) } }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: host, port: port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        let bound = channel.localAddress?.port ?? port
        running.withLock { $0 = Running(group: group, channel: channel, port: bound) }
        return bound
    }

    /// The bound port, after ``start(host:port:threads:setUp:)``.
    package var port: Int { running.withLock { $0.port } }

    /// The listening channel while it runs.
    package var channel: (any Channel)? { running.withLock { $0.channel } }

    /// Closes the listener and every connection, and shuts down the event loops.
    package func shutdown() async throws {
        let (group, channel) = running.withLock { running in
            defer { running = Running() }
            return (running.group, running.channel)
        }
        try? await channel?.close()
        try await group?.shutdownGracefully()
    }
}
