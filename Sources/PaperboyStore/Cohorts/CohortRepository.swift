import Logging
import PaperboyCore
import PostgresNIO

/// Who a broadcast of a publication would wake, counted per cohort.
public struct CohortRepository: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The targets of `publication` in `environment` per cohort, when the audience is split into `cohorts`.
    ///
    /// Targets are the active, auto-downloading devices of the publication's app that subscribe to it. A
    /// device's cohort is computed from its stored key exactly as ``DeviceToken/cohort(count:)`` computes it
    /// from the token: `(key * cohorts) >> 32` on the unflipped 32-bit key, in one grouped query over the
    /// `devices_broadcast_scan` index.
    /// - Returns: `cohorts` counts, cohort 0 first; zero for a cohort with no targets.
    public func targetCounts(
        publication: Publication,
        environment: APNsEnvironment,
        cohorts: Int,
        logger: Logger
    ) async throws -> [Int] {
        precondition(Self.cohortCounts.contains(cohorts), "cohort count out of range")
        let rows = try await client.query(
            Self.targetCountsQuery(
                appID: publication.appID,
                publicationID: publication.id,
                environment: environment,
                cohorts: cohorts
            ),
            logger: logger
        )
        var counts = Array(repeating: 0, count: cohorts)
        for try await (cohort, count) in rows.decode((Int, Int).self) { counts[cohort] = count }
        return counts
    }

    static func targetCountsQuery(appID: Int, publicationID: Int, environment: APNsEnvironment, cohorts: Int) -> PostgresQuery {
        """
        SELECT ((cohort_key::bigint + 2147483648) * \(cohorts)) >> 32 AS cohort, count(*)
        FROM devices
        WHERE app_id = \(appID) AND environment = \(environment.storageCode)
            AND active AND auto_download AND \(publicationID) = ANY(subscriptions)
        GROUP BY 1
        """
    }

    /// The cohort counts a plan may use: enough to spread any fleet, few enough to list and lease.
    public static let cohortCounts: ClosedRange<Int> = 1...1024
}
