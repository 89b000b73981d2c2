import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

@Suite("Edition API")
struct EditionRoutesTests {
    static let sha = String(repeating: "ab", count: 32)
    static let admin: HTTPFields = [.authorization: "Bearer \(APIFixture.adminToken)"]

    static func file(_ publication: String = "morning", issueDate: String = "2026-11-23", sha256: String = sha) -> String {
        """
        {"publication": "\(publication)", "issueDate": "\(issueDate)", "deadline": "2099-11-23T09:00:00+09:00", \
        "tiers": {"large": {"bundles": [{"url": "https://cdn.example.com/\(issueDate)/large-1.zip", "bytes": 52428800, "sha256": "\(sha256)"}]}}, \
        "pages": [{"number": 1, "title": "Front page"}]}
        """
    }

    @Test("POST publishes (201 with id); devices read it by id and as latest, with ETag, 304 and Cache-Control")
    func publishAndRead() async throws {
        try await APIFixture.with { fixture, client in
            let published = try await client.send(.post, "/v1/editions", headers: Self.admin, body: Self.file())
            #expect(published.status == .created)
            let id = try #require(try published.json()["id"] as? String)
            #expect(published.headers[.location] == "/v1/editions/\(id)")
            #expect(try published.json()["publication"] as? String == "morning")

            let shown = try await client.send(.get, "/v1/editions/\(id)", key: fixture.apiKey)
            #expect(shown.status == .ok)
            #expect(try shown.json()["issueDate"] as? String == "2026-11-23")
            #expect(shown.headers[.cacheControl] == "public, max-age=60")
            #expect(shown.headers[.vary] == "X-API-Key", "a shared cache keeps one copy per app key")
            let etag = try #require(shown.headers[.eTag])
            #expect(etag.hasPrefix("\"") && etag.count == 66)

            let latest = try await client.send(.get, "/v1/editions/latest?publication=morning", key: fixture.apiKey)
            #expect(latest.status == .ok)
            #expect(try latest.json()["id"] as? String == id)
            #expect(latest.headers[.eTag] == etag)

            let unchanged = try await client.send(.get, "/v1/editions/\(id)", key: fixture.apiKey, headers: [.ifNoneMatch: etag])
            #expect(unchanged.status == .notModified)
            #expect(unchanged.body.readableBytes == 0)
            #expect(unchanged.headers[.eTag] == etag)
            #expect(unchanged.headers[.vary] == "X-API-Key", "a 304 varies as its 200 does")
            #expect(unchanged.headers[.cacheControl] == "public, max-age=60")
            let other = try await client.send(.get, "/v1/editions/\(id)", key: fixture.apiKey, headers: [.ifNoneMatch: "\"other\""])
            #expect(other.status == .ok)
            // A value no ETag could be (outside visible ASCII) is the client's mistake, as openapi.yaml says.
            for uri in ["/v1/editions/\(id)", "/v1/editions/latest?publication=morning"] {
                let garbled = try await client.send(.get, uri, key: fixture.apiKey, headers: [.ifNoneMatch: "\u{84}"])
                #expect(garbled.status == .badRequest, "\(uri)")
                #expect(try garbled.apiError().field == "If-None-Match", "\(uri)")
            }

            let next = try await client.send(.post, "/v1/editions", headers: Self.admin, body: Self.file(issueDate: "2026-11-24"))
            let nextID = try #require(try next.json()["id"] as? String)
            let newer = try await client.send(.get, "/v1/editions/latest?publication=morning", key: fixture.apiKey, headers: [.ifNoneMatch: etag])
            #expect(newer.status == .ok)
            #expect(try newer.json()["id"] as? String == nextID)
        }
    }

    @Test("only edition reads are cacheable: errors, registrations and admin reads say no-store")
    func neverStored() async throws {
        try await APIFixture.with { fixture, client in
            let published = try await client.send(.post, "/v1/editions", headers: Self.admin, body: Self.file())
            #expect(published.headers[.cacheControl] == "no-store")
            let id = try #require(try published.json()["id"] as? String)
            let answers = [
                ("no key", try await client.send(.get, "/v1/editions/\(id)"), HTTPResponse.Status.unauthorized),
                ("a key of no app", try await client.send(.get, "/v1/editions/\(id)", key: "pb_unknown"), .unauthorized),
                ("no edition", try await client.send(.get, "/v1/editions/latest?publication=evening", key: fixture.apiKey), .notFound),
                ("a registration", try await client.send(.get, "/v1/devices/\(token())", key: fixture.apiKey), .notFound),
                ("the apps", try await client.send(.get, "/v1/apps", headers: Self.admin), .ok),
                ("health", try await client.send(.get, "/health/live"), .ok),
            ]
            for (what, answer, status) in answers {
                #expect(answer.status == status, "\(what)")
                #expect(answer.headers[.cacheControl] == "no-store", "\(what)")
                #expect(answer.headers[.vary] == nil, "\(what)")
            }
        }
    }

