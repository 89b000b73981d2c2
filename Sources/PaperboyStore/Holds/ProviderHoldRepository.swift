import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

/// An app's provider held for a suspected misconfiguration in one environment (`provider_holds`, migrations 0023, 0032).
public struct ProviderHold: Sendable, Equatable, Codable {
    public var appID: Int
    /// The environment of the broadcasts held: a sandbox test's answers never hold production.
    public var environment: APNsEnvironment
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
        environment: APNsEnvironment = .production,
        provider: PushProvider,
        answer: String,
        likelyCause: String,
        reason: String,
        raisedBy: String,
        raisedAt: Date,
        heldDeactivations: Int = 0
    ) {
        self.appID = appID
        self.environment = environment
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

    /// Holds the app's provider in `environment`, for answers to sends made under its configuration `version`
    /// (``App/credentialsVersion``); a hold already there stays as it was, and none is raised for an older
    /// configuration than the app's now (the operator changed it since: those answers say nothing of the new one).
    /// - Returns: whether this call raised it.
    @discardableResult
    public func raise(
        appID: Int,
        environment: APNsEnvironment = .production,
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
            INSERT INTO provider_holds (app_id, environment, provider, answer, likely_cause, reason, raised_by)
            SELECT \(appID), \(environment.storageCode), \(provider.storageCode), \(answer), \(likelyCause), \(reason), \(worker)
            FROM apps WHERE id = \(appID) AND credentials_version = \(version)
            ON CONFLICT (app_id, environment, provider) DO NOTHING RETURNING 1
            """,
            logger: logger
        )
        return try await rows.collect().count == 1
    }

    /// Every hold, with how many deactivations it holds.
    public func all(logger: Logger) async throws -> [ProviderHold] {
        try await select("", logger: logger)
    }

    /// The app's holds, of `environment` only when given.
    public func holds(appID: Int, environment: APNsEnvironment? = nil, logger: Logger) async throws -> [ProviderHold] {
        try await select(
            "WHERE h.app_id = \(appID) AND (\(environment?.storageCode)::smallint IS NULL OR h.environment = \(environment?.storageCode))",
            logger: logger
        )
    }

    /// The deactivations held for hold `alias`'s app, environment and provider, as SQL (an `integer`): what a hold
    /// shows here and in the status (``BroadcastStatus``).
    static func heldDeactivations(of alias: String) -> String {
        """
        (SELECT count(*)::integer FROM held_deactivations d
            WHERE d.app_id = \(alias).app_id AND d.environment = \(alias).environment AND d.provider = \(alias).provider)
        """
    }

    private func select(_ condition: PostgresQuery, logger: Logger) async throws -> [ProviderHold] {
        let query = PostgresQuery(
            unsafeSQL: """
                SELECT h.app_id, h.environment, h.provider, h.answer, h.likely_cause, h.reason, h.raised_by, h.raised_at,
                    \(Self.heldDeactivations(of: "h"))
                FROM provider_holds h \(condition.sql) ORDER BY h.app_id, h.environment, h.provider
                """,
            binds: condition.binds
        )
        let rows = try await client.query(query, logger: logger)
        var holds: [ProviderHold] = []
        for try await (app, environment, provider, answer, cause, reason, by, at, held) in rows.decode(
            (Int, Int16, Int16, String, String, String, String, Date, Int).self
        ) {
            holds.append(
                ProviderHold(
                    appID: app,
                    environment: APNsEnvironment(storageCode: environment),
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

    /// The app's providers whose "not valid" answers an operator confirmed as the tokens' truth for the app's
    /// configuration now, within the last 24 hours (``confirm(appID:provider:environment:logger:)``): no worker
    /// suspects a misconfiguration from them.
    public func confirmed(appID: Int, environment: APNsEnvironment = .production, logger: Logger) async throws -> Set<PushProvider> {
        try await standing(appID: appID, environment: environment, logger: logger).confirmed
    }

    /// The app's holds in `environment` and its confirmed providers there, in one statement: what a worker reads with
    /// every batch.
    public func standing(
        appID: Int,
        environment: APNsEnvironment,
        logger: Logger
    ) async throws -> (holds: [ProviderHold], confirmed: Set<PushProvider>) {
        let rows = try await client.query(
            """
            SELECT false, h.provider, h.answer, h.likely_cause, h.reason, h.raised_by, h.raised_at,
                (SELECT count(*)::integer FROM held_deactivations d
                 WHERE d.app_id = h.app_id AND d.environment = h.environment AND d.provider = h.provider)
            FROM provider_holds h WHERE h.app_id = \(appID) AND h.environment = \(environment.storageCode)
            UNION ALL
            SELECT true, c.provider, '', '', '', '', c.confirmed_at, 0
            FROM provider_confirmations c JOIN apps a ON a.id = c.app_id AND a.credentials_version = c.version
            WHERE c.app_id = \(appID) AND c.environment = \(environment.storageCode) AND c.confirmed_at > now() - interval '24 hours'
            """,
            logger: logger
        )
        var holds: [ProviderHold] = []
        var confirmed: Set<PushProvider> = []
        for try await (isConfirmation, code, answer, cause, reason, by, at, held) in rows.decode(
            (Bool, Int16, String, String, String, String, Date, Int).self
        ) {
            let provider = PushProvider(storageCode: code)
            if isConfirmation {
                confirmed.insert(provider)
                continue
            }
            holds.append(
                ProviderHold(
                    appID: appID,
                    environment: environment,
                    provider: provider,
                    answer: answer,
                    likelyCause: cause,
                    reason: reason,
                    raisedBy: by,
                    raisedAt: at,
                    heldDeactivations: held
                )
            )
        }
        return (holds.sorted { $0.provider.rawValue < $1.provider.rawValue }, confirmed)
    }

    /// The configuration was at fault and is fixed: the hold ends, and the deactivations it held are dropped (the
    /// devices stay active and are sent again). The app's configuration version goes up, as for any change of it:
    /// answers to sends made before say nothing of the fixed one, and raise no hold again; the fleet's evidence
    /// starts afresh.
    /// - Returns: whether there was a hold, and how many deactivations were dropped.
    public func release(
        appID: Int,
        provider: PushProvider,
        environment: APNsEnvironment? = nil,
        audit: AuditEntry? = nil,
        logger: Logger
    ) async throws -> (released: Bool, dropped: Int) {
        let code = environment?.storageCode
        return try await client.transaction(logger: logger) { connection in
            try await Self.newConfiguration(appID: appID, changed: provider, environment: code, on: connection, logger: logger)
            let released =
                try await connection.query(Self.deleteHolds(appID: appID, provider: provider, environment: code), logger: logger).collect().count > 0
            let dropped = try await connection.query(
                """
                DELETE FROM held_deactivations WHERE app_id = \(appID) AND provider = \(provider.storageCode)
                    AND (\(code)::smallint IS NULL OR environment = \(code)) RETURNING 1
                """,
                logger: logger
            ).collect().count
            if var audit {
                audit.appID = appID
                audit.detail = (released ? "the hold ended" : "no hold") + "; \(dropped) held deactivation\(dropped == 1 ? "" : "s") dropped"
                try await AuditRepository.insert(audit, on: connection, logger: logger)
            }
            return (released, dropped)
        }
    }

    /// The tokens really are dead: the held deactivations of the app's provider are applied now, the hold ends (the
    /// configuration version goes up, as for ``release(appID:provider:logger:)``), and for the new version, 24 hours at
    /// most, "not valid" answers through the provider are taken as the tokens' truth: no worker holds the provider
    /// for them, and their deactivations are applied after the usual ten minutes. Without that, the devices answered
    /// after the hold (given back, not held) tripped the breaker again within seconds: a fleet with many invalid tokens
    /// (a Firebase project migration, an import of another app's tokens) could not get out of the hold.
    /// - Returns: whether there was a hold, and how many devices were deactivated.
    public func confirm(
        appID: Int,
        provider: PushProvider,
        environment: APNsEnvironment? = nil,
        audit: AuditEntry? = nil,
        logger: Logger
    ) async throws -> (released: Bool, deactivated: Int) {
        let code = environment?.storageCode
        return try await client.transaction(logger: logger) { connection in
            try await Self.newConfiguration(appID: appID, changed: provider, environment: code, on: connection, logger: logger)
            try await connection.query(
                """
                INSERT INTO provider_confirmations (app_id, environment, provider, version, confirmed_at)
                SELECT a.id, e.environment, \(provider.storageCode), a.credentials_version, now()
                FROM apps a CROSS JOIN unnest(ARRAY[0, 1]::smallint[]) AS e(environment)
                WHERE a.id = \(appID) AND (\(code)::smallint IS NULL OR e.environment = \(code))
                ON CONFLICT (app_id, environment, provider) DO UPDATE SET version = excluded.version, confirmed_at = excluded.confirmed_at
                """,
                logger: logger
            )
            let released =
                try await connection.query(Self.deleteHolds(appID: appID, provider: provider, environment: code), logger: logger).collect().count > 0
            let rows = try await connection.query(
                """
                WITH due AS (
                    DELETE FROM held_deactivations WHERE app_id = \(appID) AND provider = \(provider.storageCode)
                        AND (\(code)::smallint IS NULL OR environment = \(code))
                    RETURNING device_id, answered_at
                )
                UPDATE devices SET unregistered_at = greatest(devices.unregistered_at, due.answered_at),
                    active = devices.active AND devices.registered_at > due.answered_at, updated_at = now()
                FROM due WHERE devices.id = due.device_id AND devices.active AND devices.registered_at <= due.answered_at RETURNING 1
                """,
                logger: logger
            )
            let deactivated = try await rows.collect().count
            if var audit {
                audit.appID = appID
                audit.detail = (released ? "the hold ended" : "no hold") + "; \(deactivated) device\(deactivated == 1 ? "" : "s") deactivated"
                try await AuditRepository.insert(audit, on: connection, logger: logger)
            }
            return (released, deactivated)
        }
    }

    /// Applies held deactivations older than `cutoff` (ten minutes by the database's clock when nil) whose app's
    /// provider is not held, `limit` at most: the per-second step of the workers, for the apps' providers the fleet's
    /// evidence clears, each answered before its time (`only`: those of ``fleetAnswers(before:smallFleet:logger:)``
    /// that ``MisconfigurationGuard``'s fleet rule lets through, before ``MisconfigurationGuard/appliedBefore(_:configuration:)``;
    /// nil: any).
    /// - Returns: how many were applied.
    @discardableResult
    public func applyDue(
        before cutoff: Date? = nil,
        limit: Int = 1000,
        only pairs: [HoldKey: Date]? = nil,
        logger: Logger
    ) async throws -> Int {
        if let pairs, pairs.isEmpty { return 0 }
        let rows = try await client.query(RequestStatements.applyHeldDeactivations(before: cutoff, limit: limit, only: pairs), logger: logger)
        var applied = 0
        for try await count in rows.decode(Int.self) { applied = count }
        return applied
    }

    /// The evidence of every app's provider that has held deactivations and no hold: every worker's answers through
    /// it from the ten seconds the oldest held one was sent in on (in those ten seconds, those after a "not valid" one:
    /// `answer_tallies`, by when they were sent), how many are due (answered before
    /// `cutoff`, ten minutes ago by the database's clock when nil), the app's active devices through it up to
    /// `smallFleet`, whether an operator confirmed, and when the latest accepted push was sent. One index probe per app and provider for the oldest, a few
    /// rows of tallies each; the held deactivations counted up to ``countedUpTo`` (the rule needs no more).
    public func fleetAnswers(
        before cutoff: Date? = nil,
        smallFleet: Int = 20,
        logger: Logger
    ) async throws -> [FleetAnswers] {
        let rows = try await client.query(Self.fleetAnswersQuery(before: cutoff, smallFleet: smallFleet), logger: logger)
        var fleets: [FleetAnswers] = []
        let decoded = rows.decode((Int, Int16, Int16, Int, Int, Int, Int, Int, String, String, Int, Bool, Date?).self)
        for try await (app, environment, provider, version, held, due, answers, invalid, reason, hint, active, confirmed, accepted) in decoded {
            fleets.append(
                FleetAnswers(
                    appID: app,
                    environment: APNsEnvironment(storageCode: environment),
                    provider: PushProvider(storageCode: provider),
                    version: version,
                    held: held,
                    due: due,
                    answers: answers,
                    invalid: invalid,
                    reason: reason,
                    hint: hint,
                    activeDevices: active,
                    confirmed: confirmed,
                    lastAccepted: accepted
                )
            )
        }
        return fleets
    }

    /// The statement of ``fleetAnswers(before:smallFleet:logger:)``.
    static func fleetAnswersQuery(before cutoff: Date?, smallFleet: Int) -> PostgresQuery {
        let codes = PushProvider.allCases.map(\.storageCode)
        return """
            WITH pairs AS (
                SELECT a.id AS app_id, v.environment, g.provider, a.credentials_version AS version,
                    (SELECT min(h.sent_at) FROM held_deactivations h
                     WHERE h.app_id = a.id AND h.environment = v.environment AND h.provider = g.provider) AS oldest
                FROM apps a CROSS JOIN unnest(\(codes)::smallint[]) AS g(provider) CROSS JOIN unnest(ARRAY[0, 1]::smallint[]) AS v(environment)
                WHERE NOT EXISTS (SELECT 1 FROM provider_holds p WHERE p.app_id = a.id AND p.environment = v.environment AND p.provider = g.provider)
            )
            SELECT x.app_id, x.environment, x.provider, x.version,
                (SELECT count(*)::integer FROM (SELECT 1 FROM held_deactivations h
                    WHERE h.app_id = x.app_id AND h.environment = x.environment AND h.provider = x.provider LIMIT \(Self.countedUpTo)) c),
                (SELECT count(*)::integer FROM (SELECT 1 FROM held_deactivations h
                    WHERE h.app_id = x.app_id AND h.environment = x.environment AND h.provider = x.provider
                        AND h.answered_at < coalesce(\(cutoff)::timestamptz, now() - interval '10 minutes') LIMIT \(Self.countedUpTo)) c),
                coalesce(t.answers, 0)::integer, coalesce(t.invalid, 0)::integer, coalesce(r.reason, ''), coalesce(r.hint, ''),
                (SELECT count(*)::integer FROM (SELECT 1 FROM devices d
                    WHERE d.app_id = x.app_id AND d.environment = x.environment AND d.active AND d.auto_download AND d.provider = x.provider
                    ORDER BY d.cohort_key LIMIT \(smallFleet)) f),
                EXISTS (SELECT 1 FROM provider_confirmations c
                    WHERE c.app_id = x.app_id AND c.environment = x.environment AND c.provider = x.provider AND c.version = x.version
                        AND c.confirmed_at > now() - interval '24 hours'),
                t.last_accepted
            FROM pairs x
            LEFT JOIN LATERAL (
                SELECT sum(CASE WHEN s.period = date_bin('10 seconds', x.oldest, 'epoch') THEN s.since_invalid ELSE s.answers END) AS answers,
                    sum(s.invalid) AS invalid, max(s.last_accepted) AS last_accepted
                FROM answer_tallies s
                WHERE s.app_id = x.app_id AND s.environment = x.environment AND s.provider = x.provider
                    AND s.period >= date_bin('10 seconds', x.oldest, 'epoch')
            ) t ON true
            LEFT JOIN LATERAL (
                SELECT s.reason, s.hint FROM answer_tallies s
                WHERE s.app_id = x.app_id AND s.environment = x.environment AND s.provider = x.provider AND s.invalid > 0
                    AND s.period >= date_bin('10 seconds', x.oldest, 'epoch')
                ORDER BY s.invalid DESC, s.period DESC LIMIT 1
            ) r ON true
            WHERE x.oldest IS NOT NULL
            ORDER BY x.app_id, x.environment, x.provider
            """
    }

    /// Held deactivations are counted up to this many per app and provider each second: at 10 million devices a
    /// healthy fleet's few per cent of stray tokens are hundreds of thousands.
    static let countedUpTo = 10_000

    /// Deletes the fleet's evidence older than `cutoff` (a day ago by the database's clock when nil).
    /// - Returns: how many rows.
    @discardableResult
    public func pruneEvidence(before cutoff: Date? = nil, logger: Logger) async throws -> Int {
        let rows = try await client.query(
            "DELETE FROM answer_tallies WHERE period < coalesce(\(cutoff)::timestamptz, now() - interval '1 day') RETURNING 1",
            logger: logger
        )
        return try await rows.collect().count
    }

    /// The fleet's evidence of the app's provider is forgotten: its configuration changed.
    private static func forgetEvidence(appID: Int, provider: PushProvider, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "DELETE FROM answer_tallies WHERE app_id = \(appID) AND provider = \(provider.storageCode)",
            logger: logger
        )
    }

    /// Ends the app's holds of `provider` in the environment of `code` (both when nil).
    static func deleteHolds(appID: Int, provider: PushProvider, environment code: Int16?) -> PostgresQuery {
        """
        DELETE FROM provider_holds WHERE app_id = \(appID) AND provider = \(provider.storageCode)
            AND (\(code)::smallint IS NULL OR environment = \(code)) RETURNING 1
        """
    }

    /// A new version of the app's configuration, for a change of `provider`'s in `environment` (both when nil):
    /// workers load its credentials again and count answers afresh (``configurationChanged(appID:changed:environment:on:logger:)``).
    static func newConfiguration(
        appID: Int,
        changed provider: PushProvider,
        environment code: Int16?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.query("UPDATE apps SET credentials_version = credentials_version + 1 WHERE id = \(appID)", logger: logger)
        try await configurationChanged(appID: appID, changed: provider, environment: code, on: connection, logger: logger)
    }

    /// What follows every new version of the app's configuration for a change of `provider`'s (a release, a confirm,
    /// `apps set-apns` / `set-fcm` / `set-bundle-id`), in its transaction: the fleet's evidence of `provider` is
    /// forgotten (answers to the old configuration say nothing of the new), the operators' confirmations of the app's
    /// other providers and environments stand, and the batches given back naming `provider` count towards
    /// `--fail-after` from now. The model's `newConfiguration` does the same.
    static func configurationChanged(
        appID: Int,
        changed provider: PushProvider,
        environment code: Int16?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await forgetEvidence(appID: appID, provider: provider, on: connection, logger: logger)
        try await carryConfirmations(appID: appID, changed: provider, environment: code, on: connection, logger: logger)
        try await restartGivenBackCount(appID: appID, provider: provider, environment: code, on: connection, logger: logger)
    }

    /// A hold ended (a release, a confirm, a change of the provider's configuration): the app's open batches given back
    /// naming `provider` count towards `--fail-after` from now, not from their give-back. Batches given back by a
    /// keyless worker just before a hold waited through it (left by every worker while held); counted from then, a
    /// hold of more than `--fail-after` failed the broadcast the second it ended, when the same keyless worker named
    /// the provider again (found by the simulation: `paperboy-sim`, seed 7674; issue 47, finding 2).
    private static func restartGivenBackCount(
        appID: Int,
        provider: PushProvider,
        environment code: Int16?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE broadcast_batches bb SET given_back_since = now()
            FROM broadcasts b JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id
            WHERE bb.broadcast_id = b.id AND b.state = 'running' AND p.app_id = \(appID)
                AND (\(code)::smallint IS NULL OR b.environment = \(code))
                AND bb.done_at IS NULL AND bb.given_back_since IS NOT NULL AND \(provider.storageCode) = ANY (bb.given_back_providers)
            """,
            logger: logger
        )
    }

    /// After the app's configuration version went up for a change of `provider`'s in `environment` (both when nil),
    /// the confirmations of its other providers and environments that were for the version before are for the new one:
    /// a confirm, release or new key of one provider says nothing of another's tokens. Found by the simulation
    /// (`paperboy-sim`, seed 732): an operator confirmed FCM's deactivations (a Firebase migration's old tokens), then
    /// APNs' (imported tokens); the second confirm raised the version, FCM's confirmation lapsed with it, and the
    /// breaker held FCM again, with no command to end it for good.
    private static func carryConfirmations(
        appID: Int,
        changed provider: PushProvider,
        environment code: Int16?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE provider_confirmations c SET version = a.credentials_version
            FROM apps a
            WHERE a.id = \(appID) AND c.app_id = a.id AND c.version = a.credentials_version - 1
                AND NOT (c.provider = \(provider.storageCode) AND (\(code)::smallint IS NULL OR c.environment = \(code)))
            """,
            logger: logger
        )
    }

    /// How many deactivations are held now.
    public func heldCount(logger: Logger) async throws -> Int {
        let rows = try await client.query("SELECT count(*)::integer FROM held_deactivations", logger: logger)
        var count = 0
        for try await value in rows.decode(Int.self) { count = value }
        return count
    }
}
