import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Apps in PostgreSQL: their providers' credentials (never the keys themselves) and their device API keys
/// (``AppRepository+Keys.swift``).
public struct AppRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Registers an app and returns it with its first device API key (shown only now).
    /// - Throws: ``StoreError`` `.conflict` naming `bundleId` when an app has that bundle id already.
    public func create(_ app: NewApp, audit: AuditEntry? = nil, logger: Logger) async throws -> (app: App, apiKey: DeviceAPIKey) {
        let key = DeviceAPIKey.generate()
        do {
            // One statement: the app and its key are stored together or not at all (with `audit`, in its transaction).
            let created = try await client.audited(audit, logger: logger) { runner -> App? in
                let rows = try await runner.run(
                    """
                    WITH app AS (
                        INSERT INTO apps (bundle_id, team_id, key_id, key_reference, fcm_service_account, fcm_project_id)
                        VALUES (\(app.bundleID), \(app.apns?.teamID), \(app.apns?.keyID), \(app.apns?.keyReference),
                            \(app.fcm?.serviceAccount), \(app.fcm?.projectID))
                        RETURNING id, created_at, credentials_version
                    ), key AS (
                        INSERT INTO app_api_keys (app_id, key_hash, created_at)
                        SELECT id, \(ByteBuffer(bytes: key.hash)), created_at FROM app
                    )
                    SELECT id, created_at, credentials_version FROM app
                    """,
                    logger: logger
                )
                for try await (id, createdAt, version) in rows.decode((Int, Date, Int).self) {
                    return App(id: id, bundleID: app.bundleID, apns: app.apns, fcm: app.fcm, credentialsVersion: version, createdAt: createdAt)
                }
                return nil
            } entry: { entry, created in
                var entry = entry
                entry.appID = created?.id
                return entry
            }
            if let created { return (created, key) }
        } catch let error as PSQLError where error.isUniqueViolation() {
            throw StoreError(code: .conflict, field: "bundleId", message: "an app with bundle id \(app.bundleID) exists already")
        }
        throw StoreError(code: .conflict, message: "the app was not created")
    }

    /// Adds or replaces the app's APNs token-auth key (team id, key id and where the `.p8` lives; never the
    /// key). The credentials version goes up even when the values are the same: the file behind the path may
    /// have been replaced, and the workers should load it again. A configuration change: an APNs hold for a
    /// suspected misconfiguration ends, and the deactivations held under the old configuration are dropped.
    ///
    /// - Returns: the app as now stored.
    /// - Throws: ``StoreError`` `.notFound` naming `app` when there is no such app.
    public func setAPNs(appID: Int, _ credentials: APNsCredentials, audit: AuditEntry? = nil, logger: Logger) async throws -> App {
        try await update(
            appID: appID,
            audit: audit,
            releasing: .apns,
            """
            UPDATE apps a SET team_id = \(credentials.teamID), key_id = \(credentials.keyID), key_reference = \(credentials.keyReference),
                credentials_version = credentials_version + 1
            WHERE id = \(appID) RETURNING \(unescaped: Self.columns)
            """,
            logger: logger
        )
    }

    /// Adds or replaces the app's FCM service account (its path and project id; never the file's content).
    /// The credentials version goes up, and an FCM hold ends, as for ``setAPNs(appID:_:logger:)``.
    ///
    /// - Returns: the app as now stored.
    /// - Throws: ``StoreError`` `.notFound` naming `app` when there is no such app.
    public func setFCM(appID: Int, _ credentials: FCMCredentials, audit: AuditEntry? = nil, logger: Logger) async throws -> App {
        try await update(
            appID: appID,
            audit: audit,
            releasing: .fcm,
            """
            UPDATE apps a SET fcm_service_account = \(credentials.serviceAccount), fcm_project_id = \(credentials.projectID),
                credentials_version = credentials_version + 1
            WHERE id = \(appID) RETURNING \(unescaped: Self.columns)
            """,
            logger: logger
        )
    }

    /// Changes the app's bundle id (its APNs topic): the fix for a wrong one, which makes APNs answer
    /// `DeviceTokenNotForTopic` for every device. An APNs hold ends and the deactivations it held are dropped.
    ///
    /// - Returns: the app as now stored.
    /// - Throws: ``StoreError`` `.notFound` naming `app`; `.conflict` naming `bundleId` when another app has it.
    public func setBundleID(appID: Int, _ bundleID: String, audit: AuditEntry? = nil, logger: Logger) async throws -> App {
        do {
            return try await update(
                appID: appID,
                audit: audit,
                releasing: .apns,
                """
                UPDATE apps a SET bundle_id = \(bundleID), credentials_version = credentials_version + 1
                WHERE id = \(appID) RETURNING \(unescaped: Self.columns)
                """,
                logger: logger
            )
        } catch let error as PSQLError where error.isUniqueViolation() {
            throw StoreError(code: .conflict, field: "bundleId", message: "another app has bundle id \(bundleID)")
        }
    }

    /// Removes the app's APNs credentials: its APNs devices are no longer sent to, and a broadcast to an
    /// audience with APNs devices is refused until credentials are set again.
    ///
    /// - Returns: the app as now stored.
    /// - Throws: ``StoreError`` `.notFound` naming `app` (no such app) or `apns` (the app has no APNs
    ///   credentials); `.conflict` naming `apns` when APNs is the app's only provider.
    public func removeAPNs(appID: Int, audit: AuditEntry? = nil, logger: Logger) async throws -> App {
        try await remove(
            .apns,
            appID: appID,
            audit: audit,
            """
            UPDATE apps a SET team_id = NULL, key_id = NULL, key_reference = NULL, credentials_version = credentials_version + 1
            WHERE id = \(appID) AND team_id IS NOT NULL RETURNING \(unescaped: Self.columns)
            """,
            logger: logger
        )
    }

    /// Removes the app's FCM service account: its FCM devices are skipped (`fcmNotConfigured`) from then on.
    ///
    /// - Returns: the app as now stored.
    /// - Throws: ``StoreError`` `.notFound` naming `app` (no such app) or `fcm` (the app has no service
    ///   account); `.conflict` naming `fcm` when FCM is the app's only provider.
    public func removeFCM(appID: Int, audit: AuditEntry? = nil, logger: Logger) async throws -> App {
        try await remove(
            .fcm,
            appID: appID,
            audit: audit,
            """
            UPDATE apps a SET fcm_service_account = NULL, fcm_project_id = NULL, credentials_version = credentials_version + 1
            WHERE id = \(appID) AND fcm_service_account IS NOT NULL RETURNING \(unescaped: Self.columns)
            """,
            logger: logger
        )
    }

    /// Sets the app's words for its edition alerts, or (nil) goes back to the English default. Nothing else
    /// changes: the credentials version stays, and the dispatchers use the new words from their next batch.
    ///
    /// - Returns: the app as now stored.
    /// - Throws: ``StoreError`` `.notFound` naming `app` when there is no such app.
    public func setAlertText(appID: Int, _ text: EditionAlertText?, audit: AuditEntry? = nil, logger: Logger) async throws -> App {
        try await update(
            appID: appID,
            audit: audit,
            """
            UPDATE apps a SET alert_title = \(text?.title), alert_body = \(text?.body)
            WHERE id = \(appID) RETURNING \(unescaped: Self.columns)
            """,
            logger: logger
        )
    }

    /// The app with this id, if any.
    public func find(id: Int, logger: Logger) async throws -> App? {
        let rows = try await client.query("SELECT \(unescaped: Self.columns) FROM apps a WHERE a.id = \(id)", logger: logger)
        for try await row in rows.decode(Self.Row.self) { return Self.app(row) }
        return nil
    }

    /// Every app, oldest first.
    public func list(logger: Logger) async throws -> [App] {
        let rows = try await client.query("SELECT \(unescaped: Self.columns) FROM apps a ORDER BY a.id", logger: logger)
        var apps: [App] = []
        for try await row in rows.decode(Self.Row.self) { apps.append(Self.app(row)) }
        return apps
    }

    private enum Provider: String {
        case apns, fcm
        var name: String { self == .apns ? "APNs" : "FCM" }
    }

    /// Runs an update of the app's row, with `audit` in its transaction; `releasing` a provider (a change of its
    /// configuration), its hold for a suspected misconfiguration ends and the deactivations held under the old
    /// configuration are dropped, in the same transaction.
    private func update(
        appID: Int,
        audit: AuditEntry? = nil,
        releasing provider: PushProvider? = nil,
        _ query: PostgresQuery,
        logger: Logger
    ) async throws -> App {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.query(query, logger: logger)
            var app: App?
            for try await row in rows.decode(Self.Row.self) { app = Self.app(row) }
            guard let app else { throw StoreError(code: .notFound, field: "app", message: "no app \(appID)") }
            if let provider {
                // The configuration changed: "token not valid" answers of the old one say nothing of the tokens.
                try await connection.query(
                    "DELETE FROM provider_holds WHERE app_id = \(appID) AND provider = \(provider.storageCode)",
                    logger: logger
                )
                try await connection.query(
                    "DELETE FROM held_deactivations WHERE app_id = \(appID) AND provider = \(provider.storageCode)",
                    logger: logger
                )
                // Its evidence forgotten; the other provider's confirmation stands; its given-back batches count afresh.
                try await ProviderHoldRepository.configurationChanged(
                    appID: appID,
                    changed: provider,
                    environment: nil,
                    on: connection,
                    logger: logger
                )
            }
            if let audit { try await AuditRepository.insert(audit, on: connection, logger: logger) }
            return app
        }
    }

    /// Runs a removal that matches no row when the provider is absent; the database's `apps_one_provider`
    /// check refuses to remove the last one, even when two removals race.
    private func remove(_ provider: Provider, appID: Int, audit: AuditEntry?, _ query: PostgresQuery, logger: Logger) async throws -> App {
        do {
            let removed = try await client.audited(audit, logger: logger) { runner -> App? in
                let rows = try await runner.run(query, logger: logger)
                for try await row in rows.decode(Self.Row.self) { return Self.app(row) }
                return nil
            } entry: { entry, app in
                app == nil ? nil : entry
            }
            if let removed { return removed }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23514" {
            let other: Provider = provider == .apns ? .fcm : .apns
            throw StoreError(
                code: .conflict,
                field: provider.rawValue,
                message: "\(provider.name) is app \(appID)'s only provider, and an app needs at least one: add \(other.name) first"
            )
        }
        guard try await find(id: appID, logger: logger) != nil else {
            throw StoreError(code: .notFound, field: "app", message: "no app \(appID)")
        }
        throw StoreError(code: .notFound, field: provider.rawValue, message: "app \(appID) has no \(provider.name) credentials")
    }

    typealias Row = (Int, String, String?, String?, String?, String?, String?, Int, Date, String?, String?)
    /// The columns of ``Row``, of `apps a`.
    static let columns = """
        a.id, a.bundle_id, a.team_id, a.key_id, a.key_reference, a.fcm_service_account, a.fcm_project_id, a.credentials_version, a.created_at,
        a.alert_title, a.alert_body
        """

    static func app(_ row: Row) -> App {
        var apns: APNsCredentials?
        if let teamID = row.2, let keyID = row.3, let keyReference = row.4 {
            apns = APNsCredentials(stored: teamID, keyID: keyID, keyReference: keyReference)
        }
        var fcm: FCMCredentials?
        if let path = row.5, let projectID = row.6 {
            fcm = FCMCredentials(stored: path, projectID: projectID)
        }
        return App(
            id: row.0,
            bundleID: row.1,
            apns: apns,
            fcm: fcm,
            credentialsVersion: row.7,
            createdAt: row.8,
            alertText: alertText(title: row.9, body: row.10)
        )
    }

    /// An app's stored alert words (both columns or neither), nil for the default.
    static func alertText(title: String?, body: String?) -> EditionAlertText? {
        guard let title, let body else { return nil }
        return EditionAlertText(unchecked: title, body: body)
    }
}
