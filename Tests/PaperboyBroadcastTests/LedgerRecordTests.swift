import Foundation
import InMemoryLogging
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// The record of a batch against PostgreSQL when the ledger already has a row of one of its devices in its wave: the
/// ledger's INSERT has no `ON CONFLICT` (issue 49), so this path is the fallback that keeps what was recorded first.
@Suite("Recording a batch into the ledger")
struct LedgerRecordTests {
    @Test(
        "a device recorded twice in one wave keeps its first row: the second batch is still recorded and ends, and an error log line names the device"
    )
    func duplicateKeepsFirstRow() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (_, started) = try await DispatcherTests.startOneCohort(devices: 40, fixture: &fixture, now: t0)
            let start = started.broadcast.start
            func lease(_ at: Date) async throws -> LeasedBatch {
                try #require(
                    try await fixture.repository.lease(
                        owner: "worker",
                        now: at,
                        lookahead: 2,
                        duration: 30,
                        batchDuration: 1,
                        maxBatchSize: 1000,
                        logger: fixture.logger
                    )
                )
            }
            let first = try await lease(start)
            let firstTargets = try await fixture.repository.targets(of: first, now: start, logger: fixture.logger)
            let duplicate = try #require(firstTargets.first?.deviceID)
            let firstOutcomes = firstTargets.map { BatchOutcome(deviceID: $0.deviceID, sentAt: start, result: .accepted) }
            #expect(try await fixture.repository.record(first, outcomes: firstOutcomes, owner: "worker", now: start, logger: fixture.logger))

            let second = try await lease(start.addingTimeInterval(1))
            let secondTargets = try await fixture.repository.targets(of: second, now: start, logger: fixture.logger)
            #expect(!secondTargets.isEmpty && !secondTargets.contains { $0.deviceID == duplicate })
            // A device of the first batch, as if it had been pushed again in this wave.
            let secondOutcomes =
                secondTargets.map { BatchOutcome(deviceID: $0.deviceID, sentAt: start.addingTimeInterval(1), result: .accepted) }
                + [BatchOutcome(deviceID: duplicate, sentAt: start.addingTimeInterval(1), result: .fateUnknown)]
            let lines = InMemoryLogHandler()
            let logger = Logger(label: "paperboy.test") { _ in lines }
            #expect(try await fixture.repository.record(second, outcomes: secondOutcomes, owner: "worker", now: start, logger: logger))

            // The first row stays; the second batch's own devices are recorded; the batch is done.
            let rows = try await fixture.db.client.query(
                "SELECT device_id, outcome FROM deliveries WHERE broadcast_id = \(started.broadcast.id) AND wave = 1",
                logger: fixture.logger
            )
            var outcomes: [Int64: String] = [:]
            for try await (device, outcome) in rows.decode((Int64, String).self) { outcomes[device] = outcome }
            #expect(outcomes.count == firstTargets.count + secondTargets.count)
            #expect(outcomes[duplicate] == "accepted", "the row recorded first is kept")
            for target in secondTargets { #expect(outcomes[target.deviceID] == "accepted") }
            let done = try await fixture.db.client.query(
                "SELECT done_at IS NOT NULL FROM broadcast_batches WHERE id = \(second.id)",
                logger: fixture.logger
            )
            for try await isDone in done.decode(Bool.self) { #expect(isDone) }

            let errors = lines.entries.filter { $0.level == .error }
            #expect(errors.count == 1)
            #expect(errors.first?.message == "devices of a batch had been recorded in its wave already: their first rows are kept")
            #expect(errors.first?.metadata[LogKey.deviceIDs] == "\(duplicate)")
            #expect(errors.first?.metadata[LogKey.devices] == "1")
            #expect(errors.first?.metadata[LogKey.batch] == "\(second.id)")
        }
    }
}
