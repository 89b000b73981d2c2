import PaperboyCore
import PostgresNIO

extension WaveAudience {
    /// The audience counted by cohort (split into `cohorts`), by the minute of the reader's day its key stands for,
    /// and by whether the key is the one the device's habit set (migration 0025): `cohort, minute, habit, count` rows.
    /// One read of the audience, as the plan's own count, plus a probe of each target's habit.
    func habitOrderQuery(cohorts: Int) -> PostgresQuery {
        query(
            """
            SELECT \(StoredCohortKey.cohortSQL(column: "d.cohort_key", count: "$9")),
                least((d.cohort_key::bigint + \(StoredCohortKey.offset)) / \(ReadingHabit.keysPerMinute), 1439)::integer,
                coalesce(h.cohort_key = d.cohort_key, false), count(*)
            FROM devices d LEFT JOIN device_habits h ON h.device_id = d.id
            WHERE {audience} GROUP BY 1, 2, 3
            """
        ) {
            $0.append(cohorts)
        }
    }
}
