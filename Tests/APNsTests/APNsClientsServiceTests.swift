import APNs
import APNsSimulator
import Crypto
import Logging
import MetricsTestKit
import PushTransport
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// The clients as a `Service`: what graceful shutdown does to them, and why they are listed before the
/// services that send with them.
@Suite("APNs clients in a service group", .serialized)
struct APNsClientsServiceTests {
    static func withSimulator(
        faults: APNsSimulator.Faults = .init(),
        onAccept: (@Sendable (APNsSimulator.Delivery) -> Void)? = nil,
        _ body: (APNsEndpoint) async throws -> Void
    ) async throws {
        let validation = APNsRequestValidator.Configuration(
            teamID: "TEAM123456",
            keys: ["KEY1234567": APNsClientTests.privateKey.publicKey],
            topics: [APNsClientTests.topic]
        )
        var configuration = APNsSimulator.Configuration(validation: validation, faults: faults)
        configuration.onAccept = onAccept
        let simulator = APNsSimulator(configuration: configuration)
        let port = try await simulator.start()
        do {
            try await body(try APNsEndpoint("http://127.0.0.1:\(port)"))
        } catch {
            try await simulator.shutdown()
            throw error
        }
        try await simulator.shutdown()
    }

    static func send(_ client: APNsClient, _ index: Int) async -> APNsOutcome {
        await client.send(APNsClientTests.notification, to: APNsClientTests.token(index), topic: APNsClientTests.topic)
    }

    @Test("on graceful shutdown the clients let the request in flight finish, close their connections and take no more work")
    func gracefulShutdown() async throws {
        var faults = APNsSimulator.Faults()
        faults.latency = .milliseconds(600)
        // The simulator takes a request at once and answers it after the latency.
        let (taken, tookRequest) = AsyncStream.makeStream(of: String.self)
        let onAccept: @Sendable (APNsSimulator.Delivery) -> Void = { tookRequest.yield($0.token) }
        try await Self.withSimulator(faults: faults, onAccept: onAccept) { endpoint in
            let metrics = TestMetrics()
            let clients = APNsClients { $0.metricsFactory = metrics }
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await clients.run() }
                    let client = try clients.client(for: APNsClientTests.key, endpoint: endpoint)
                    #expect(await Self.send(client, 1).isAccepted, "the connection is up")
                    let inFlight = Task { await Self.send(client, 2) }
                    for await token in taken where token == APNsClientTests.token(2) { break }
                    trigger.triggerGracefulShutdown()
                    try await group.waitForAll()
                    #expect(await inFlight.value.isAccepted, "the request in flight was answered before the connection closed")
                    #expect(try metrics.expectCounter("apns_connection_events_total", [("event", "opened")]).totalValue == 1)
                    #expect(try metrics.expectCounter("apns_connection_events_total", [("event", "closed")]).totalValue == 1)
                    #expect(try metrics.expectGauge("apns_connections").lastValue == 0)
                    guard case .notSent(let error) = await Self.send(client, 3) else {
                        Issue.record("a send after shutdown must fail as not sent")
                        return
                    }
                    #expect(error.code == .shutdown)
                    #expect(throws: APNsTransportError.self, "no new clients after shutdown") {
                        try clients.client(for: APNsClientTests.key, endpoint: endpoint)
                    }
                }
            }
        }
    }

    @Test("a client's run ends when its task is cancelled, and shuts the client down")
    func cancelledClient() async throws {
        // Nothing listens here; a client that was shut down does not try to connect.
        let endpoint = APNsEndpoint(host: "127.0.0.1", port: 9, usesTLS: false)
        let client = try APNsClient(configuration: .init(endpoint: endpoint), key: APNsClientTests.key)
        let running = Task { await client.run() }
        running.cancel()
        await running.value
        guard case .notSent(let error) = await Self.send(client, 1) else {
            Issue.record("a send after shutdown must fail as not sent")
            return
        }
        #expect(error.code == .shutdown)
    }

    /// Sends one notification when the group shuts it down, as a dispatcher finishes its batches.
    final class LastWord: Service {
        let client: APNsClient
        let outcome = Mutex<APNsOutcome?>(nil)

        init(client: APNsClient) {
            self.client = client
        }

        func run() async throws {
            try await ServiceLifecycle.gracefulShutdown()
            let outcome = await APNsClientsServiceTests.send(client, 1)
            self.outcome.withLock { $0 = outcome }
        }
    }

    @Test(
        "the group stops services in reverse order: listed before a sender, the clients outlive its last send",
        arguments: [true, false]
    )
    func order(clientsFirst: Bool) async throws {
        try await Self.withSimulator { endpoint in
            let clients = APNsClients()
            let sender = LastWord(client: try clients.client(for: APNsClientTests.key, endpoint: endpoint))
            var logger = Logger(label: "paperboy.test")
            logger.logLevel = .warning
            let services: [any Service] = clientsFirst ? [clients, sender] : [sender, clients]
            let group = ServiceGroup(configuration: .init(services: services, logger: logger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            let outcome = sender.outcome.withLock { $0 }
            if clientsFirst {
                #expect(outcome?.isAccepted == true, "\(String(describing: outcome))")
            } else {
                guard case .notSent(let error) = outcome else {
                    Issue.record("\(String(describing: outcome))")
                    return
                }
                #expect(error.code == .shutdown, "stopped first, the clients refuse the sender's last send")
            }
        }
    }
}
