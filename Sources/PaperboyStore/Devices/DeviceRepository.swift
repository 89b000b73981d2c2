import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Devices in PostgreSQL.
public struct DeviceRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Creates or updates a device in one statement, so that a registration is never half-written.
    ///
    /// A registration makes a deleted device active again, and a device that APNs unregistered active again
    /// only when this registration is newer than the APNs timestamp.
    /// - Returns: the stored device and whether it was created (as opposed to updated).
    /// - Throws: ``StoreError`` with field `subscriptions` when a subscription names no publication of the app.
    public func register(
        appID: Int,
        token: DeviceToken,
        _ registration: DeviceRegistration,
        logger: Logger
    ) async throws -> (device: Device, created: Bool) {
        let slugs = Array(Set(registration.subscriptions)).sorted()
        let rows = try await client.query(
            """
            WITH subscribed AS (
                SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids, count(*) AS found
                FROM publications WHERE app_id = \(appID) AND slug = ANY(\(slugs))
            )
            INSERT INTO devices AS d (
                app_id, environment, cohort_key, token, auto_download, alerts_authorized, tier, subscriptions,
                time_zone, app_version, os_version, model, locale
            )
            SELECT \(appID), \(registration.environment.storageCode), \(token.storedCohortKey),
                \(ByteBuffer(bytes: token.bytes)), \(registration.autoDownload), \(registration.alertsAuthorized),
                \(registration.tier.storageCode), subscribed.ids, \(registration.timeZone), \(registration.appVersion),
                \(registration.osVersion), \(registration.model), \(registration.locale)
            FROM subscribed WHERE subscribed.found = \(slugs.count)
            ON CONFLICT (app_id, environment, token) DO UPDATE SET
                auto_download = excluded.auto_download,
                alerts_authorized = excluded.alerts_authorized,
                tier = excluded.tier,
                subscriptions = excluded.subscriptions,
                time_zone = excluded.time_zone,
                app_version = excluded.app_version,
                os_version = excluded.os_version,
                model = excluded.model,
                locale = excluded.locale,
                registered_at = now(),
                updated_at = now(),
                deleted_at = NULL,
                active = d.unregistered_at IS NULL OR now() > d.unregistered_at
            RETURNING xmax = 0, active, registered_at, updated_at, unregistered_at
            """,
            logger: logger
        )
        for try await (created, active, registeredAt, updatedAt, unregisteredAt) in rows.decode((Bool, Bool, Date, Date, Date?).self) {
            var stored = registration
            stored.subscriptions = slugs
            let device = Device(
                token: token.hex,
                registration: stored,
                active: active,
                registeredAt: registeredAt,
                updatedAt: updatedAt,
                deletedAt: nil,
                unregisteredAt: unregisteredAt
            )
            return (device, created)
        }
        let known = try await knownSlugs(appID: appID, among: slugs, logger: logger)
        let unknown = slugs.filter { !known.contains($0) }
        throw StoreError(
            code: .invalid,
            field: "subscriptions",
            message: "no publication named \(unknown.joined(separator: ", ")); declare it with `paperboy publications add`"
        )
    }

    /// The device with this token, in either environment (the most recently updated when both exist).
    public func find(appID: Int, token: DeviceToken, logger: Logger) async throws -> Device? {
        let rows = try await client.query(
            """
            SELECT environment, array(SELECT slug FROM publications p WHERE p.id = ANY(d.subscriptions) ORDER BY slug),
                time_zone, tier, auto_download, alerts_authorized, app_version, os_version, model, locale,
                active, registered_at, updated_at, deleted_at, unregistered_at
            FROM devices d WHERE app_id = \(appID) AND token = \(ByteBuffer(bytes: token.bytes))
            ORDER BY updated_at DESC LIMIT 1
            """,
            logger: logger
        )
        typealias Row = (Int16, [String], String, Int16, Bool, Bool, String?, String?, String?, String?, Bool, Date, Date, Date?, Date?)
        for try await row in rows.decode(Row.self) {
            let registration = DeviceRegistration(
                environment: APNsEnvironment(storageCode: row.0),
                subscriptions: row.1,
                timeZone: row.2,
                tier: ImageTier(storageCode: row.3),
                autoDownload: row.4,
                alertsAuthorized: row.5,
                appVersion: row.6,
                osVersion: row.7,
                model: row.8,
                locale: row.9
            )
            return Device(
                token: token.hex,
                registration: registration,
                active: row.10,
                registeredAt: row.11,
                updatedAt: row.12,
                deletedAt: row.13,
                unregisteredAt: row.14
            )
        }
        return nil
    }

    /// Marks the device deleted: kept, inactive, with the time.
    /// - Returns: whether a device with this token existed.
    public func delete(appID: Int, token: DeviceToken, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            UPDATE devices SET active = false, deleted_at = coalesce(deleted_at, now()), updated_at = now()
            WHERE app_id = \(appID) AND token = \(ByteBuffer(bytes: token.bytes))
            RETURNING 1
            """,
            logger: logger
        )
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// Records that APNs declared the token invalid (410 Unregistered or ExpiredToken) at `timestamp`.
    ///
    /// The device stops receiving pushes unless it registered after `timestamp`; from then on only a
    /// registration newer than `timestamp` makes it active again.
    public func markUnregistered(
        appID: Int,
        environment: APNsEnvironment,
        token: DeviceToken,
        at timestamp: Date,
        logger: Logger
    ) async throws {
        try await client.query(
            """
            UPDATE devices SET
                unregistered_at = greatest(unregistered_at, \(timestamp)),
                active = active AND registered_at > \(timestamp),
                updated_at = now()
            WHERE app_id = \(appID) AND environment = \(environment.storageCode) AND token = \(ByteBuffer(bytes: token.bytes))
            """,
            logger: logger
        )
    }

    private func knownSlugs(appID: Int, among slugs: [String], logger: Logger) async throws -> Set<String> {
        let rows = try await client.query(
            "SELECT slug FROM publications WHERE app_id = \(appID) AND slug = ANY(\(slugs))",
            logger: logger
        )
        var known = Set<String>()
        for try await slug in rows.decode(String.self) { known.insert(slug) }
        return known
    }
}
