import APNs
import APNsSimulator
import Crypto
import Foundation
import MetricsTestKit
import NIOCore
import NIOPosix
import NIOSSL
import PaperboyCore
import PaperboyTesting
import PushTransport
import Synchronization
import Testing

/// The client against the simulator over real sockets on loopback: cleartext HTTP/2 and TLS, every
/// reason, retries, GOAWAY, dropped connections, the stream limit and the provider-token rules.
///
/// Serialized: every client runs on NIO's shared event loops, and on a two-core machine the big sends
/// (10,000 through GOAWAYs) delayed the timers of the others by seconds, failing the tests that measure
/// timeouts, backoffs and connect timeouts.
@Suite("APNs client against the simulator", .serialized)
struct APNsClientTests {
    static let privateKey = P256.Signing.PrivateKey()
    static let key = try! APNsSigningKey(pem: privateKey.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
    static let topic = "com.example.news"

    /// 64 hex characters, distinct per `index`, starting with `prefix`.
    static func token(_ index: Int, prefix: String = "") -> String {
        let tail = String(index, radix: 16)
        return prefix + String(repeating: "0", count: 64 - prefix.count - tail.count) + tail
    }

    static let notification = try! APNsNotification.background(["edition": "2026-11-23-morning"])

    /// Runs `body` with a started simulator and a client pointed at it; shuts both down afterwards.
    static func withSimulator(
        faults: APNsSimulator.Faults = .init(),
        tls: Bool = false,
        configure: (inout APNsClient.Configuration) -> Void = { _ in },
        tokens: (any APNsProviderTokenSource)? = nil,
        _ body: (APNsSimulator, APNsClient) async throws -> Void
    ) async throws {
        var validation = APNsRequestValidator.Configuration(teamID: "TEAM123456", keys: ["KEY1234567": privateKey.publicKey], topics: [topic])
        validation.maximumTokenAge = 3600
        let simulator = APNsSimulator(configuration: .init(validation: validation, faults: faults, tls: tls ? try serverTLS() : nil))
        let port = try await simulator.start()
        var configuration = APNsClient.Configuration(endpoint: try APNsEndpoint(tls ? "https://localhost:\(port)" : "http://127.0.0.1:\(port)"))
        configuration.retryPolicy.initialBackoff = .milliseconds(1)
        configuration.retryPolicy.maximumBackoff = .milliseconds(4)
        if tls { configuration.tls = try clientTLS() }
        configure(&configuration)
        let client: APNsClient
        if let tokens {
            client = try APNsClient(configuration: configuration, tokens: tokens)
        } else {
            client = try APNsClient(configuration: configuration, key: key)
        }
        do {
            try await body(simulator, client)
        } catch {
            await client.shutdown()
            try await simulator.shutdown()
            throw error
        }
        await client.shutdown()
        try await simulator.shutdown()
    }

    static func fixture(_ name: String) throws -> String {
        try #require(Bundle.module.path(forResource: name, ofType: "pem", inDirectory: "Fixtures"))
    }

    static func serverTLS() throws -> TLSConfiguration {
        try TLSConfiguration.makeServerConfiguration(
            certificateChain: NIOSSLCertificate.fromPEMFile(fixture("simulator-cert")).map { .certificate($0) },
            privateKey: .privateKey(NIOSSLPrivateKey(file: fixture("simulator-key"), format: .pem))
        )
    }

    static func clientTLS() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(fixture("simulator-cert")))
        return tls
    }

    /// Sends to every token with at most `concurrency` requests outstanding; outcomes by token.
    static func sendAll(_ client: APNsClient, tokens: [String], concurrency: Int = 500) async -> [String: APNsOutcome] {
        await withTaskGroup(of: (String, APNsOutcome).self) { group in
            var outcomes: [String: APNsOutcome] = [:]
            var next = 0
            for _ in 0..<min(concurrency, tokens.count) {
                let token = tokens[next]
                next += 1
                group.addTask { (token, await client.send(notification, to: token, topic: topic)) }
            }
            while let (token, outcome) = await group.next() {
                outcomes[token] = outcome
                if next < tokens.count {
                    let token = tokens[next]
                    next += 1
                    group.addTask { (token, await client.send(notification, to: token, topic: topic)) }
                }
            }
            return outcomes
        }
    }

    @Test("notifications are accepted exactly once each, over cleartext HTTP/2 and over TLS", arguments: [false, true])
    func accepted(tls: Bool) async throws {
        try await Self.withSimulator(tls: tls) { simulator, client in
            let tokens = (0..<200).map { Self.token($0) }
            let outcomes = await Self.sendAll(client, tokens: tokens, concurrency: 50)
            for token in tokens {
                guard case .accepted(let apnsID) = outcomes[token] else {
                    Issue.record("\(token): \(String(describing: outcomes[token]))")
                    continue
                }
                #expect(UUID(uuidString: apnsID) != nil)
                #expect(simulator.acceptedCount(forToken: token) == 1)
            }
            #expect(simulator.stats().accepted == 200)
        }
    }

    static let everyReason: [(Int, APNsReason)] = [
        (400, .badCollapseId), (400, .badDeviceToken), (400, .badExpirationDate), (400, .badMessageId), (400, .badPriority),
        (400, .badTopic), (400, .deviceTokenNotForTopic), (400, .duplicateHeaders), (400, .idleTimeout), (400, .invalidPushType),
        (400, .missingDeviceToken), (400, .missingTopic), (400, .payloadEmpty), (400, .topicDisallowed),
        (403, .badCertificate), (403, .badCertificateEnvironment), (403, .forbidden), (403, .invalidProviderToken),
        (403, .missingProviderToken), (403, .unrelatedKeyIdInToken), (404, .badPath), (405, .methodNotAllowed),
        (410, .unregistered), (410, .expiredToken), (413, .payloadTooLarge), (429, .tooManyProviderTokenUpdates),
        (400, .unknown("SomethingApplePlansForLater")),
    ]

    @Test("every reason APNs documents, and one it does not yet, decodes from the wire with its status")
    func everyReasonDecodes() async throws {
        var faults = APNsSimulator.Faults()
        let timestamp = Date(timeIntervalSince1970: 1_763_850_000.123)
        for (index, (status, reason)) in Self.everyReason.enumerated() {
            faults.outcomesByTokenPrefix.append(
                (String(format: "%04x", index), .init(status: status, reason: reason, timestamp: status == 410 ? timestamp : nil))
            )
        }
        try await Self.withSimulator(faults: faults) { _, client in
            for (index, (status, reason)) in Self.everyReason.enumerated() {
                let outcome = await client.send(Self.notification, to: Self.token(1, prefix: String(format: "%04x", index)), topic: Self.topic)
                guard case .rejected(let rejection) = outcome else {
                    Issue.record("\(reason): \(outcome)")
                    continue
                }
                #expect(rejection.status == status)
                #expect(rejection.reason == reason)
                if status == 410 {
                    #expect(abs((rejection.timestamp?.timeIntervalSince1970 ?? 0) - timestamp.timeIntervalSince1970) < 0.001)
                } else {
                    #expect(rejection.timestamp == nil)
                }
            }
        }
    }

    @Test("429, 500 and 503 are retried up to the attempt limit; permanent rejections are sent once")
    func retriesOnlyWhereAllowed() async throws {
        var faults = APNsSimulator.Faults()
        faults.outcomesByTokenPrefix = [
            ("a1", .init(status: 429, reason: .tooManyRequests)),
            ("a2", .init(status: 500, reason: .internalServerError)),
            ("a3", .init(status: 503, reason: .serviceUnavailable)),
            ("b1", .init(status: 400, reason: .badDeviceToken)),
            ("b2", .init(status: 400, reason: .deviceTokenNotForTopic)),
            ("b3", .init(status: 410, reason: .unregistered)),
            ("b4", .init(status: 410, reason: .expiredToken)),
            ("b5", .init(status: 413, reason: .payloadTooLarge)),
        ]
        try await Self.withSimulator(
            faults: faults,
            configure: { $0.retryPolicy.maximumAttempts = 3 },
            { simulator, client in
                for prefix in ["a1", "a2", "a3", "b1", "b2", "b3", "b4", "b5"] {
                    let outcome = await client.send(Self.notification, to: Self.token(7, prefix: prefix), topic: Self.topic)
                    #expect(!outcome.isAccepted)
                }
                let rejected = simulator.stats().rejected
                #expect(rejected["TooManyRequests"] == 3)
                #expect(rejected["InternalServerError"] == 3)
                #expect(rejected["ServiceUnavailable"] == 3)
                for reason in ["BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered", "ExpiredToken", "PayloadTooLarge"] {
                    #expect(rejected[reason] == 1, "\(reason) was sent \(rejected[reason] ?? 0) times")
                }
            }
        )
    }

    @Test("under random 503s and 429s every notification is accepted once after retries")
    func randomFailuresRecover() async throws {
        var faults = APNsSimulator.Faults()
        faults.failureRates = [(.init(status: 503, reason: .serviceUnavailable), 0.2), (.init(status: 429, reason: .tooManyRequests), 0.1)]
        try await Self.withSimulator(
            faults: faults,
            configure: { $0.retryPolicy.maximumAttempts = 12 },
            { simulator, client in
                let tokens = (0..<1000).map { Self.token($0) }
                let outcomes = await Self.sendAll(client, tokens: tokens)
                #expect(outcomes.values.filter(\.isAccepted).count == 1000)
                #expect(tokens.allSatisfy { simulator.acceptedCount(forToken: $0) == 1 })
                #expect((simulator.stats().rejected["ServiceUnavailable"] ?? 0) > 0)
            }
        )
    }

    @Test("10,000 sends through a GOAWAY every 1,000 streams: each token accepted exactly once")
    func goAwayBurst() async throws {
        var faults = APNsSimulator.Faults()
        faults.goAwayAfterStreams = 1000
        try await Self.withSimulator(faults: faults) { simulator, client in
            let tokens = (0..<10_000).map { Self.token($0) }
            let outcomes = await Self.sendAll(client, tokens: tokens, concurrency: 2000)
            let notAccepted = outcomes.filter { !$0.value.isAccepted }
            #expect(notAccepted.isEmpty, "\(notAccepted.count) not accepted, e.g. \(String(describing: notAccepted.first))")
            let counts = simulator.acceptedCounts()
            #expect(counts.count == 10_000)
            #expect(counts.values.allSatisfy { $0 == 1 })
            #expect(simulator.stats().goAwaysSent >= 9)
        }
    }

    @Test("a dropped connection loses nothing silently: each send is accepted, or reported with an unknown fate")
    func droppedConnection() async throws {
        var faults = APNsSimulator.Faults()
        faults.dropConnectionAfterStreams = 300
        faults.latency = .milliseconds(2)
        try await Self.withSimulator(faults: faults) { simulator, client in
            let tokens = (0..<2000).map { Self.token($0) }
            let outcomes = await Self.sendAll(client, tokens: tokens, concurrency: 400)
            #expect(outcomes.count == 2000)
            var unknown = 0
            for token in tokens {
                switch outcomes[token] {
                case .accepted:
                    #expect(simulator.acceptedCount(forToken: token) == 1)
                case .fateUnknown:
                    unknown += 1
                    #expect(simulator.acceptedCount(forToken: token) <= 1)
                default:
                    Issue.record("\(token): \(String(describing: outcomes[token]))")
                }
            }
            #expect(unknown > 0)
            #expect(simulator.stats().connectionsDropped > 0)
            #expect(simulator.acceptedCounts().values.allSatisfy { $0 == 1 })
        }
    }

    @Test("the client never opens more streams than the server allows, starting from one")
    func streamLimit() async throws {
        var faults = APNsSimulator.Faults()
        faults.maxConcurrentStreams = 40
        faults.latency = .milliseconds(3)
        try await Self.withSimulator(
            faults: faults,
            configure: { $0.connections = 1 },
            { simulator, client in
                let outcomes = await Self.sendAll(client, tokens: (0..<1000).map { Self.token($0) }, concurrency: 300)
                #expect(outcomes.values.allSatisfy { $0.isAccepted })
                let stats = simulator.stats()
                #expect(stats.streamLimitViolations == 0)
                #expect(stats.peakConcurrentStreams <= 40)
                #expect(stats.peakConcurrentStreams > 1)
            }
        )
    }

    @Test("metrics count answers by status and reason, time them, and count connections and token refreshes")
    func metrics() async throws {
        let metrics = TestMetrics()
        var faults = APNsSimulator.Faults()
        faults.outcomesByTokenPrefix = [("dead", .init(status: 410, reason: .unregistered)), ("bad", .init(status: 400, reason: .badDeviceToken))]
        try await Self.withSimulator(
            faults: faults,
            configure: { $0.metricsFactory = metrics },
            { _, client in
                _ = await Self.sendAll(
                    client,
                    tokens: (0..<30).map { Self.token($0) } + [Self.token(1, prefix: "dead"), Self.token(2, prefix: "bad")]
                )
            }
        )
        #expect(try metrics.expectCounter("apns_requests_total", [("status", "200"), ("reason", "")]).totalValue == 30)
        #expect(try metrics.expectCounter("apns_requests_total", [("status", "410"), ("reason", "Unregistered")]).totalValue == 1)
        #expect(try metrics.expectCounter("apns_requests_total", [("status", "400"), ("reason", "BadDeviceToken")]).totalValue == 1)
        #expect(try metrics.expectTimer("apns_request_duration_seconds").values.count == 32)
        #expect(try metrics.expectCounter("apns_connection_events_total", [("event", "opened")]).totalValue >= 1)
        #expect(try metrics.expectCounter("apns_provider_token_refreshes_total", [("key_id", "KEY1234567")]).totalValue == 1)
    }

    @Test("an answer that does not come in time is reported as an unknown fate, not lost and not resent")
    func timeout() async throws {
        var faults = APNsSimulator.Faults()
        faults.latency = .seconds(3)
        try await Self.withSimulator(
            faults: faults,
            configure: { $0.requestTimeout = .milliseconds(300) },
            { _, client in
                let outcome = await client.send(Self.notification, to: Self.token(1), topic: Self.topic)
                guard case .fateUnknown(let error) = outcome else {
                    Issue.record("\(outcome)")
                    return
                }
                #expect(error.code == .timedOut)
            }
        )
    }

    @Test("late answers to timed-out requests do not starve the connection window: error answers still arrive on it")
    func lateAnswersKeepWindowOpen() async throws {
        var faults = APNsSimulator.Faults()
        faults.outcomesByTokenPrefix = [("5", .init(status: 400, reason: .badDeviceToken)), ("b", .init(status: 400, reason: .badDeviceToken))]
        // Tokens starting with 5 are answered after the client gave up on them, with 16 KB of error JSON
        // each: 40 of them are 640 KB, ten times the connection window, and more resets than NIO remembers
        // by default.
        faults.latencyByTokenPrefix = [("5", .milliseconds(1200))]
        faults.lateAnswerBodyBytes = 16_000
        try await Self.withSimulator(
            faults: faults,
            configure: {
                $0.connections = 1
                $0.requestTimeout = .milliseconds(300)
            },
            { simulator, client in
                #expect(await client.send(Self.notification, to: Self.token(1), topic: Self.topic).isAccepted)
                // Other requests are answered on the connection meanwhile, every 50 ms: it is not stalled (a
                // connection whose requests all time out unanswered is closed, see the pool's tests).
                let others = Task {
                    var accepted = 0
                    for index in 0..<36 {
                        if await client.send(Self.notification, to: Self.token(index, prefix: "1"), topic: Self.topic).isAccepted { accepted += 1 }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                    return accepted
                }
                let late = await client.send((0..<40).map { APNsDelivery(Self.notification, to: Self.token($0, prefix: "5"), topic: Self.topic) })
                #expect(late.allSatisfy { if case .fateUnknown(let error) = $0.outcome { error.code == .timedOut } else { false } })
                // Until every late answer has arrived.
                try await Task.sleep(for: .milliseconds(1500))
                #expect(await others.value == 36)
                let answers = await client.send((0..<20).map { APNsDelivery(Self.notification, to: Self.token($0, prefix: "b"), topic: Self.topic) })
                for answer in answers {
                    #expect(answer.outcome.rejection?.reason == .badDeviceToken, "\(answer.outcome)")
                }
                #expect(simulator.stats().connectionsOpened == 1, "the connection failed and was replaced")
            }
        )
    }

    @Test("a server that sends SETTINGS and GOAWAY at once is reconnected to with backoff, not in a loop")
    func goAwayAtStartBacksOff() async throws {
        var faults = APNsSimulator.Faults()
        faults.goAwayAtStartForConnections = .max
        try await Self.withSimulator(
            faults: faults,
            configure: {
                $0.reconnectInitialBackoff = .milliseconds(100)
                $0.reconnectMaximumBackoff = .milliseconds(400)
                $0.maximumWait = .seconds(3)
                $0.maximumResends = 1000
            },
            { simulator, client in
                let outcome = await client.send(Self.notification, to: Self.token(1), topic: Self.topic)
                guard case .notSent = outcome else {
                    Issue.record("\(outcome)")
                    return
                }
                // Backoff 100, 200, 400, 400, … ms: about ten connections in 3 s; without it, hundreds.
                let opened = simulator.stats().connectionsOpened
                #expect(opened >= 3)
                #expect(opened <= 14, "\(opened) connections in 3 s")
            }
        )
    }

    @Test("a server that accepts TCP and never completes the handshake holds a connection attempt only for the connect timeout")
    func silentHandshakeTimesOut() async throws {
        var faults = APNsSimulator.Faults()
        faults.silentConnections = 1
        try await Self.withSimulator(
            faults: faults,
            configure: {
                $0.connectTimeout = .milliseconds(500)
                $0.reconnectInitialBackoff = .milliseconds(50)
                $0.maximumWait = .seconds(8)
            },
            { simulator, client in
                let started = ContinuousClock.now
                let outcome = await client.send(Self.notification, to: Self.token(1), topic: Self.topic)
                let took = ContinuousClock.now - started
                #expect(outcome.isAccepted, "\(outcome)")
                #expect(took < .seconds(3), "\(took)")
                #expect(simulator.acceptedCount(forToken: Self.token(1)) == 1)
            }
        )
    }

    @Test("a server that never completes the handshake fails requests as not sent, naming the handshake, within the wait limit")
    func blackHoleNotSent() async throws {
        var faults = APNsSimulator.Faults()
        faults.silentConnections = .max
        try await Self.withSimulator(
            faults: faults,
            configure: {
                $0.connectTimeout = .milliseconds(300)
                $0.maximumWait = .seconds(2)
            },
            { _, client in
                let started = ContinuousClock.now
                let outcome = await client.send(Self.notification, to: Self.token(1), topic: Self.topic)
                #expect(ContinuousClock.now - started < .seconds(4))
                guard case .notSent(let error) = outcome else {
                    Issue.record("\(outcome)")
                    return
                }
                #expect(error.code == .connectFailed)
                #expect(error.message.contains("handshake"), "\(error.message)")
            }
        )
    }

    @Test("each retry of a batch waits its own jittered backoff: the retries spread out instead of waiting for the longest")
    func retriesSpreadOut() async throws {
        var faults = APNsSimulator.Faults()
        faults.outcomesByTokenPrefix = [("5", .init(status: 503, reason: .serviceUnavailable))]
        try await Self.withSimulator(
            faults: faults,
            configure: {
                $0.retryPolicy.maximumAttempts = 2
                $0.retryPolicy.initialBackoff = .milliseconds(400)
                $0.retryPolicy.maximumBackoff = .milliseconds(400)
            },
            { simulator, client in
                #expect(await client.send(Self.notification, to: Self.token(1), topic: Self.topic).isAccepted)
                let results = await client.send((0..<20).map { APNsDelivery(Self.notification, to: Self.token($0, prefix: "5"), topic: Self.topic) })
                #expect(results.allSatisfy { $0.attempts == 2 && $0.outcome.rejection?.reason == .serviceUnavailable })
                // Backoffs are drawn from 200...400 ms; one shared wait would end them all within a few ms.
                let latencies = results.map(\.latency)
                let spread = latencies.max()! - latencies.min()!
                #expect(spread > .milliseconds(60), "\(latencies)")
                #expect(simulator.stats().rejected["ServiceUnavailable"] == 40)
            }
        )
    }

    @Test("an endpoint that refuses connections fails requests as not sent after the wait limit")
    func unreachable() async throws {
        // A port that was free a moment ago: nothing listens there.
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress!.port!
        try await channel.close()
        var configuration = APNsClient.Configuration(endpoint: try APNsEndpoint("http://127.0.0.1:\(port)"))
        configuration.maximumWait = .seconds(2)
        let client = try APNsClient(configuration: configuration, key: Self.key)
        let outcome = await client.send(Self.notification, to: Self.token(1), topic: Self.topic)
        await client.shutdown()
        guard case .notSent(let error) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(error.code == .connectFailed)
        #expect(error.message.contains("\(port)"))
    }

    @Test("after ExpiredProviderToken the token is replaced at once, but never sooner than 20 minutes after it was made")
    func expiredProviderToken() async throws {
        let clock = ManualClock()
        // The simulator judges a token's age by its iat on the real clock: start with a token issued two hours ago.
        let issuedOffset = Mutex<TimeInterval>(-7200)
        let tokens = APNsProviderTokens(key: Self.key, clock: clock, wallTime: { Date().addingTimeInterval(issuedOffset.withLock { $0 }) })
        try await Self.withSimulator(tokens: tokens) { simulator, client in
            // Many senders at once see the same expired token: one rejection each, no refresh yet (the
            // token is younger than 20 minutes on our clock, so the clocks disagree).
            let first = await Self.sendAll(client, tokens: (0..<20).map { Self.token($0) }, concurrency: 20)
            #expect(first.count == 20)
            #expect(first.values.allSatisfy { $0.rejection?.status == 403 && $0.rejection?.reason == .expiredProviderToken })
            #expect(tokens.refreshes == 1)
            issuedOffset.withLock { $0 = 0 }
            clock.advance(by: .seconds(20 * 60))
            // Now the first send after the rejection refreshes once, and everyone uses the new token.
            let second = await Self.sendAll(client, tokens: (100..<150).map { Self.token($0) }, concurrency: 50)
            #expect(second.values.allSatisfy { $0.isAccepted })
            #expect(tokens.refreshes == 2)
            #expect(simulator.stats().accepted == 50)
        }
    }
}