    @Test("bad files answer 400 naming the field; the same day again 409 naming issueDate; unknown publication 404")
    func refusals() async throws {
        try await APIFixture.with { fixture, client in
            let badSHA = try await client.send(.post, "/v1/editions", headers: Self.admin, body: Self.file(sha256: "xyz"))
            #expect(badSHA.status == .badRequest)
            #expect(try badSHA.apiError().field == "tiers.large.bundles[0].sha256")

            let missing = try await client.send(.post, "/v1/editions", headers: Self.admin, body: #"{"publication": "morning"}"#)
            #expect(missing.status == .badRequest)
            #expect(try missing.apiError().field == "issueDate")

            let unknown = try await client.send(.post, "/v1/editions", headers: Self.admin, body: Self.file("weekly"))
            #expect(unknown.status == .notFound)
            #expect(try unknown.apiError().field == "publication")

            #expect(try await client.send(.post, "/v1/editions", headers: Self.admin, body: Self.file()).status == .created)
            let again = try await client.send(.post, "/v1/editions", headers: Self.admin, body: Self.file())
            #expect(again.status == .conflict)
            #expect(try again.apiError().field == "issueDate")

            let noAdmin = try await client.send(.post, "/v1/editions", key: fixture.apiKey, body: Self.file(issueDate: "2026-11-25"))
            #expect(noAdmin.status == .unauthorized)
        }
    }

    @Test("devices: 404 for unknown editions and publications, 400 for a bad id, 401 without a key, 405 for other methods")
    func deviceErrors() async throws {
        try await APIFixture.with { fixture, client in
            let none = try await client.send(.get, "/v1/editions/latest?publication=evening", key: fixture.apiKey)
            #expect(none.status == .notFound)
            #expect(try none.apiError().field == "publication")
            let noParameter = try await client.send(.get, "/v1/editions/latest", key: fixture.apiKey)
            #expect(noParameter.status == .badRequest)
            #expect(try noParameter.apiError().field == "publication")

            let unknown = try await client.send(.get, "/v1/editions/\(UUID().uuidString.lowercased())", key: fixture.apiKey)
            #expect(unknown.status == .notFound)
            #expect(try unknown.apiError().field == "id")
            let badID = try await client.send(.get, "/v1/editions/not-a-uuid", key: fixture.apiKey)
            #expect(badID.status == .badRequest)
            #expect(try badID.apiError().field == "id")

            #expect(try await client.send(.get, "/v1/editions/latest?publication=morning").status == .unauthorized)

            // Another app's edition is unknown to this app's devices.
            let otherCreated = try await AppRepository(client: fixture.db.client).create(
                try NewApp(bundleID: "com.example.other", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: "/keys/other.p8"),
                logger: fixture.db.logger
            )
            let other = otherCreated.app
            let otherKey = otherCreated.apiKey.secret
            _ = try await PublicationRepository(client: fixture.db.client).add(appID: other.id, slug: "weekly", title: nil, logger: fixture.db.logger)
            let foreign = try await client.send(.post, "/v1/editions?app=\(other.id)", headers: Self.admin, body: Self.file("weekly"))
            #expect(foreign.status == .created)
            let foreignID = try #require(try foreign.json()["id"] as? String)
            #expect(try await client.send(.get, "/v1/editions/\(foreignID)", key: fixture.apiKey).status == .notFound)
            // Also once the edition is cached: read by its own app, then asked for by this one.
            #expect(try await client.send(.get, "/v1/editions/\(foreignID)", key: otherKey).status == .ok)
            #expect(try await client.send(.get, "/v1/editions/\(foreignID)", key: fixture.apiKey).status == .notFound)

            let deleted = try await client.send(.delete, "/v1/editions/\(UUID().uuidString)", key: fixture.apiKey)
            #expect(deleted.status == .methodNotAllowed)
            #expect(deleted.headers[.allow] == "GET, HEAD")
            let listed = try await client.send(.get, "/v1/editions", headers: Self.admin)
            #expect(listed.status == .methodNotAllowed)
            #expect(listed.headers[.allow] == "POST")
        }
    }

    @Test("an edition whose push would exceed APNs' 4096 bytes is refused with 400 naming tiers.large.bundles; nothing is stored")
    func oversizedPushIsRefused() async throws {
        try await APIFixture.with { fixture, client in
            let bundles = (1...60).map { index in
                #"{"url": "https://cdn.example.com/2026-11-23/morning/a-rather-long-path-for-every-page/large-\#(index).zip", "bytes": 1000, "sha256": "\#(Self.sha)"}"#
            }
            let file = """
                {"publication": "morning", "issueDate": "2026-11-23", "deadline": "2099-11-23T09:00:00+09:00", \
                "tiers": {"large": {"bundles": [\(bundles.joined(separator: ", "))]}}, "pages": [{"number": 1, "title": "Front page"}]}
                """
            let refused = try await client.send(.post, "/v1/editions", headers: Self.admin, body: file)
            #expect(refused.status == .badRequest)
            let error = try refused.apiError()
            #expect(error.field == "tiers.large.bundles")
            #expect(error.message.contains("4096"))
            let latest = try await client.send(.get, "/v1/editions/latest?publication=morning", key: fixture.apiKey)
            #expect(latest.status == .notFound)
        }
    }
}
