import FCM
import FCMSimulator
import Foundation
import PaperboyCore
import PushTransport
import Synchronization
import Testing

/// The FCM client against the FCM simulator over real sockets on loopback (cleartext HTTP/2): access tokens,
/// every error code and its action, retries counted at the simulator, the stream limit and the quota.
///
/// Serialized: every client runs on NIO's shared event loops; on a two-core machine parallel suites delay the
/// timers the retry tests measure.
@Suite("FCM client against the simulator", .serialized)
struct FCMClientTests {
    static let project = "paperboy-test"

    /// The simulator's clock: the real one moved by `offset`, so a test can make its tokens expire.
    final class SimulatorClock: Sendable {
        let offset = Mutex<TimeInterval>(0)
        func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    }

    static func token(_ index: Int, prefix: String = "dev") -> String {
        "\(prefix)\(index)x:APA91b" + String(repeating: "Zm9vYmFy-_", count: 14)
    }

    static let message = try! FCMMessage.data(
        ["edition": "e1", "tier": "large", "fetch": #"["https://cdn.example.com/a.zip"]"#],
        for: .android(priority: .normal, ttl: .seconds(3600), collapseKey: "morning")
    )

    static func withSimulator(
        faults: FCMSimulator.Faults = .init(),
        tokenLifetime: Duration = .seconds(3600),
        configure: (inout FCMClient.Configuration) -> Void = { _ in },
        _ body: (FCMSimulator, FCMClient, SimulatorClock, FCMServiceAccount) async throws -> Void
    ) async throws {
        let clock = SimulatorClock()
        var configuration = FCMSimulator.Configuration(faults: faults)
        configuration.tokenLifetime = tokenLifetime
        configuration.eventLoopThreads = 1
        configuration.now = { clock.now() }
        let simulator = try FCMSimulator(configuration: configuration)
        let port = try await simulator.start()
        let account = try FCMServiceAccount(json: simulator.makeServiceAccount(projectID: project).jsonData())
        var clientConfiguration = FCMClient.Configuration()
        clientConfiguration.endpoint = PushEndpoint(host: "127.0.0.1", port: port, usesTLS: false)
        clientConfiguration.connections = 2
        clientConfiguration.retryPolicy.initialBackoff = .milliseconds(10)
        clientConfiguration.retryPolicy.maximumBackoff = .milliseconds(40)
        clientConfiguration.retryPolicy.quotaBackoff = .milliseconds(50)
        configure(&clientConfiguration)
        let client = try FCMClient(configuration: clientConfiguration, account: account)
        do {
            try await body(simulator, client, clock, account)
        } catch {
            await client.shutdown()
            try await simulator.shutdown()
            throw error
        }
        await client.shutdown()
        try await simulator.shutdown()
    }

    /// Sends every token in batches of 100, `concurrency` batches at once; outcomes by token.
    static func sendAll(_ client: FCMClient, tokens: [String], concurrency: Int = 4) async -> [String: FCMResult] {
        let batches = stride(from: 0, to: tokens.count, by: 100).map { Array(tokens[$0..<min($0 + 100, tokens.count)]) }
        return await withTaskGroup(of: [(String, FCMResult)].self) { group in
            var next = 0
            var results: [String: FCMResult] = [:]
            func add() {
                guard next < batches.count else { return }
                let batch = batches[next]
                next += 1
                group.addTask { Array(zip(batch, await client.send(batch.map { FCMDelivery(message, to: $0) }))) }
            }
            for _ in 0..<concurrency { add() }
            for await finished in group {
                for (token, result) in finished { results[token] = result }
                add()
            }
            return results
        }
    }

    @Test("2,000 messages are accepted once each over two connections, with one access token fetch, never above the stream limit")
    func acceptsOnceWithOneTokenFetch() async throws {
        var faults = FCMSimulator.Faults()
        faults.maxConcurrentStreams = 50
        try await Self.withSimulator(faults: faults) { simulator, client, _, account in
            let tokens = (0..<2000).map { Self.token($0) }
            let results = await Self.sendAll(client, tokens: tokens, concurrency: 8)
            #expect(results.values.allSatisfy { $0.outcome.isAccepted && $0.attempts == 1 })
            #expect(tokens.allSatisfy { simulator.acceptedCount(for: $0) == 1 })
            let stats = simulator.stats()
            #expect(stats.tokenFetches[account.clientEmail] == 1)
            #expect(stats.streamLimitViolations == 0)
            #expect(stats.peakConcurrentStreams <= 50)
            if case .accepted(let name) = results[tokens[0]]?.outcome {
                #expect(name.hasPrefix("projects/\(Self.project)/messages/"))
            }
        }
    }

    @Test("a token FCM no longer accepts (401) is replaced once, and the message goes through with the new one")
    func expiredAccessTokenRefreshedOnce() async throws {
        try await Self.withSimulator(tokenLifetime: .seconds(600)) { simulator, client, clock, account in
            #expect(await client.send(Self.message, to: Self.token(1)).isAccepted)
            // The simulator's clock passes the token's expiry; the client's does not (it would renew at 5 minutes
            // before): FCM answers 401 UNAUTHENTICATED.
            clock.offset.withLock { $0 = 601 }
            let result = await client.send([FCMDelivery(Self.message, to: Self.token(2))])[0]
            #expect(result.outcome.isAccepted)
            #expect(result.attempts == 2)
            let stats = simulator.stats()
            #expect(stats.tokenFetches[account.clientEmail] == 2)
            #expect(stats.rejected["UNAUTHENTICATED"] == 1)
        }
    }

    @Test("each error code gets its action and is sent once: dead tokens, an invalid token, another project's, the app's APNs credentials")
    func errorCodes() async throws {
        var faults = FCMSimulator.Faults()
        faults.outcomesByTokenPrefix = [
            ("dead", .unregistered), ("othr", .senderIDMismatch), ("bad0", .invalidToken), ("tpae", .thirdPartyAuthError),
        ]
        try await Self.withSimulator(faults: faults) { simulator, client, _, _ in
            let cases: [(prefix: String, status: Int, code: FCMErrorCode, action: FCMErrorCode.Action)] = [
                ("dead", 404, .unregistered, .deactivateToken),
                ("othr", 403, .senderIDMismatch, .deactivateToken),
                ("bad0", 400, .invalidArgument, .deactivateToken),
                ("tpae", 401, .thirdPartyAuthError, .fixConfiguration),
            ]
            for item in cases {
                let result = await client.send([FCMDelivery(Self.message, to: Self.token(7, prefix: item.prefix))])[0]
                guard case .rejected(let rejection) = result.outcome else {
                    Issue.record("\(item.prefix): \(result.outcome)")
                    continue
                }
                #expect(rejection.status == item.status, "\(item.prefix)")
                #expect(rejection.code == item.code, "\(item.prefix)")
                #expect(rejection.action == item.action, "\(item.prefix)")
                #expect(result.attempts == 1, "\(item.prefix) was retried")
            }
            #expect(simulator.stats().requests == cases.count, "400, 401, 403 and 404 are never retried")
        }
    }

    @Test("500 and 503 are retried with backoff until accepted; the simulator counts every attempt")
    func serverErrorsRetried() async throws {
        var faults = FCMSimulator.Faults()
        faults.failNext = (.unavailable, 2)
        try await Self.withSimulator(faults: faults) { simulator, client, _, _ in
            let result = await client.send([FCMDelivery(Self.message, to: Self.token(1))])[0]
            #expect(result.outcome.isAccepted)
            #expect(result.attempts == 3)
            #expect(simulator.stats().requests == 3)
            #expect(simulator.stats().rejected["UNAVAILABLE"] == 2)
            simulator.updateFaults { $0.failNext = (.internal, 10) }
            let exhausted = await client.send([FCMDelivery(Self.message, to: Self.token(2))])[0]
            guard case .rejected(let rejection) = exhausted.outcome else {
                Issue.record("\(exhausted.outcome)")
                return
            }
            #expect(rejection.code == .internal)
            #expect(exhausted.attempts == 5, "the policy's attempt limit")
        }
    }

    @Test("a 429 is retried after its Retry-After, never sooner")
    func quotaExceededHonoursRetryAfter() async throws {
        var faults = FCMSimulator.Faults()
        faults.failNext = (.quotaExceeded(retryAfter: 1), 1)
        try await Self.withSimulator(faults: faults) { simulator, client, _, _ in
            let result = await client.send([FCMDelivery(Self.message, to: Self.token(1))])[0]
            #expect(result.outcome.isAccepted)
            #expect(result.attempts == 2)
            #expect(result.latency >= .seconds(1))
            #expect(simulator.stats().rejected["QUOTA_EXCEEDED"] == 1)
        }
    }

    @Test("the client keeps to the project's quota: the simulator, enforcing the same quota, answers no QUOTA_EXCEEDED")
    func keepsToQuota() async throws {
        var faults = FCMSimulator.Faults()
        faults.quotaPerMinute = 6000
        let configure: (inout FCMClient.Configuration) -> Void = { $0.quotaPerMinute = 6000 }
        try await Self.withSimulator(faults: faults, configure: configure) { simulator, client, _, _ in
            let started = ContinuousClock.now
            let tokens = (0..<150).map { Self.token($0) }
            let results = await Self.sendAll(client, tokens: tokens, concurrency: 2)
            #expect(results.values.allSatisfy { $0.outcome.isAccepted })
            #expect(simulator.stats().rejected["QUOTA_EXCEEDED"] == nil)
            // 100 a second with a burst of 100: the last 50 wait half a second.
            #expect(ContinuousClock.now - started >= .milliseconds(450))
        }
    }

    @Test("answers that are not FCM's (a proxy's 404 page, an empty 404, a 502, a 200 without a name) never deactivate a token")
    func foreignAnswers() async throws {
        var faults = FCMSimulator.Faults()
        faults.foreignAnswersByTokenPrefix = [
            ("prxy", .htmlNotFound), ("gone", SimulatorForeignAnswer(status: 404)), ("gate", .badGateway), ("okay", .emptyOK),
        ]
        try await Self.withSimulator(faults: faults) { simulator, client, _, _ in
            let expected: [(prefix: String, verdict: PushVerdict)] = [
                ("prxy", .misconfigured), ("gone", .misconfigured), ("gate", .fateUnknown), ("okay", .fateUnknown),
            ]
            for (prefix, verdict) in expected {
                let result = await client.send([FCMDelivery(Self.message, to: Self.token(3, prefix: prefix))])[0]
                #expect(result.outcome.verdict == verdict, "\(prefix): \(result.outcome)")
                #expect(result.attempts == 1, "\(prefix) was sent again")
                if case .rejected(let rejection) = result.outcome {
                    #expect(!rejection.isFCMAnswer, "\(prefix)")
                    #expect(rejection.action != .deactivateToken, "\(prefix): \(rejection.code)")
                }
            }
            #expect(simulator.stats().requests == expected.count)
            #expect(simulator.stats().accepted == 0)
        }
    }

    @Test("the simulator records each accept with its connection and stream")
    func acceptsNameConnectionAndStream() async throws {
        try await Self.withSimulator { simulator, client, _, _ in
            let tokens = (0..<10).map { Self.token($0) }
            let results = await client.send(tokens.map { FCMDelivery(Self.message, to: $0) })
            #expect(results.allSatisfy { $0.outcome.isAccepted })
            let accepts = simulator.accepts()
            #expect(Set(accepts.map(\.token)) == Set(tokens))
            #expect(accepts.allSatisfy { $0.connection >= 1 && ($0.stream ?? 0) % 2 == 1 }, "\(accepts)")
            #expect(Set(accepts.map { "\($0.connection)/\($0.stream ?? 0)" }).count == 10, "no two accepts on one stream")
            #expect(simulator.accepts(for: tokens[4]).count == 1)
        }
    }

    @Test("cancelled while waiting out a Retry-After or the project's quota, messages end at once as not sent, not as the 429")
    func cancelledWaits() async throws {
        var faults = FCMSimulator.Faults()
        faults.failNext = (.quotaExceeded(retryAfter: 30), 1)
        let configure: (inout FCMClient.Configuration) -> Void = { $0.quotaPerMinute = 60 }
        try await Self.withSimulator(faults: faults, configure: configure) { simulator, client, _, _ in
            // The 429's Retry-After: 30 s.
            let retrying = Task { await client.send([FCMDelivery(Self.message, to: Self.token(1))]) }
            try await Task.sleep(for: .milliseconds(300))
            retrying.cancel()
            let retried = await retrying.value[0]
            guard case .notSent(let error) = retried.outcome else {
                Issue.record("\(retried.outcome)")
                return
            }
            #expect(error.code == .cancelled)
            #expect(retried.attempts == 1)
            #expect(retried.latency < .seconds(5))
            #expect(simulator.stats().requests == 1)
            // One message a second, the first second's spent: three at once wait about 2.7 s for the quota.
            let quota = Task { await client.send((2...4).map { FCMDelivery(Self.message, to: Self.token($0)) }) }
            try await Task.sleep(for: .milliseconds(300))
            quota.cancel()
            let waited = await quota.value
            #expect(waited.allSatisfy { if case .notSent(let error) = $0.outcome { error.code == .cancelled } else { false } }, "\(waited)")
            #expect(waited.allSatisfy { $0.latency < .seconds(1) })
            #expect(simulator.stats().requests == 1, "nothing that waited for the quota was sent")
        }
    }
}