extension APNsClientTests {
    @Test("answers that are not APNs's (an empty 410, a proxy's 404 page, a 502, a 200 without apns-id) never say a token is dead")
    func foreignAnswers() async throws {
        var faults = APNsSimulator.Faults()
        faults.foreignAnswersByTokenPrefix = [("0a", .emptyGone), ("0b", .htmlNotFound), ("0c", .emptyOK), ("0d", .badGateway)]
        try await Self.withSimulator(faults: faults) { simulator, client in
            let expected: [(prefix: String, verdict: PushVerdict)] = [
                ("0a", .misconfigured), ("0b", .misconfigured), ("0c", .fateUnknown), ("0d", .fateUnknown),
            ]
            for (prefix, verdict) in expected {
                let result = await client.send([APNsDelivery(Self.notification, to: Self.token(1, prefix: prefix), topic: Self.topic)])[0]
                #expect(result.outcome.verdict == verdict, "\(prefix): \(result.outcome)")
                #expect(result.attempts == 1, "\(prefix) was sent again")
                if let rejection = result.outcome.rejection {
                    #expect(!rejection.isAPNsAnswer, "\(prefix)")
                    #expect(!rejection.reason.isPermanentForToken, "\(prefix): \(rejection.reason)")
                }
            }
            let stats = simulator.stats()
            #expect(stats.accepted == 0)
            #expect(stats.rejected == ["foreign 410": 1, "foreign 404": 1, "foreign 200": 1, "foreign 502": 1])
        }
    }

