import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import PaperboyStore
import PaperboyTesting
import Synchronization
import Testing

@testable import PaperboyAPI

/// Counts the device-key lookups that reach the database.
final class LookupCounter: Sendable {
    private let calls = Mutex(0)
    var count: Int { calls.withLock { $0 } }
    func record() { calls.withLock { $0 += 1 } }
}

/// A `ContinuousClock` instant the tests move by hand.
final class ManualInstant: Sendable {
    private let offset = Mutex(Duration.zero)
    private let origin = ContinuousClock.now
    func advance(_ by: Duration) { offset.withLock { $0 += by } }
    var now: @Sendable () -> ContinuousClock.Instant { { [self] in origin + offset.withLock { $0 } } }
}

@Suite("Unknown device keys are cheap")
struct UnknownKeyTests {
    /// The API over a fresh database with one app, its key lookups counted.
    static func withApp(
        rateLimit: DeviceRateLimit?,
        _ body: @escaping @Sendable (String, LookupCounter, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await TestDatabase.with { db in
            let apps = AppRepository(client: db.client)
            let (app, key) = try await apps.create(
                try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
                logger: db.logger
            )
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            var configuration = APIConfiguration(host: "127.0.0.1", port: 0, adminToken: APIFixture.adminToken)
            configuration.deviceRateLimit = rateLimit
            // Nothing here is about expiry (AppDirectoryTests step a clock through it): on a loaded machine these
            // tests have taken longer than the 30 s default, and an entry that expired mid-test was looked up again.
            configuration.appCacheTimeToLive = .seconds(3600)
            configuration.unknownKeyCacheTimeToLive = .seconds(3600)
            let lookups = LookupCounter()
            let router = buildRouter(client: db.client, configuration: configuration) { key, logger in
                lookups.record()
                return try await apps.find(apiKey: key, logger: logger)
            }
            try await Application(router: router).test(.router) { client in try await body(key.secret, lookups, client) }
        }
    }

    @Test("500 requests with the same wrong key, 100 at once: one database lookup, every one answered 401 with the JSON error body")
    func sameWrongKey() async throws {
        try await Self.withApp(rateLimit: nil) { key, lookups, client in
            let wrong = "pb_" + String(repeating: "0", count: 64)
            for _ in 0..<5 {
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<100 {
                        group.addTask { try await client.send(.get, "/v1/devices/\(token())", key: wrong).status }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { $0 == .unauthorized })
            }
            let answer = try await client.send(.put, "/v1/devices/\(token())", key: wrong, body: validRegistration)
            #expect(answer.status == .unauthorized)
            let error = try answer.apiError()
            #expect(error.code == .unauthorized)
            #expect(error.field == "X-API-Key")
            #expect(lookups.count == 1)

            // The app's own key is unaffected: one more lookup, then cached.
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: key).status == .notFound)
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: key).status == .notFound)
            #expect(lookups.count == 2)
        }
    }

    @Test("200 different wrong keys from one address: the rate limit stops all but its burst before the lookup")
    func manyWrongKeys() async throws {
        let clock = ManualClock()
        try await Self.withApp(rateLimit: DeviceRateLimit(burst: 5, perSecond: 0.01, now: clock.now)) { key, lookups, client in
            let here: HTTPFields = [SecurityTests.clientAddress: "203.0.113.9"]
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<200 {
                let wrong = "pb_" + String(format: "%064x", index)
                statuses.append(try await client.send(.get, "/v1/devices/\(token())", key: wrong, headers: here).status)
            }
            #expect(statuses.prefix(5).allSatisfy { $0 == .unauthorized })
            #expect(statuses.dropFirst(5).allSatisfy { $0 == .tooManyRequests })
            #expect(lookups.count == 5)
            // The limit is the address's, whatever key it sends: its right key waits as well.
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: key, headers: here).status == .tooManyRequests)
            #expect(lookups.count == 5)
            let elsewhere: HTTPFields = [SecurityTests.clientAddress: "198.51.100.2"]
            #expect(try await client.send(.get, "/v1/devices/\(token())", key: key, headers: elsewhere).status == .notFound)
        }
    }

    @Test("a key unknown when first tried works once the unknown-key time to live has passed, not before")
    func keyCreatedLater() async throws {
        let clock = ManualInstant()
        let created = Mutex(false)
        let lookups = LookupCounter()
        let app = App(
            id: 7,
            bundleID: "com.example.news",
            apns: try APNsCredentials(teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/news.p8"),
            createdAt: Date()
        )
        let directory = AppDirectory(
            lookup: { _, _ in
                lookups.record()
                return created.withLock { $0 } ? app : nil
            },
            timeToLive: .seconds(30),
            unknownTimeToLive: .seconds(30),
            now: clock.now
        )
        let key = DeviceAPIKey(secret: "pb_created_later")
        let logger = Logger(label: "test")
        #expect(try await directory.app(forKey: key, logger: logger) == nil)
        created.withLock { $0 = true }
        clock.advance(.seconds(29))
        #expect(try await directory.app(forKey: key, logger: logger) == nil, "still remembered as unknown")
        #expect(lookups.count == 1)
        clock.advance(.seconds(1))
        #expect(try await directory.app(forKey: key, logger: logger)?.id == 7)
        #expect(lookups.count == 2)
    }

    @Test("at most unknownCapacity unknown keys are remembered, the oldest forgotten first")
    func boundedUnknownKeys() async throws {
        let clock = ManualInstant()
        let lookups = LookupCounter()
        let directory = AppDirectory(
            lookup: { _, _ in
                lookups.record()
                return nil
            },
            timeToLive: .seconds(30),
            unknownCapacity: 3,
            now: clock.now
        )
        let logger = Logger(label: "test")
        for index in 0..<10 {
            _ = try await directory.app(forKey: DeviceAPIKey(secret: "wrong \(index)"), logger: logger)
            #expect(await directory.unknownCount <= 3)
        }
        #expect(lookups.count == 10)
        _ = try await directory.app(forKey: DeviceAPIKey(secret: "wrong 9"), logger: logger)
        #expect(lookups.count == 10, "the newest is remembered")
        _ = try await directory.app(forKey: DeviceAPIKey(secret: "wrong 0"), logger: logger)
        #expect(lookups.count == 11, "the oldest was forgotten")
    }
}
