import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PaperboyAPI
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// An app with a device key and the morning and evening publications, in a fresh database.
struct APIFixture {
    let db: TestDatabase
    let app: App
    let apiKey: String
    static let adminToken = "test-admin-token-0123456789"
    /// The app's APNs key: a real P-256 key in a file that lives as long as the test (starting a broadcast
    /// checks that it can be loaded).
    let keyFile: String

    /// - Parameters:
    ///   - testing: `.router` (the default) runs requests through the router; `.live`, through a real HTTP/1.1
    ///     connection on loopback.
    ///   - configure: changes to the API's configuration, e.g. its cache times.
    static func with(
        migrated: Bool = true,
        testing: TestingSetup = .router,
        configure: @escaping @Sendable (inout APIConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (APIFixture, any TestClientProtocol) async throws -> Void
    ) async throws {
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-api-\(UUID().uuidString).p8").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        try await TestDatabase.with(migrated: migrated) { db in
            var app: App?
            var key = ""
            if migrated {
                let created = try await AppRepository(client: db.client).create(
                    try NewApp(bundleID: "com.example.news", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: keyFile),
                    logger: db.logger
                )
                for slug in ["morning", "evening"] {
                    _ = try await PublicationRepository(client: db.client).add(appID: created.app.id, slug: slug, title: nil, logger: db.logger)
                }
                app = created.app
                key = created.apiKey.secret
            }
            let fixture = APIFixture(
                db: db,
                app: app ?? App(id: 0, bundleID: "", createdAt: Date()),
                apiKey: key,
                keyFile: keyFile
            )
            let application = buildApplication(
                client: db.client,
                configuration: {
                    var configuration = APIConfiguration(host: "127.0.0.1", port: 0, adminToken: adminToken)
                    // The suite runs in parallel with CPU-heavy APNs tests on two cores: the first query of
                    // a fresh pool can take seconds there. The 2-second production default is not what
                    // these tests check.
                    configuration.readinessTimeout = .seconds(30)
                    configure(&configuration)
                    return configuration
                }(),
                logger: db.logger
            )
            try await application.test(testing) { client in try await body(fixture, client) }
        }
    }
}

/// A token in the fixture's style: `byte` repeated, 32 bytes (64 hex characters) by default.
func token(_ byte: String = "ab", bytes: Int = 32) -> String { String(repeating: byte, count: bytes) }

let validRegistration = """
    {"environment": "production", "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", "tier": "large", "autoDownload": true, \
    "alertsAuthorized": false, "appVersion": "5.1", "osVersion": "17.4", "model": "iPad13,1", "locale": "ja_JP"}
    """

extension TestClientProtocol {
    @discardableResult
    func send(
        _ method: HTTPRequest.Method,
        _ uri: String,
        key: String? = nil,
        headers: HTTPFields = [:],
        body: String? = nil
    ) async throws -> TestResponse {
        var headers = headers
        if let key { headers[HTTPField.Name("X-API-Key")!] = key }
        return try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { $0 }
    }
}

extension TestResponse {
    var text: String { String(buffer: body) }

    func json() throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The `error` object of the API's JSON error body.
    func apiError() throws -> APIError.Body.Detail {
        #expect(headers[.contentType]?.hasPrefix("application/json") == true)
        return try JSONDecoder().decode(APIError.Body.self, from: Data(text.utf8)).error
    }
}