    @Test("the simulator records each accept with its connection and stream, across GOAWAYs")
    func acceptsNameConnectionAndStream() async throws {
        var faults = APNsSimulator.Faults()
        faults.goAwayAfterStreams = 5
        try await Self.withSimulator(faults: faults) { simulator, client in
            let tokens = (0..<20).map { Self.token($0) }
            for token in tokens {
                #expect(await client.send(Self.notification, to: token, topic: Self.topic).isAccepted)
            }
            let accepts = simulator.accepts()
            #expect(accepts.map(\.token) == tokens)
            #expect(Set(accepts.map { "\($0.connection)/\($0.stream ?? 0)" }).count == 20, "no two accepts on one stream")
            #expect(accepts.allSatisfy { ($0.stream ?? 0) % 2 == 1 }, "client streams are odd")
            #expect(Set(accepts.map(\.connection)).count >= 4, "a GOAWAY every 5 streams: \(accepts)")
            #expect(simulator.accepts(forToken: tokens[7].uppercased()) == [accepts[7]])
        }
    }

    @Test("cancelled: requests waiting for a stream and a retry are reported not sent at once, the written one later with its answer")
    func cancelledReportsEachDelivery() async throws {
        var faults = APNsSimulator.Faults()
        faults.maxConcurrentStreams = 1
        faults.outcomesByTokenPrefix = [("5", .init(status: 503, reason: .serviceUnavailable))]
        faults.latencyByTokenPrefix = [("1", .seconds(3))]
        try await Self.withSimulator(
            faults: faults,
            configure: {
                $0.connections = 1
                $0.stalledAfter = .seconds(10)
                $0.retryPolicy.initialBackoff = .seconds(20)
                $0.retryPolicy.maximumBackoff = .seconds(20)
            },
            { simulator, client in
                #expect(await client.send(Self.notification, to: Self.token(0), topic: Self.topic).isAccepted, "the connection is up")
                // One stream: the 503 is answered at once, then the slow one holds the stream for 3 s, the rest wait.
                let failing = Self.token(1, prefix: "5")
                let slow = Self.token(1, prefix: "1")
                let waiting = (1...20).map { Self.token($0, prefix: "2") }
                let tokens = [failing, slow] + waiting
                let reports = Mutex<[Int: [(result: APNsResult, at: Duration)]]>([:])
                let started = ContinuousClock.now
                let call = Task {
                    await client.send(tokens.map { APNsDelivery(Self.notification, to: $0, topic: Self.topic) }) { index, result in
                        let at = ContinuousClock.now - started
                        reports.withLock { $0[index, default: []].append((result, at)) }
                    }
                }
                try await Task.sleep(for: .milliseconds(500))
                call.cancel()
                await call.value
                let returned = ContinuousClock.now - started
                let byIndex = reports.withLock { $0 }
                #expect(byIndex.count == tokens.count && byIndex.values.allSatisfy { $0.count == 1 }, "each delivery reported once")
                for (index, token) in tokens.enumerated() {
                    guard let (result, at) = byIndex[index]?.first else { continue }
                    if token == slow {
                        #expect(result.outcome.isAccepted, "written before the cancellation: awaited, \(result.outcome)")
                        #expect(at >= .milliseconds(2900), "reported with its answer: \(at)")
                    } else {
                        guard case .notSent(let error) = result.outcome else {
                            Issue.record("\(token): \(result.outcome), not withdrawn")
                            continue
                        }
                        #expect(error.code == .cancelled)
                        #expect(at < .milliseconds(1500), "reported at the cancellation, not with the written one's answer: \(at)")
                    }
                }
                #expect(returned >= .milliseconds(2900), "the call returns when the written one is reported: \(returned)")
                #expect(waiting.allSatisfy { simulator.acceptedCount(forToken: $0) == 0 }, "nothing withdrawn reached APNs")
                #expect(simulator.acceptedCount(forToken: slow) == 1)
                #expect(simulator.stats().rejected["ServiceUnavailable"] == 1, "the 503 was sent once")
            }
        )
    }

