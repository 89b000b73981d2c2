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
    /// Targets are wave 1's audience (``WaveAudience/targets(of:environment:)``). A device's cohort is
    /// computed from its stored key exactly as ``DeviceToken/cohort(count:)`` computes it from the token, in
    /// one grouped query over the `devices_broadcast_scan` index.
    /// - Returns: `cohorts` counts, cohort 0 first; zero for a cohort with no targets.
    public func targetCounts(
        publication: Publication,
        environment: APNsEnvironment,
        cohorts: Int,
        logger: Logger
    ) async throws -> [Int] {
        precondition(Self.cohortCounts.contains(cohorts), "cohort count out of range")
        return try await counts(of: .targets(of: publication, environment: environment), cohorts: cohorts, logger: logger)
    }

    /// A wave's audience per cohort, when split into `cohorts`: `cohorts` counts, cohort 0 first. At millions
    /// of devices this reads the whole audience (seconds): callers hold no lock meanwhile.
    public func counts(of audience: WaveAudience, cohorts: Int, logger: Logger) async throws -> [Int] {
        let rows = try await client.query(audience.cohortCountsQuery(cohorts: cohorts), logger: logger)
        var counts = Array(repeating: 0, count: cohorts)
        for try await (cohort, count) in rows.decode((Int, Int).self) { counts[cohort] = count }
        return counts
    }

    /// The cohort counts a plan may use: enough to spread any fleet, few enough to list and lease.
    public static let cohortCounts: ClosedRange<Int> = 1...1024
}
