import Foundation
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

    /// Records `audience` as the members of its wave of `broadcastID` (`wave_members`, replacing those of an
    /// earlier count) and returns it counted per cohort, in one read of the audience: what a later wave's batches
    /// are carved from once it starts. Records nothing once the wave has started. At millions of devices this reads
    /// and writes the whole audience (minutes): callers hold no lock meanwhile.
    /// - Returns: `cohorts` counts, cohort 0 first.
    public func recordMembers(of audience: WaveAudience, broadcastID: UUID, cohorts: Int, logger: Logger) async throws -> [Int] {
        precondition(audience.wave > 1, "wave 1 is carved from its condition")
        return try await client.transaction(logger: logger) { connection in
            try await connection.query(audience.forgetMembersQuery(broadcastID: broadcastID), logger: logger)
            let rows = try await connection.query(audience.recordMembersQuery(broadcastID: broadcastID, cohorts: cohorts), logger: logger)
            var counts = Array(repeating: 0, count: cohorts)
            for try await (cohort, count) in rows.decode((Int, Int).self) { counts[cohort] = count }
            return counts
        }
    }

    /// The cohort counts a plan may use: enough to spread any fleet, few enough to list and lease.
    public static let cohortCounts: ClosedRange<Int> = 1...1024
}
