import Foundation
import Hummingbird
import PaperboyCore
import PaperboyStore

/// `/v1/origins` (admin): the content APIs woken devices download from and the capacity each serves, shared by every
/// broadcast of the publications that point at one; and which origin a publication points at. The same operations
/// as `paperboy origins` and `paperboy publications set-origin`.
struct OriginRoutes {
    let origins: OriginRepository
    let publications: PublicationRepository
    let maxBodyBytes: Int

    func add(to group: RouterGroup<APIRequestContext>) {
        group.get("origins") { _, context in
            OriginList(origins: try await origins.list(logger: context.logger))
        }
        group.post("origins") { request, context in
            let body = try await request.decodeJSON(NewOrigin.self, limit: maxBodyBytes)
            let audit = AuditEntry.admin(request, action: "add origin", detail: "\(body.name) at \(body.capacity)/s")
            let origin = try await origins.add(name: body.name, capacity: body.capacity, audit: audit, logger: context.logger)
            return EditedResponse(status: .created, response: Answer(origin))
        }
        group.put("origins/{name}") { request, context in
            let name = context.parameters.get("name") ?? ""
            let body = try await request.decodeJSON(Capacity.self, limit: maxBodyBytes)
            let audit = AuditEntry.admin(request, action: "set origin capacity", detail: "\(name) at \(body.capacity)/s")
            return Answer(try await origins.setCapacity(name: name, capacity: body.capacity, audit: audit, logger: context.logger))
        }
        group.put("apps/{app}/publications/{publication}/origin") { request, context in
            let appID = try RequestValue.id(context.parameters.get("app"), field: "app", what: "an app id is a positive integer (see GET /v1/apps)")
            let slug = context.parameters.get("publication") ?? ""
            let body = try await request.decodeJSON(PublicationOrigin.self, limit: maxBodyBytes)
            guard let publication = try await publications.find(appID: appID, slug: slug, logger: context.logger) else {
                throw APIError(.notFound, code: .notFound, field: "publication", message: "app \(appID) has no publication \(slug)")
            }
            let audit = AuditEntry.admin(
                request,
                action: "set publication origin",
                appID: appID,
                detail: "\(slug): \(body.origin ?? "no origin")"
            )
            return Answer(try await publications.setOrigin(publication, origin: body.origin, audit: audit, logger: context.logger))
        }
    }

    struct OriginList: ResponseEncodable {
        var origins: [ContentOrigin]
    }

    struct NewOrigin: Codable {
        var name: String
        var capacity: Double
    }

    struct Capacity: Codable {
        var capacity: Double
    }

    /// `{"origin": "content-api"}`, or `{"origin": null}` for none. The key is required: `{}` is refused rather than
    /// read as "none" (a typo in the key would otherwise clear the publication's origin).
    struct PublicationOrigin: Codable {
        var origin: String?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.origin) else {
                throw DecodingError.keyNotFound(
                    CodingKeys.origin,
                    .init(codingPath: [], debugDescription: "origin is required: an origin's name, or null for none")
                )
            }
            origin = try container.decodeIfPresent(String.self, forKey: .origin)
        }
    }
}
