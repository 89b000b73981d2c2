import APNsSimulator
import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `paperboy worker` as operators run it: real processes sharing one broadcast through PostgreSQL, one
/// killed with SIGKILL mid-broadcast. The simulator's per-token counts are the truth.
@Suite("paperboy worker processes")
struct WorkerProcessTests {
    static let binary = PaperboyBinary.url
    static let maxBatch = 100

    @Test(
        "a worker killed with SIGKILL mid-broadcast: another finishes it, every target sent, duplicates only from the killed worker's batches",
        .enabled(if: FileManager.default.isExecutableFile(atPath: binary.path), "the paperboy binary is built beside the tests"),
        .timeLimit(.minutes(3))
    )
    func sigkillLosesNothing() async throws {
        let devices = 3000
        try await BroadcastFixture.with { fixture in
            let tokens = try await Self.seed(devices, fixture: fixture)
            let edition = try await fixture.publish(deadline: Date().addingTimeInterval(3600))
            // 3,000 devices in 20 seconds (150/s) from a second from now; one wave.
            let options = BroadcastOptions(pace: .window(20), cohorts: 4, maxPushesPerDevice: 1, jitter: 1)
            let started = try await fixture.repository.start(
                editionID: edition.id,
                environment: .production,
                options: options,
                origin: "test",
                now: Date(),
                logger: fixture.logger
            )

            let first = try Self.worker("first", fixture: fixture)
            defer { if first.process.isRunning { kill(first.process.processIdentifier, SIGKILL) } }
            // Kill it when about a third is sent.
            try await Self.waitUntil(seconds: 60) { fixture.simulator.stats().accepted >= devices / 3 }
            kill(first.process.processIdentifier, SIGKILL)
            try await first.process.exited()
            #expect(first.process.terminationReason == .uncaughtSignal)
            let acceptedAtKill = fixture.simulator.stats().accepted
            #expect(acceptedAtKill < devices, "the first worker was killed mid-broadcast")

            let second = try Self.worker("second", fixture: fixture)
            defer { if second.process.isRunning { kill(second.process.processIdentifier, SIGKILL) } }
            let repository = fixture.repository
            let logger = fixture.logger
            try await Self.waitUntil(seconds: 90) {
                (try? await repository.progress(id: started.broadcast.id, logger: logger))?.state == .completed
            }
            kill(second.process.processIdentifier, SIGTERM)
            try await second.process.exited()
            #expect(second.process.terminationStatus == 0)

            let counts = fixture.accepted()
            let missing = tokens.filter { counts[$0.hex, default: 0] == 0 }
            #expect(missing.isEmpty, "every target was sent")
            let duplicates = counts.values.filter { $0 > 1 }
            #expect(counts.values.allSatisfy { $0 <= 2 })
            // The killed worker held at most four batches.
            #expect(duplicates.count <= 4 * Self.maxBatch)
            let progress = try #require(try await repository.progress(id: started.broadcast.id, logger: logger))
            #expect(progress.waves[0].counts.sent == devices, "every device recorded once")
        }
    }

    /// Inserts devices with tokens `token(i)` in one statement, as registration would store them.
    static func seed(_ count: Int, fixture: BroadcastFixture) async throws -> [DeviceToken] {
        let tokens = (0..<count).map { BroadcastFixture.token($0 + 1) }
        let publication = try #require(
            try await PublicationRepository(client: fixture.db.client).find(appID: fixture.app.id, slug: "morning", logger: fixture.logger)
        )
        try await fixture.db.client.query(
            """
            INSERT INTO devices (app_id, environment, cohort_key, auto_download, alerts_authorized, tier, token, subscriptions, time_zone)
            SELECT \(fixture.app.id), 0, u.key, true, false, 2, u.token, ARRAY[\(publication.id)]::integer[], 'Asia/Tokyo'
            FROM unnest(\(tokens.map { Int($0.storedCohortKey) })::integer[], \(tokens.map { ByteBuffer(bytes: $0.bytes) })::bytea[]) AS u(key, token)
            """,
            logger: fixture.logger
        )
        return tokens
    }

    static func worker(_ name: String, fixture: BroadcastFixture) throws -> (process: Process, log: URL) {
        let database = fixture.db.configuration
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-worker-\(name)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = binary
        process.arguments = [
            "worker", "--apns-endpoint", "http://127.0.0.1:\(fixture.simulator.port)", "--worker-name", name, "--lease", "3s",
            "--max-batch", "\(maxBatch)",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = "postgres://\(database.username)@\(database.host):\(database.port)/\(database.database)?sslmode=disable"
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return (process, log)
    }

    /// Polls `condition` every 50 ms for at most `seconds`.
    static func waitUntil(seconds: Int, _ condition: () async -> Bool) async throws {
        for _ in 0..<(seconds * 20) {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out after \(seconds) s")
        throw CancellationError()
    }
}
