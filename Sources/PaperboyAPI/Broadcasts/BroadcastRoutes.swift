import Foundation
import Hummingbird
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore

/// `/v1/broadcasts` (admin): start a broadcast of an edition (or attach to the one it has), follow its
/// progress, cancel it. The same operations as `paperboy broadcast`.
struct BroadcastRoutes {
    let broadcasts: BroadcastRepository
    let editions: EditionRepository
    let apps: AppRepository
    let maxBodyBytes: Int

    func add(to group: RouterGroup<APIRequestContext>) {
        group.post("broadcasts", use: start)
        group.get("broadcasts/{id}", use: show)
        group.post("broadcasts/{id}/cancel", use: cancel)
    }

    /// The body of `POST /v1/broadcasts`: the edition, the environment, and the ``BroadcastOptions``
    /// fields beside them (`window` or `capacity`, `cohorts`, `waveInterval`, `maxPushesPerDevice`,
    /// `alertLastResort`, `jitter`, `androidPriority`, `dormantAfter`), each optional.
    struct StartBody: Codable {
        var edition: UUID
        var environment: APNsEnvironment
        var dryRun: Bool
        var options: BroadcastOptions

        enum CodingKeys: String, CodingKey {
            case edition, environment, dryRun
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            edition = try container.decode(UUID.self, forKey: .edition)
            environment = try container.decodeIfPresent(APNsEnvironment.self, forKey: .environment) ?? .production
            dryRun = try container.decodeIfPresent(Bool.self, forKey: .dryRun) ?? false
            options = try BroadcastOptions(from: decoder)
        }

        /// The fields as they were read (``Request/decodeJSON(_:limit:allowedValues:)`` checks what is kept).
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(edition, forKey: .edition)
            try container.encode(environment, forKey: .environment)
            try container.encode(dryRun, forKey: .dryRun)
            try options.encode(to: encoder)
        }
    }

    /// `POST`: 201 with the new broadcast's progress, or 200 with the one the edition already has
    /// (`"created": false`); with `"dryRun": true`, 200 with wave 1's plan and nothing stored.
    @Sendable func start(_ request: Request, context: APIRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(
            StartBody.self,
            limit: maxBodyBytes,
            allowedValues: ["environment": "production, sandbox", "maxPushesPerDevice": "\"auto\", 1 … 10"]
        )
        let now = Date()
        if body.dryRun {
            let plan = try await broadcasts.plan(
                editionID: body.edition,
                environment: body.environment,
                options: body.options,
                now: now,
                logger: context.logger
            )
            return try Self.json(["plan": plan], status: .ok)
        }
        try await BroadcastPreflight.check(
            editionID: body.edition,
            environment: body.environment,
            editions: editions,
            apps: apps,
            logger: context.logger
        )
        let start = try await broadcasts.start(
            editionID: body.edition,
            environment: body.environment,
            options: body.options,
            origin: "api",
            now: now,
            audit: AuditEntry.admin(request, action: "start broadcast", detail: "started \(body.environment.rawValue)"),
            logger: context.logger
        )
        guard let progress = try await broadcasts.progress(id: start.broadcast.id, logger: context.logger) else {
            throw APIError(.notFound, code: .notFound, field: "edition", message: "the broadcast disappeared")
        }
        var response = try Self.json(Started(created: start.created, broadcast: progress), status: start.created ? .created : .ok)
        response.headers[.location] = "/v1/broadcasts/\(start.broadcast.id.uuidString.lowercased())"
        return response
    }

    /// `GET /v1/broadcasts/{id}`: progress per wave and cohort, as `paperboy broadcast status --json`.
    @Sendable func show(_ request: Request, context: APIRequestContext) async throws -> Response {
        let id = try Self.id(context)
        guard let progress = try await broadcasts.progress(id: id, logger: context.logger) else {
            throw APIError(.notFound, code: .notFound, field: "id", message: "there is no broadcast \(id.uuidString.lowercased())")
        }
        return try Self.json(progress, status: .ok)
    }

    /// `POST /v1/broadcasts/{id}/cancel`: 200 with the progress; 409 naming `state` when it has ended.
    @Sendable func cancel(_ request: Request, context: APIRequestContext) async throws -> Response {
        let id = try Self.id(context)
        _ = try await broadcasts.cancel(id: id, now: Date(), audit: AuditEntry.admin(request, action: "cancel broadcast"), logger: context.logger)
        guard let progress = try await broadcasts.progress(id: id, logger: context.logger) else {
            throw APIError(.notFound, code: .notFound, field: "id", message: "there is no broadcast \(id.uuidString.lowercased())")
        }
        return try Self.json(progress, status: .ok)
    }

    struct Started: Encodable {
        var created: Bool
        var broadcast: BroadcastProgress
    }

    private static func id(_ context: APIRequestContext) throws -> UUID {
        try RequestValue.uuid(context.parameters.get("id"), field: "id", what: "a broadcast id is a UUID")
    }

    /// Timestamps with milliseconds (truncated), `2026-11-23T05:00:00.123Z`.
    static let timestamp = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func json(_ value: some Encodable, status: HTTPResponse.Status) throws -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encode(value)))
        )
    }

    /// A broadcast's JSON: keys sorted, timestamps as ``timestamp``.
    static func encode(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A format style, not an ISO8601DateFormatter per date: making one costs about 80 µs (an ICU formatter), and a
        // status at 16 cohorts and two waves has over a hundred dates: most of serve's CPU for the request.
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(Self.timestamp))
        }
        return try encoder.encode(value)
    }
}
