import Crypto
import Foundation
import Hummingbird
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore

/// `/v1/editions`: operators publish (admin); devices read the latest edition of a publication, or one
/// by id, with a strong `ETag`, `Cache-Control` and `Vary: X-API-Key` so that a shared cache (a CDN, a
/// reverse proxy) can absorb the wake-up load without handing one app's edition to another, or to a
/// request without a key.
struct EditionRoutes {
    let editions: EditionRepository
    let maxBodyBytes: Int
    /// Editions never change once published: the encoded body and ETag of the recent ones are kept, so
    /// the wake-up load of a broadcast reads the database once per edition, not once per device.
    let cache = EditionCache(capacity: 32)

    /// How long a CDN or device may reuse an edition response without asking again. Short, because
    /// `latest` changes when the next edition is published.
    static let cacheMaxAgeSeconds = 60

    /// The response headers that make an edition cacheable by a shared cache, and safely so.
    ///
    /// The same URL answers each app with its own edition (`latest?publication=morning` is app A's for A's
    /// key, app B's for B's) and no edition without a key, so the response depends on `X-API-Key`, and RFC
    /// 9111 (4.1) has a cache that stores it keep one copy per value of that header: a request without a
    /// key, or with another app's, is never answered from the copy. This costs no hit rate: the key
    /// identifies an app (it ships in the app's binary), not a reader, so the millions of devices of one
    /// app asking at 05:00 share one cached copy per edition URL. `private` would keep every shared cache
    /// out of it, which is what the cache is in front for; public per-app URLs without a key would need
    /// every app to change its requests. A cache that ignores `Vary` (Cloudflare does, except for images)
    /// must put the header into its cache key or not cache these routes: docs/scaling.md says how.
    static func cacheHeaders(etag: String) -> HTTPFields {
        [.eTag: etag, .cacheControl: "public, max-age=\(cacheMaxAgeSeconds)", .vary: DeviceKeyMiddleware.header.rawName]
    }

    func addPublishing(to group: RouterGroup<APIRequestContext>) {
        group.post("editions", use: publish)
    }

    func addReading(to group: RouterGroup<APIRequestContext>) {
        group.get("editions/latest", use: latest)
        group.get("editions/{id}", use: show)
    }

    /// `POST` (admin): validates and stores the edition file; 201 with the stored edition and its id.
    /// `?app=ID` picks the app when more than one has a publication by that id. The store validates, and
    /// its refusals answer 400/404/409 naming the field.
    @Sendable func publish(_ request: Request, context: APIRequestContext) async throws -> Response {
        let manifest = try await request.decodeJSON(EditionManifest.self, limit: maxBodyBytes)
        let appID = try request.uri.queryParameters.get("app").map { text throws(RequestValue.Refusal) in
            try RequestValue.id(text, field: "app", what: "app must be an app id, a number from 1 (see GET /v1/apps)")
        }
        let audit = AuditEntry.admin(request, action: "publish edition", detail: "\(manifest.publication) \(manifest.issueDate)")
        let edition = try await editions.publish(manifest, appID: appID, check: BroadcastPreflight.checkPushes, audit: audit, logger: context.logger)
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        headers[.location] = "/v1/editions/\(edition.id.uuidString.lowercased())"
        return Response(status: .created, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try Self.encode(edition))))
    }

    /// `GET /v1/editions/latest?publication=P` (device key): the newest edition of the app's publication.
    @Sendable func latest(_ request: Request, context: APIRequestContext) async throws -> Response {
        let app = try context.requireApp()
        try Self.checkIfNoneMatch(request)
        guard let text = request.uri.queryParameters.get("publication"), !text.isEmpty else {
            throw APIError.invalid("publication", "publication is required, like ?publication=morning")
        }
        let publication = try RequestValue.publication(text)
        guard let edition = try await editions.latest(appID: app.id, publication: publication, logger: context.logger) else {
            throw APIError(.notFound, code: .notFound, field: "publication", message: "there is no edition of \(publication)")
        }
        return try Self.cacheableResponse(edition, request: request)
    }

    /// `GET /v1/editions/{id}` (device key): one edition of the app.
    @Sendable func show(_ request: Request, context: APIRequestContext) async throws -> Response {
        let app = try context.requireApp()
        try Self.checkIfNoneMatch(request)
        let id = try RequestValue.uuid(context.parameters.get("id"), field: "id", what: "an edition id is a UUID")
        if let cached = cache[id] {
            guard cached.appID == app.id else { throw Self.unknown(id) }
            return Self.response(cached, request: request)
        }
        // Another app's edition answers as unknown: an app key says nothing about other apps.
        guard let edition = try await editions.find(id: id, logger: context.logger) else { throw Self.unknown(id) }
        let encoded = try EditionCache.Entry(edition)
        cache.insert(encoded, for: id)
        guard edition.appID == app.id else { throw Self.unknown(id) }
        return Self.response(encoded, request: request)
    }

    static func unknown(_ id: UUID) -> APIError {
        APIError(.notFound, code: .notFound, field: "id", message: "there is no edition \(id.uuidString.lowercased())")
    }

    /// The edition's JSON with a strong `ETag` (the body's SHA-256), or 304 when `If-None-Match` has it.
    static func cacheableResponse(_ edition: Edition, request: Request) throws -> Response {
        response(try EditionCache.Entry(edition), request: request)
    }

    static func response(_ entry: EditionCache.Entry, request: Request) -> Response {
        // A 304 carries the same Vary and Cache-Control as the 200 would (RFC 9110 15.4.5), so that a cache
        // revalidating its copy keeps it keyed by the app.
        var headers = cacheHeaders(etag: entry.etag)
        if let ifNoneMatch = request.headers[.ifNoneMatch], matches(ifNoneMatch, etag: entry.etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: entry.body))
    }

    /// Refuses an `If-None-Match` with a character outside visible ASCII and space (400 naming the
    /// header), as `openapi.yaml` constrains it: an ETag is never anything else, so such a value is a
    /// client's mistake, not a tag to compare. (Control characters never get this far: the HTTP parser
    /// refuses them.)
    static func checkIfNoneMatch(_ request: Request) throws(APIError) {
        guard let value = request.headers[.ifNoneMatch] else { return }
        guard value.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }) else {
            throw APIError.invalid("If-None-Match", "If-None-Match may hold only visible ASCII characters and spaces, like \"<etag>\"")
        }
    }

    /// `If-None-Match` is a list of tags or `*`; weak comparison (RFC 9110 13.1.2) ignores `W/`.
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }

    static func encode(_ edition: Edition) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(edition)
    }
}
