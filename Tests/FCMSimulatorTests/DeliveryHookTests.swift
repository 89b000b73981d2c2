import AsyncHTTPClient
import FCMSimulator
import Foundation
import NIOCore
import Synchronization
import Testing

/// `onAccept`: what simulated devices (the demo's Android fleet) are told about each accepted message.
@Suite("FCM simulator: the delivery hook")
struct DeliveryHookTests {
    @Test("every accepted token message reaches onAccept with its token, data and android fields; rejected and validate_only ones do not")
    func onAcceptSeesAcceptedMessages() async throws {
        let clock = TestClock()
        let deliveries = Mutex<[FCMSimulator.Delivery]>([])
        var configuration = FCMSimulator.Configuration()
        configuration.eventLoopThreads = 1
        configuration.now = { clock.now() }
        configuration.onAccept = { delivery in deliveries.withLock { $0.append(delivery) } }
        let simulator = try FCMSimulator(configuration: configuration)
        try await simulator.start()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let account = try simulator.makeServiceAccount(projectID: SimulatorFixture.projectID)
            let fixture = SimulatorFixture(simulator: simulator, account: account, clock: clock, client: client)
            let token = try await fixture.accessToken()

            let android = #","android":{"priority":"high","ttl":"5400s","collapse_key":"morning"}"#
            #expect(try await fixture.send(Body.dataMessage(extra: android), token: token).status == 200)
            #expect(try await fixture.send(#"{"message":{"token":"bad token"}}"#, token: token).status == 400)
            #expect(try await fixture.send(#"{"validate_only":true,"message":{"token":"\#(Body.androidToken)"}}"#, token: token).status == 200)
            #expect(try await fixture.send(#"{"message":{"topic":"news","data":{"a":"b"}}}"#, token: token).status == 200)
            #expect(try await fixture.send(Body.dataMessage(), token: "not-a-token").status == 401)

            let seen = deliveries.withLock { $0 }
            #expect(
                seen == [
                    .init(
                        token: Body.androidToken,
                        data: ["edition": "2026-11-24-morning", "tier": "1"],
                        android: .init(priority: "high", ttl: "5400s", collapseKey: "morning"),
                        acceptedAt: clock.now()
                    )
                ]
            )
            #expect(seen.first?.android?.ttlSeconds == 5400)
            #expect(simulator.acceptedCount(for: Body.androidToken) == seen.count)
        } catch {
            try? await client.shutdown()
            try? await simulator.shutdown()
            throw error
        }
        try await client.shutdown()
        try await simulator.shutdown()
    }
}
