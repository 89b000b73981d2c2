import Foundation
import PaperboyCore
import PostgresNIO

/// Registering a device, one statement: the subscriptions' publications, the device inserted or updated (a
/// registration makes a deleted device active again, and an unregistered one only when it is newer than the
/// provider's timestamp), and a dormant device's count started again.
///
/// A prepared statement, as ``RecordReceipt``: each connection plans it once, not for every registration (an app
/// release re-registers a large part of the fleet within hours). The plan a connection reuses is PostgreSQL's
/// generic plan, which `RequestPlanTests` checks reads no big table sequentially.
struct RegisterDevice: PostgresPreparedStatement {
    static let sql = """
        WITH subscribed AS (
            SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids, count(*) AS found
            FROM publications WHERE app_id = $1 AND slug = ANY($2)
        ), upserted AS (
        INSERT INTO devices AS d (
            app_id, provider, platform, environment, cohort_key, token, auto_download, alerts_authorized, tier, subscriptions,
            time_zone, app_version, os_version, model, locale, notify_when_ready, edition_alerts
        )
        SELECT $1, $4, $5, $6, $7, $8, $9, $10, $11, subscribed.ids, $12, $13, $14, $15, $16, $17, $18
        FROM subscribed WHERE subscribed.found = $3
        ON CONFLICT (app_id, token, provider, environment) DO UPDATE SET
            platform = excluded.platform,
            auto_download = excluded.auto_download,
            alerts_authorized = excluded.alerts_authorized,
            tier = excluded.tier,
            subscriptions = excluded.subscriptions,
            time_zone = excluded.time_zone,
            app_version = excluded.app_version,
            os_version = excluded.os_version,
            model = excluded.model,
            locale = excluded.locale,
            notify_when_ready = excluded.notify_when_ready,
            edition_alerts = excluded.edition_alerts,
            registered_at = now(),
            updated_at = now(),
            deleted_at = NULL,
            dormant = false,
            active = d.unregistered_at IS NULL OR now() > d.unregistered_at
        RETURNING id, xmax = 0 AS created, active, registered_at, updated_at, unregistered_at
        ), revived AS (
            -- A registration revives a dormant device (migration 0011; `dormant` above): its count starts again.
            UPDATE device_pushes p SET editions_unanswered = 0 FROM upserted
            WHERE p.device_id = upserted.id AND p.editions_unanswered <> 0
        )
        SELECT created, active, registered_at, updated_at, unregistered_at FROM upserted
        """

    /// Stated, not inferred from the first registration's values: a connection prepares the statement once, and a
    /// first registration without an app version would leave that parameter's type to the server.
    static let bindingDataTypes: [PostgresDataType] = [
        .int8, .textArray, .int8, .int2, .int2, .int2, .int4, .bytea, .bool, .bool, .int2, .text, .text, .text, .text, .text, .bool, .bool,
    ]

    /// Whether the device was created, then what is stored of it. No row: a subscription names no publication of
    /// the app.
    typealias Row = (Bool, Bool, Date, Date, Date?)

    let appID: Int
    let token: PushToken
    let registration: DeviceRegistration

    /// The subscriptions as stored: each once, sorted.
    var slugs: [String] { Array(Set(registration.subscriptions)).sorted() }

    func makeBindings() -> PostgresBindings {
        let slugs = slugs
        var bindings = PostgresBindings(capacity: Self.bindingDataTypes.count)
        bindings.append(appID)
        bindings.append(slugs)
        bindings.append(slugs.count)
        bindings.append(token.provider.storageCode)
        bindings.append(registration.platform.storageCode)
        bindings.append(registration.environment.storageCode)
        bindings.append(StoredCohortKey.stored(token.cohortKey))
        bindings.append(ByteBuffer(bytes: token.bytes))
        bindings.append(registration.autoDownload)
        bindings.append(registration.alertsAuthorized)
        bindings.append(registration.tier.storageCode)
        bindings.append(registration.timeZone)
        bindings.append(registration.appVersion)
        bindings.append(registration.osVersion)
        bindings.append(registration.model)
        bindings.append(registration.locale)
        bindings.append(registration.notifyWhenReady)
        bindings.append(registration.editionAlerts)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
