import Foundation
import Logging
import PostgresNIO

/// An app's device API keys. Several may be active at once: a key ships inside app binaries, so retiring one
/// (leaked, say) means adding a key, shipping it, and revoking the old one once the app versions that send
/// it have aged out.
extension AppRepository {
    /// How stale a key's `last_used_at` may be before a lookup writes it again: a key in use costs one write
    /// in this time, never one per request. With the API's key cache (30 s) in front, a used key's last use
    /// is at most about 10.5 minutes behind.
    public static let lastUseResolution: TimeInterval = 600

    /// The app whose active (not revoked) device API key this is, if any: one probe of the unique index on the
    /// key's hash. Records the use when the stored last use is ``lastUseResolution`` old or more, in the
    /// same statement.
    /// - Parameter usedAt: the time of the use (the request's).
    public func find(apiKey: DeviceAPIKey, usedAt: Date = Date(), logger: Logger) async throws -> App? {
        let hash = ByteBuffer(bytes: apiKey.hash)
        let staleBefore = usedAt.addingTimeInterval(-Self.lastUseResolution)
        let rows = try await client.query(
            """
            WITH used AS (
                UPDATE app_api_keys SET last_used_at = \(usedAt)
                WHERE key_hash = \(hash) AND revoked_at IS NULL AND (last_used_at IS NULL OR last_used_at <= \(staleBefore))
            )
            SELECT \(unescaped: Self.columns) FROM app_api_keys k JOIN apps a ON a.id = k.app_id
            WHERE k.key_hash = \(hash) AND k.revoked_at IS NULL
            """,
            logger: logger
        )
        for try await row in rows.decode(Self.Row.self) { return Self.app(row) }
        return nil
    }

    /// Makes a new device API key for the app, beside the ones it has.
    /// - Returns: the key as listed, and its secret: shown only now (only its SHA-256 is stored).
    /// - Throws: ``StoreError`` `.notFound` naming `app` when there is no such app.
    public func addAPIKey(appID: Int, audit: AuditEntry? = nil, logger: Logger) async throws -> (key: AppAPIKey, secret: DeviceAPIKey) {
        // Ids are PostgreSQL integers: a larger one is no app (and would not fit the key's app_id).
        guard Int32(exactly: appID) != nil else { throw StoreError(code: .notFound, field: "app", message: "no app \(appID)") }
        let secret = DeviceAPIKey.generate()
        do {
            let key = try await client.audited(audit, logger: logger) { runner -> AppAPIKey? in
                let rows = try await runner.run(
                    """
                    INSERT INTO app_api_keys (app_id, key_hash) VALUES (\(appID), \(ByteBuffer(bytes: secret.hash)))
                    RETURNING \(unescaped: Self.keyColumns)
                    """,
                    logger: logger
                )
                for try await row in rows.decode(KeyRow.self) { return Self.key(row) }
                return nil
            } entry: { entry, key in
                key.map { key in
                    var entry = entry
                    entry.detail = "key \(key.id) added"
                    return entry
                }
            }
            if let key { return (key, secret) }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23503" {
            throw StoreError(code: .notFound, field: "app", message: "no app \(appID)")
        }
        throw StoreError(code: .conflict, field: "app", message: "the key was not created")
    }

    /// The app's device API keys, revoked ones too, oldest first: never a secret or a hash.
    /// - Throws: ``StoreError`` `.notFound` naming `app` when there is no such app.
    public func apiKeys(appID: Int, logger: Logger) async throws -> [AppAPIKey] {
        let rows = try await client.query(
            "SELECT \(unescaped: Self.keyColumns) FROM app_api_keys WHERE app_id = \(appID) ORDER BY id",
            logger: logger
        )
        var keys: [AppAPIKey] = []
        for try await row in rows.decode(KeyRow.self) { keys.append(Self.key(row)) }
        // Every app is created with a key and keys are never deleted: no keys means no app.
        if keys.isEmpty, try await find(id: appID, logger: logger) == nil {
            throw StoreError(code: .notFound, field: "app", message: "no app \(appID)")
        }
        return keys
    }

    /// Revokes one of the app's device API keys: requests with it answer 401 once the API's key cache has
    /// forgotten it (30 s). Revoking a revoked key changes nothing.
    ///
    /// The app's last active key is not revoked: every installed copy of the app would then be locked out
    /// (registrations and receipts refused) with no key to ship instead. To cut every copy off on purpose, add
    /// a key first (and keep it unshipped).
    ///
    /// - Returns: the key as now stored.
    /// - Throws: ``StoreError`` `.notFound` naming `app` or `key`; `.conflict` naming `key` when it is the app's
    ///   last active key.
    public func revokeAPIKey(appID: Int, keyID: Int, now: Date = Date(), audit: AuditEntry? = nil, logger: Logger) async throws -> AppAPIKey {
        try await client.transaction(logger: logger) { connection in
            // The app's row, locked: two revocations of an app's last two keys are decided one after the other.
            let app = try await connection.query("SELECT id FROM apps WHERE id = \(appID) FOR UPDATE", logger: logger)
            guard try await app.collect().count == 1 else {
                throw StoreError(code: .notFound, field: "app", message: "no app \(appID)")
            }
            let found = try await connection.query(
                "SELECT \(unescaped: Self.keyColumns) FROM app_api_keys WHERE app_id = \(appID) AND id = \(keyID)",
                logger: logger
            )
            var key: AppAPIKey?
            for try await row in found.decode(KeyRow.self) { key = Self.key(row) }
            guard let key else {
                throw StoreError(code: .notFound, field: "key", message: "app \(appID) has no key \(keyID) (see its keys)")
            }
            if key.revokedAt != nil { return key }
            let others = try await connection.query(
                "SELECT count(*) FROM app_api_keys WHERE app_id = \(appID) AND id <> \(keyID) AND revoked_at IS NULL",
                logger: logger
            )
            var active = 0
            for try await count in others.decode(Int.self) { active = count }
            guard active > 0 else {
                throw StoreError(
                    code: .conflict,
                    field: "key",
                    message: "key \(keyID) is app \(appID)'s last active key: revoking it would make every installed copy of the app answer 401; "
                        + "add a key first"
                )
            }
            let revoked = try await connection.query(
                "UPDATE app_api_keys SET revoked_at = \(now) WHERE id = \(keyID) RETURNING \(unescaped: Self.keyColumns)",
                logger: logger
            )
            for try await row in revoked.decode(KeyRow.self) {
                if let audit { try await AuditRepository.insert(audit, on: connection, logger: logger) }
                return Self.key(row)
            }
            throw StoreError(code: .notFound, field: "key", message: "app \(appID) has no key \(keyID)")
        }
    }

    typealias KeyRow = (Int, Int, Date, Date?, Date?)
    static let keyColumns = "id, app_id, created_at, last_used_at, revoked_at"

    static func key(_ row: KeyRow) -> AppAPIKey {
        AppAPIKey(id: row.0, appID: row.1, createdAt: row.2, lastUsedAt: row.3, revokedAt: row.4)
    }
}
