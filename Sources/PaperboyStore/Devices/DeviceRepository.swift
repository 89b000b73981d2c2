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
    /// only when this registration is newer than the APNs timestamp. The token's provider is the one stored
    /// (`registration.provider` is expected to be the same).
    /// - Returns: the stored device and whether it was created (as opposed to updated).
    /// - Throws: ``StoreError`` with field `subscriptions` when a subscription names no publication of the app.
    public func register(
        appID: Int,
        token: PushToken,
        _ registration: DeviceRegistration,
        logger: Logger
    ) async throws -> (device: Device, created: Bool) {
        let statement = RegisterDevice(appID: appID, token: token, registration: registration)
        let slugs = statement.slugs
        for (created, active, registeredAt, updatedAt, unregisteredAt) in try await client.executePrepared(statement, logger: logger) {
            var stored = registration
            stored.subscriptions = slugs
            stored.provider = token.provider
            let device = Device(
                token: token.text,
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
            code: .notFound,
            field: "subscriptions",
            message: "no publication named \(unknown.joined(separator: ", ")); declare it with `paperboy publications add`"
        )
    }

    /// The device whose token is one of `candidates` (``PushToken/candidates(_:)``), in either environment (the
    /// most recently updated when more than one exists).
    public func find(appID: Int, candidates: [PushToken], logger: Logger) async throws -> Device? {
        let rows = try await client.query(RequestStatements.findDevice(appID: appID, candidates: candidates), logger: logger)
        typealias Row = (
            Int16, ByteBuffer, Int16, Int16, [String], String, Int16, Bool, Bool, String?, String?, String?, String?, Bool, Date, Date, Date?,
            Date?, Bool, Bool
        )
        for try await row in rows.decode(Row.self) {
            let provider = PushProvider(storageCode: row.0)
            let registration = DeviceRegistration(
                provider: provider,
                platform: DevicePlatform(storageCode: row.2),
                environment: APNsEnvironment(storageCode: row.3),
                subscriptions: row.4,
                timeZone: row.5,
                tier: ImageTier(storageCode: row.6),
                autoDownload: row.7,
                alertsAuthorized: row.8,
                notifyWhenReady: row.18,
                editionAlerts: row.19,
                appVersion: row.9,
                osVersion: row.10,
                model: row.11,
                locale: row.12
            )
            return Device(
                token: PushToken(provider: provider, bytes: Array(buffer: row.1)).text,
                registration: registration,
                active: row.13,
                registeredAt: row.14,
                updatedAt: row.15,
                deletedAt: row.16,
                unregisteredAt: row.17
            )
        }
        return nil
    }

    /// Marks the device deleted: kept, inactive, with the time.
    /// - Returns: whether a device with one of these tokens existed.
    public func delete(appID: Int, candidates: [PushToken], logger: Logger) async throws -> Bool {
        let rows = try await client.query(RequestStatements.deleteDevice(appID: appID, candidates: candidates), logger: logger)
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// Erases the device (a reader's request to erase their data): the row, its receipts and its deliveries are
    /// deleted, not kept inactive. A later registration of the token is a new device.
    /// - Returns: whether a device with one of these tokens existed.
    public func erase(appID: Int, candidates: [PushToken], logger: Logger) async throws -> Bool {
        let rows = try await client.query(RequestStatements.eraseDevice(appID: appID, candidates: candidates), logger: logger)
        var erased = false
        for try await _ in rows.decode(Int.self) { erased = true }
        return erased
    }

    /// Records that APNs declared the token invalid at `timestamp` (410 Unregistered or ExpiredToken, or a
    /// token that is not one: BadDeviceToken, DeviceTokenNotForTopic), by the rule a broadcast batch records
    /// its rejections with (``RequestStatements/unregister(deviceIDs:at:now:)``).
    ///
    /// The device stops receiving pushes unless it registered after `timestamp`; from then on only a
    /// registration newer than `timestamp` makes it active again.
    /// - Returns: whether a device with this token existed.
    @discardableResult
    public func markUnregistered(
        appID: Int,
        environment: APNsEnvironment,
        token: DeviceToken,
        at timestamp: Date,
        logger: Logger
    ) async throws -> Bool {
        let rows = try await client.query(RequestStatements.deviceID(appID: appID, environment: environment, token: token), logger: logger)
        var ids: [Int64] = []
        for try await id in rows.decode(Int64.self) { ids.append(id) }
        guard !ids.isEmpty else { return false }
        try await client.query(
            RequestStatements.unregister(deviceIDs: ids, at: ids.map { _ in timestamp }, atDatabaseNow: ids.map { _ in false }, now: Date()),
            logger: logger
        )
        return true
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

extension DeviceRepository {
    /// Registers a device with an APNs token: ``register(appID:token:_:logger:)`` with `.apns(token)`.
    public func register(
        appID: Int,
        token: DeviceToken,
        _ registration: DeviceRegistration,
        logger: Logger
    ) async throws -> (device: Device, created: Bool) {
        try await register(appID: appID, token: PushToken.apns(token), registration, logger: logger)
    }

    /// The device with this APNs token, in either environment.
    public func find(appID: Int, token: DeviceToken, logger: Logger) async throws -> Device? {
        try await find(appID: appID, candidates: [.apns(token)], logger: logger)
    }

    /// Marks the device with this APNs token deleted.
    public func delete(appID: Int, token: DeviceToken, logger: Logger) async throws -> Bool {
        try await delete(appID: appID, candidates: [.apns(token)], logger: logger)
    }
}