    @Test(
        "a cancelled batch: requests still queued end at once as not sent, and so does the retry of a 503; those written are still answered"
    )
    func cancelledBatch() async throws {
        var faults = APNsSimulator.Faults()
        faults.outcomesByTokenPrefix = [("5", .init(status: 503, reason: .serviceUnavailable))]
        faults.latencyByTokenPrefix = [("1", .seconds(2))]
        try await Self.withSimulator(
            faults: faults,
            configure: {
                $0.connections = 1
                $0.maximumStreamsPerConnection = 2
                $0.stalledAfter = .seconds(5)
                $0.retryPolicy.initialBackoff = .seconds(20)
                $0.retryPolicy.maximumBackoff = .seconds(20)
            },
            { simulator, client in
                #expect(await client.send(Self.notification, to: Self.token(0), topic: Self.topic).isAccepted, "the connection is up")
                // Two streams: the 503s go first and are answered at once, then the slow ones take both streams and
                // the rest wait in the pool.
                let failing = (1...2).map { Self.token($0, prefix: "5") }
                let slow = (1...2).map { Self.token($0, prefix: "1") }
                let queued = (1...8).map { Self.token($0, prefix: "2") }
                let tokens = failing + slow + queued
                let started = ContinuousClock.now
                let batch = Task { await client.send(tokens.map { APNsDelivery(Self.notification, to: $0, topic: Self.topic) }) }
                try await Task.sleep(for: .milliseconds(300))
                batch.cancel()
                let results = await batch.value
                let took = ContinuousClock.now - started
                #expect(took < .seconds(6), "the retries did not wait out their 10–20 s backoff: \(took)")
                for (token, result) in zip(tokens, results) {
                    switch token.first {
                    case "5":
                        guard case .notSent(let error) = result.outcome else {
                            Issue.record("\(token): \(result.outcome), not a cancelled retry")
                            continue
                        }
                        #expect(error.code == .cancelled)
                        #expect(result.attempts == 1)
                    case "1":
                        #expect(result.outcome.isAccepted, "written before the cancellation: awaited, \(result.outcome)")
                        #expect(result.latency >= .milliseconds(1900))
                    default:
                        guard case .notSent(let error) = result.outcome else {
                            Issue.record("\(token): \(result.outcome), not withdrawn")
                            continue
                        }
                        #expect(error.code == .cancelled)
                        #expect(result.latency < .milliseconds(1500), "ended at the cancellation, not with the batch: \(result.latency)")
                    }
                }
                #expect(queued.allSatisfy { simulator.acceptedCount(forToken: $0) == 0 }, "nothing withdrawn reached APNs")
                #expect(slow.allSatisfy { simulator.acceptedCount(forToken: $0) == 1 })
                #expect(simulator.stats().rejected["ServiceUnavailable"] == 2, "each 503 was sent once")
            }
        )
    }
}

