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
        try await targetCountsAndFCM(publication: publication, environment: environment, cohorts: cohorts, logger: logger).counts
    }

    /// ``targetCounts(publication:environment:cohorts:logger:)``, and how many of the targets are FCM devices
    /// (a broadcast with any keeps its start away from the quarter-hour marks, as Firebase asks).
    public func targetCountsAndFCM(
        publication: Publication,
        environment: APNsEnvironment,
        cohorts: Int,
        logger: Logger
    ) async throws -> (counts: [Int], fcm: Int) {
        precondition(Self.cohortCounts.contains(cohorts), "cohort count out of range")
        return try await countsAndFCM(of: .targets(of: publication, environment: environment), cohorts: cohorts, logger: logger)
    }

    /// A wave's audience per cohort, when split into `cohorts`: `cohorts` counts, cohort 0 first. At millions
    /// of devices this reads the whole audience (seconds): callers hold no lock meanwhile.
    public func counts(of audience: WaveAudience, cohorts: Int, logger: Logger) async throws -> [Int] {
        try await countsAndFCM(of: audience, cohorts: cohorts, logger: logger).counts
    }

    /// ``counts(of:cohorts:logger:)`` and how many of the audience are FCM devices, in the same read.
    public func countsAndFCM(of audience: WaveAudience, cohorts: Int, logger: Logger) async throws -> (counts: [Int], fcm: Int) {
        let rows = try await client.query(audience.cohortCountsQuery(cohorts: cohorts), logger: logger)
        var counts = Array(repeating: 0, count: cohorts)
        var fcm = 0
        for try await (cohort, count, fcmCount) in rows.decode((Int, Int, Int).self) {
            counts[cohort] = count
            fcm += fcmCount
        }
        return (counts, fcm)
    }

    /// The cohort counts a plan may use: enough to spread any fleet, few enough to list and lease.
    public static let cohortCounts: ClosedRange<Int> = 1...1024
}
