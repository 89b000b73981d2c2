import Foundation
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

extension AnswerEvidence {
    /// Adds the counts to this worker's rows of their ten seconds, merged as ``AnswerEvidence/merged(_:_:)`` does,
    /// under the app's row's share lock: none when the app's configuration is no longer `configuration` (its change
    /// deleted the evidence, and answers to the old one say nothing of the new). A change of the configuration waits
    /// for the lock, so its delete sees these rows.
    func tallyQuery(appID: Int, environment: APNsEnvironment, worker: String, configuration: Int?) -> PostgresQuery {
        let keys = counts.keys.sorted()
        let rows = keys.map { counts[$0]! }
        let periods = keys.map { Date(timeIntervalSince1970: TimeInterval($0.period)) }
        return """
            INSERT INTO answer_tallies AS t (app_id, environment, provider, period, worker, answers, invalid, since_invalid, reason, hint, last_accepted)
            SELECT \(appID), \(environment.storageCode), u.provider, u.period, \(worker), u.answers, u.invalid, u.since_invalid, u.reason, u.hint, nullif(u.last_accepted, \(Self.noAcceptance))
            FROM unnest(\(keys.map(\.provider.storageCode))::smallint[], \(periods)::timestamptz[], \(rows.map(\.answers))::integer[],
                \(rows.map(\.invalid))::integer[], \(rows.map(\.sinceInvalid))::integer[], \(rows.map(\.reason))::text[], \(rows.map(\.hint))::text[],
                \(rows.map { $0.lastAccepted ?? Self.noAcceptance })::timestamptz[])
                AS u(provider, period, answers, invalid, since_invalid, reason, hint, last_accepted)
            WHERE EXISTS (SELECT 1 FROM apps a WHERE a.id = \(appID)
                AND a.credentials_version = coalesce(\(configuration)::integer, a.credentials_version) FOR SHARE)
            ON CONFLICT (app_id, environment, provider, period, worker) DO UPDATE
            SET answers = t.answers + excluded.answers,
                since_invalid = t.since_invalid + CASE WHEN t.invalid > 0 THEN excluded.answers ELSE excluded.since_invalid END,
                invalid = t.invalid + excluded.invalid,
                reason = CASE WHEN excluded.invalid > 0 THEN excluded.reason ELSE t.reason END,
                hint = CASE WHEN excluded.invalid > 0 THEN excluded.hint ELSE t.hint END,
                last_accepted = greatest(t.last_accepted, excluded.last_accepted)
            """
    }

    /// A row without an accepted answer, in the statement's array of times (stored as null).
    static let noAcceptance = Date(timeIntervalSince1970: 0)
}