extension APNsOutcome {
    var rejection: APNsRejection? {
        if case .rejected(let rejection) = self { return rejection }
        return nil
    }
}

@Suite("Several apps and environments in one process")
struct APNsClientsTests {
    @Test("two apps with their own keys send to production and sandbox at once; each endpoint sees only its app")
    func twoAppsTwoEnvironments() async throws {
        let newsKey = P256.Signing.PrivateKey()
        let sportsKey = P256.Signing.PrivateKey()
        let news = try APNsSigningKey(pem: newsKey.pemRepresentation, keyID: "NEWSKEY001", teamID: "NEWSTEAM01")
        let sports = try APNsSigningKey(pem: sportsKey.pemRepresentation, keyID: "SPORTKEY01", teamID: "SPORTTEAM1")
        let keys = ["NEWSKEY001": newsKey.publicKey, "SPORTKEY01": sportsKey.publicKey]
        let production = APNsSimulator(configuration: .init(validation: .init(keys: keys, topics: ["com.example.news"])))
        let sandbox = APNsSimulator(configuration: .init(validation: .init(keys: keys, topics: ["com.example.sports"])))
        let endpoints = APNsEndpoints(
            production: try APNsEndpoint("http://127.0.0.1:\(try await production.start())"),
            sandbox: try APNsEndpoint("http://127.0.0.1:\(try await sandbox.start())")
        )
        let clients = APNsClients()
        let newsClient = try clients.client(for: news, endpoint: endpoints.endpoint(sandbox: false))
        let sportsClient = try clients.client(for: sports, endpoint: endpoints.endpoint(sandbox: true))
        #expect(try clients.client(for: news, endpoint: endpoints.production) === newsClient)
        #expect(clients.count == 2)

        async let newsResults = newsClient.send(
            (0..<100).map { APNsDelivery(APNsClientTests.notification, to: APNsClientTests.token($0), topic: "com.example.news") }
        )
        async let sportsResults = sportsClient.send(
            (0..<60).map { APNsDelivery(APNsClientTests.notification, to: APNsClientTests.token($0, prefix: "5"), topic: "com.example.sports") }
        )
        let (newsDone, sportsDone) = await (newsResults, sportsResults)
        #expect(newsDone.allSatisfy { $0.outcome.isAccepted && $0.attempts == 1 })
        #expect(sportsDone.allSatisfy { $0.outcome.isAccepted })
        #expect(production.stats().accepted == 100)
        #expect(sandbox.stats().accepted == 60)
        #expect(production.acceptedCounts().keys.allSatisfy { !$0.hasPrefix("5") })

        // A topic the sandbox does not serve is rejected there, not sent elsewhere.
        let wrong = await sportsClient.send(APNsClientTests.notification, to: APNsClientTests.token(1), topic: "com.example.news")
        #expect(wrong.rejection?.reason == .topicDisallowed)

        await clients.shutdown()
        try await production.shutdown()
        try await sandbox.shutdown()
    }

