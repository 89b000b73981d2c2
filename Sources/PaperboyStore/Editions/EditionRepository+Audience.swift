import Foundation
import Logging
import PaperboyCore
import PostgresNIO

extension EditionRepository {
    /// The providers a broadcast of the edition in `environment` would send through: those of which wave 1's
    /// audience has at least one device. A broadcast checks these providers' credentials, and no others.
    ///
    /// Each provider is one `EXISTS` over the audience: it stops at the first device, and reads the whole
    /// audience (as planning wave 1 does anyway) only when the provider has none.
    /// - Throws: ``StoreError`` `.notFound` naming `edition` when there is no such edition.
    public func audienceProviders(editionID: UUID, environment: APNsEnvironment, logger: Logger) async throws -> Set<PushProvider> {
        let publications = try await client.query(
            "SELECT p.id, p.app_id, p.slug, p.title FROM editions e JOIN publications p ON p.id = e.publication_id WHERE e.id = \(editionID)",
            logger: logger
        )
        var publication: Publication?
        for try await row in publications.decode((Int, Int, String, String?).self) {
            publication = Publication(id: row.0, appID: row.1, slug: row.2, title: row.3)
        }
        guard let publication else {
            throw StoreError(code: .notFound, field: "edition", message: "there is no edition \(editionID.uuidString.lowercased())")
        }
        let audience = WaveAudience.targets(of: publication, environment: environment)
        let query = audience.query(
            """
            SELECT EXISTS (SELECT 1 FROM devices d WHERE {audience} AND d.provider = \(PushProvider.apns.storageCode)),
                EXISTS (SELECT 1 FROM devices d WHERE {audience} AND d.provider = \(PushProvider.fcm.storageCode))
            """
        )
        var providers: Set<PushProvider> = []
        for try await (apns, fcm) in try await client.query(query, logger: logger).decode((Bool, Bool).self) {
            if apns { providers.insert(.apns) }
            if fcm { providers.insert(.fcm) }
        }
        return providers
    }
}
