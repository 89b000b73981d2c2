import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// An app's provider held for a suspected misconfiguration (`provider_holds`, migration 0023).
public struct ProviderHold: Sendable, Equatable, Codable {
    public var appID: Int
    public var provider: PushProvider
    /// The answer most devices got, as the provider spells it.
    public var answer: String
    public var likelyCause: String
    public var reason: String
    public var raisedBy: String
    public var raisedAt: Date
    /// Deactivations held for the app's provider now.
    public var heldDeactivations: Int

    public init(
        appID: Int,
        provider: PushProvider,
        answer: String,
        likelyCause: String,
        reason: String,
        raisedBy: String,
        raisedAt: Date,
        heldDeactivations: Int = 0
    ) {
        self.appID = appID
        self.provider = provider
        self.answer = answer
        self.likelyCause = likelyCause
        self.reason = reason
        self.raisedBy = raisedBy
        self.raisedAt = raisedAt
        self.heldDeactivations = heldDeactivations
    }
}

/// Holds for suspected misconfigurations, and the deactivations held meanwhile: raised by workers, ended by operators
/// (or by a credentials change), and the per-second step that applies held deactivations nobody suspects.
public struct ProviderHoldRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Holds the app's provider, for answers to sends made under its configuration `version`
    /// (``App/credentialsVersion``); a hold already there stays as it was, and none is raised for an older
    /// configuration than the app's now (the operator changed it since: those answers say nothing of the new one).
    /// - Returns: whether this call raised it.
    @discardableResult
    public func raise(
        appID: Int,
        provider: PushProvider,
        answer: String,
        likelyCause: String,
        reason: String,
        by worker: String,
        version: Int,
        logger: Logger
    ) async throws -> Bool {
        let rows = try await client.query(
            """
            INSERT INTO provider_holds (app_id, provider, answer, likely_cause, reason, raised_by)
            SELECT \(appID), \(provider.storageCode), \(answer), \(likelyCause), \(reason), \(worker)
            FROM apps WHERE id = \(appID) AND credentials_version = \(version)
            ON CONFLICT (app_id, provider) DO NOTHING RETURNING 1
            """,
            logger: logger
        )
        return try await rows.collect().count == 1
    }

    /// Every hold, with how many deactivations it holds.
    public func all(logger: Logger) async throws -> [ProviderHold] {
        try await select("", logger: logger)
    }

    /// The app's holds.
    public func holds(appID: Int, logger: Logger) async throws -> [ProviderHold] {
        try await select("WHERE h.app_id = \(appID)", logger: logger)
    }

    private func select(_ condition: PostgresQuery, logger: Logger) async throws -> [ProviderHold] {
        var query: PostgresQuery = """
            SELECT h.app_id, h.provider, h.answer, h.likely_cause, h.reason, h.raised_by, h.raised_at,
                (SELECT count(*)::integer FROM held_deactivations d WHERE d.app_id = h.app_id AND d.provider = h.provider)
            FROM provider_holds h
            """
        query.sql += " " + condition.sql + " ORDER BY h.app_id, h.provider"
        query.binds = condition.binds
        let rows = try await client.query(query, logger: logger)
        var holds: [ProviderHold] = []
        for try await (app, provider, answer, cause, reason, by, at, held) in rows.decode(
            (Int, Int16, String, String, String, String, Date, Int).self
        ) {
            holds.append(
                ProviderHold(
                    appID: app,
                    provider: PushProvider(storageCode: provider),
                    answer: answer,
                    likelyCause: cause,
                    reason: reason,
                    raisedBy: by,
                    raisedAt: at,
                    heldDeactivations: held
                )
            )
        }
        return holds
    }

    /// The configuration was at fault and is fixed: the hold ends, and the deactivations it held are dropped (the
    /// devices stay active and are sent again). The app's configuration version goes up, as for any change of it:
    /// answers to sends made before say nothing of the fixed one, and raise no hold again.
    /// - Returns: whether there was a hold, and how many deactivations were dropped.
    public func release(appID: Int, provider: PushProvider, logger: Logger) async throws -> (released: Bool, dropped: Int) {
        try await client.transaction(logger: logger) { connection in
            try await Self.newConfiguration(appID: appID, on: connection, logger: logger)
            let released =
                try await connection.query(
                    "DELETE FROM provider_holds WHERE app_id = \(appID) AND provider = \(provider.storageCode) RETURNING 1",
                    logger: logger
                ).collect().count == 1
            let dropped = try await connection.query(
                "DELETE FROM held_deactivations WHERE app_id = \(appID) AND provider = \(provider.storageCode) RETURNING 1",
                logger: logger
            ).collect().count
            return (released, dropped)
        }
    }

    /// The tokens really are dead: the held deactivations of the app's provider are applied now and the hold ends
    /// (the configuration version goes up, as for ``release(appID:provider:logger:)``).
    /// - Returns: whether there was a hold, and how many devices were deactivated.
    public func confirm(appID: Int, provider: PushProvider, logger: Logger) async throws -> (released: Bool, deactivated: Int) {
        try await client.transaction(logger: logger) { connection in
            try await Self.newConfiguration(appID: appID, on: connection, logger: logger)
            let released =
                try await connection.query(
                    "DELETE FROM provider_holds WHERE app_id = \(appID) AND provider = \(provider.storageCode) RETURNING 1",
                    logger: logger
                ).collect().count == 1
            let rows = try await connection.query(
                """
                WITH due AS (
                    DELETE FROM held_deactivations WHERE app_id = \(appID) AND provider = \(provider.storageCode) RETURNING device_id, answered_at
                )
                UPDATE devices SET unregistered_at = greatest(devices.unregistered_at, due.answered_at),
                    active = devices.active AND devices.registered_at > due.answered_at, updated_at = now()
                FROM due WHERE devices.id = due.device_id AND devices.active AND devices.registered_at <= due.answered_at RETURNING 1
                """,
                logger: logger
            )
            return (released, try await rows.collect().count)
        }
    }

    /// Applies held deactivations older than `cutoff` (ten minutes by the database's clock when nil) whose app's
    /// provider is not held, `limit` at most: the per-second step of the workers.
    /// - Returns: how many were applied.
    @discardableResult
    public func applyDue(before cutoff: Date? = nil, limit: Int = 1000, logger: Logger) async throws -> Int {
        let rows = try await client.query(RequestStatements.applyHeldDeactivations(before: cutoff, limit: limit), logger: logger)
        var applied = 0
        for try await count in rows.decode(Int.self) { applied = count }
        return applied
    }

    /// A new version of the app's configuration: workers load its credentials again and count answers afresh.
    static func newConfiguration(appID: Int, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("UPDATE apps SET credentials_version = credentials_version + 1 WHERE id = \(appID)", logger: logger)
    }

    /// How many deactivations are held now.
    public func heldCount(logger: Logger) async throws -> Int {
        let rows = try await client.query("SELECT count(*)::integer FROM held_deactivations", logger: logger)
        var count = 0
        for try await value in rows.decode(Int.self) { count = value }
        return count
    }
}