    @Test("an endpoint override stands in for both environments; a bad one names the problem")
    func endpointOverride() throws {
        let override = try APNsEndpoints(override: "http://127.0.0.1:2197")
        #expect(override.production == override.sandbox)
        #expect(override.production.description == "http://127.0.0.1:2197")
        #expect(try APNsEndpoints(override: nil) == APNsEndpoints())
        #expect(APNsEndpoints().production.host == "api.push.apple.com")
        #expect(APNsEndpoints().sandbox.host == "api.sandbox.push.apple.com")
        #expect(throws: APNsEndpointError.self) { try APNsEndpoints(override: "ftp://example.com") }
    }
}

@Suite("Endpoints")
struct APNsEndpointTests {
    @Test("production, sandbox, https with and without a port, http with a port, IPv6")
    func parse() throws {
        #expect(try APNsEndpoint("production") == .production)
        #expect(try APNsEndpoint("sandbox") == .sandbox)
        #expect(try APNsEndpoint("https://apns.example.com") == APNsEndpoint(host: "apns.example.com", port: 443, usesTLS: true))
        #expect(try APNsEndpoint("https://apns.example.com:2197") == APNsEndpoint(host: "apns.example.com", port: 2197, usesTLS: true))
        #expect(try APNsEndpoint("http://127.0.0.1:2197/") == APNsEndpoint(host: "127.0.0.1", port: 2197, usesTLS: false))
        #expect(try APNsEndpoint("http://[::1]:2197") == APNsEndpoint(host: "::1", port: 2197, usesTLS: false))
        #expect(try APNsEndpoint("http://[::1]:2197").description == "http://[::1]:2197")
    }

    @Test(
        "bad endpoints say what is wrong",
        arguments: ["api.push.apple.com", "http://localhost", "https://h:0", "https://h:x", "https://h/3/device", "https://"]
    )
    func bad(text: String) {
        #expect(throws: APNsEndpointError.self) { try APNsEndpoint(text) }
    }
}
