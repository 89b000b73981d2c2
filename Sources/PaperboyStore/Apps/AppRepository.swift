import Foundation
import Logging
import PostgresNIO

/// Apps in PostgreSQL.
public struct AppRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Registers an app and returns it with its newly generated device API key (shown only now).
    public func create(_ app: NewApp, logger: Logger) async throws -> (app: App, apiKey: DeviceAPIKey) {
        let key = DeviceAPIKey.generate()
        do {
            let rows = try await client.query(
                """
                INSERT INTO apps (bundle_id, team_id, key_id, key_reference, api_key_hash, fcm_service_account, fcm_project_id)
                VALUES (\(app.bundleID), \(app.teamID), \(app.keyID), \(app.keyReference), \(ByteBuffer(bytes: key.hash)),
                    \(app.fcm?.serviceAccount), \(app.fcm?.projectID))
                RETURNING id, created_at
                """,
                logger: logger
            )
            for try await (id, createdAt) in rows.decode((Int, Date).self) {
                let created = App(
                    id: id,
                    bundleID: app.bundleID,
                    teamID: app.teamID,
                    keyID: app.keyID,
                    keyReference: app.keyReference,
                    fcm: app.fcm,
                    createdAt: createdAt
                )
                return (created, key)
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw StoreError(code: .conflict, field: "bundleId", message: "an app with bundle id \(app.bundleID) exists already")
        }
        throw StoreError(code: .conflict, message: "the app was not created")
    }

    /// Adds or replaces the app's FCM service account (its path and project id; never the file's content).
    ///
    /// - Returns: the app as now stored.
    /// - Throws: ``StoreError`` `.notFound` naming `app` when there is no such app.
    public func setFCM(appID: Int, _ credentials: FCMCredentials, logger: Logger) async throws -> App {
        let rows = try await client.query(
            """
            UPDATE apps SET fcm_service_account = \(credentials.serviceAccount), fcm_project_id = \(credentials.projectID)
            WHERE id = \(appID) RETURNING \(unescaped: Self.columns)
            """,
            logger: logger
        )
        for try await row in rows.decode(Self.Row.self) { return Self.app(row) }
        throw StoreError(code: .notFound, field: "app", message: "no app \(appID)")
    }

    /// The app whose device API key this is, if any.
    public func find(apiKey: DeviceAPIKey, logger: Logger) async throws -> App? {
        let rows = try await client.query(
            "SELECT \(unescaped: Self.columns) FROM apps WHERE api_key_hash = \(ByteBuffer(bytes: apiKey.hash))",
            logger: logger
        )
        for try await row in rows.decode(Self.Row.self) { return Self.app(row) }
        return nil
    }

    /// The app with this id, if any.
    public func find(id: Int, logger: Logger) async throws -> App? {
        let rows = try await client.query("SELECT \(unescaped: Self.columns) FROM apps WHERE id = \(id)", logger: logger)
        for try await row in rows.decode(Self.Row.self) { return Self.app(row) }
        return nil
    }

    /// Every app, oldest first.
    public func list(logger: Logger) async throws -> [App] {
        let rows = try await client.query("SELECT \(unescaped: Self.columns) FROM apps ORDER BY id", logger: logger)
        var apps: [App] = []
        for try await row in rows.decode(Self.Row.self) { apps.append(Self.app(row)) }
        return apps
    }

    private typealias Row = (Int, String, String, String, String, String?, String?, Date)
    private static let columns = "id, bundle_id, team_id, key_id, key_reference, fcm_service_account, fcm_project_id, created_at"

    private static func app(_ row: Row) -> App {
        // The database's checks hold the same rules as FCMCredentials, so a stored pair always passes them.
        let fcm = row.5.flatMap { path in row.6.flatMap { try? FCMCredentials(serviceAccount: path, projectID: $0) } }
        return App(id: row.0, bundleID: row.1, teamID: row.2, keyID: row.3, keyReference: row.4, fcm: fcm, createdAt: row.7)
    }
}
