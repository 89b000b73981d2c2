import APNsSimulator
import Foundation
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// Later waves carved from the members recorded when they were counted (migration 0021): PostgreSQL, the dispatcher on
/// a virtual clock and the APNs simulator, whose per-token accept counts are the truth.
@Suite("Recorded wave members")
struct WaveMembersTests {
    static let minute: TimeInterval = 60

    static func start(_ fixture: BroadcastFixture, edition: Edition, now: Date) async throws -> BroadcastStart {
        try await fixture.repository.start(
            editionID: edition.id,
            environment: .production,
            options: BroadcastOptions(pace: .window(10 * minute), cohorts: 4, maxPushesPerDevice: 2),
            origin: "test",
            now: now,
            logger: fixture.logger
        )
    }

    static func membersRecorded(_ id: UUID, wave: Int, _ fixture: BroadcastFixture) async throws -> Bool {
        var value = false
        let rows = try await fixture.db.client.query(
            "SELECT members FROM broadcast_waves WHERE broadcast_id = \(id) AND wave = \(Int16(wave))",
            logger: fixture.logger
        )
        for try await flag in rows.decode(Bool.self) { value = flag }
        return value
    }

    /// 40 targets, wave 1 sent to all of them, 10 receipts, then wave 2 counted ahead (26 minutes in: within
    /// --count-ahead of its start at 30).
    static func sendWaveOneAndCount(
        _ fixture: inout BroadcastFixture,
        now t0: Date
    ) async throws -> (id: UUID, start: Date, edition: Edition, dispatcher: Dispatcher) {
        try await fixture.register(40)
        let edition = try await fixture.publish(deadline: t0.addingTimeInterval(6 * 3600))
        let started = try await start(fixture, edition: edition, now: t0)
        let dispatcher = fixture.dispatcher()
        #expect(try await fixture.step(at: started.broadcast.start.addingTimeInterval(10 * minute + 5), dispatcher).sent == 40)
        for token in fixture.tokens.prefix(10) { try await fixture.receipt(token, edition: edition) }
        _ = try await fixture.step(at: started.broadcast.start.addingTimeInterval(26 * minute), dispatcher)
        return (started.broadcast.id, started.broadcast.start, edition, dispatcher)
    }

    @Test(
        "wave 2 goes to the members recorded by its count, each once: a receipt that came after the count keeps a device out, a device registered after it waits for the next edition, and the pruner removes the members once the broadcast ends"
    )
    func laterWaveFromRecordedMembers() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (id, start, edition, dispatcher) = try await Self.sendWaveOneAndCount(&fixture, now: t0)
            // Counted: its 30 members recorded.
            let members = try await fixture.scalar("SELECT count(*) FROM wave_members WHERE broadcast_id = \(id) AND wave = 2")
            #expect(members == 30, "40 targets, 10 receipts")

            // After the count: five more receipts, three new devices.
            for token in fixture.tokens[10..<15] { try await fixture.receipt(token, edition: edition) }
            try await fixture.register(3, offset: 1000)

            _ = try await fixture.step(at: start.addingTimeInterval(30 * Self.minute + 1), dispatcher)
            #expect(try await Self.membersRecorded(id, wave: 2, fixture), "wave 2 is carved from its recorded members")
            _ = try await fixture.step(at: start.addingTimeInterval(41 * Self.minute), dispatcher)
            let progress = try #require(try await fixture.repository.progress(id: id, logger: fixture.logger))
            #expect(progress.waves.map(\.counts.planned) == [40, 30])
            #expect(progress.waves.map(\.counts.sent) == [40, 25], "30 members, 5 of them answered after the count")

            let accepted = fixture.accepted()
            for token in fixture.tokens.prefix(15) { #expect(accepted[token.hex] == 1, "answered: wave 1 only") }
            for token in fixture.tokens[15..<40] { #expect(accepted[token.hex] == 2, "no receipt: waves 1 and 2") }
            for token in fixture.tokens[40...] { #expect(accepted[token.hex] == nil, "registered after the count") }

            // Two pushes at most: the broadcast completed with wave 2; its members go with the next prune, and only its.
            #expect(progress.state == .completed)
            try await fixture.db.client.query(
                "INSERT INTO wave_members SELECT gen_random_uuid(), 2, 0, d FROM generate_series(1, 7) d",
                logger: fixture.logger
            )
            let pruner = try LedgerPruner(client: fixture.db.client)
            let dry = try await pruner.prune(now: start.addingTimeInterval(45 * Self.minute), dryRun: true, logger: fixture.logger)
            #expect(dry.waveMembers == 30)
            let pruned = try await pruner.prune(now: start.addingTimeInterval(45 * Self.minute), logger: fixture.logger)
            #expect(pruned.waveMembers == 30)
            #expect(try await fixture.scalar("SELECT count(*) FROM wave_members WHERE broadcast_id = \(id)") == 0)
            #expect(try await fixture.scalar("SELECT count(*) FROM wave_members") == 7, "members of no counted wave stay")
        }
    }

    @Test("a wave counted without recorded members (by a worker of an earlier version) is carved from its audience as before, each device once")
    func laterWaveWithoutRecordedMembers() async throws {
        let t0 = Date()
        try await BroadcastFixture.with(start: t0) { fixture in
            let (id, start, _, dispatcher) = try await Self.sendWaveOneAndCount(&fixture, now: t0)
            // What an earlier version's count leaves: the counts, no members.
            try await fixture.db.client.query("DELETE FROM wave_members WHERE broadcast_id = \(id)", logger: fixture.logger)

            _ = try await fixture.step(at: start.addingTimeInterval(30 * Self.minute + 1), dispatcher)
            #expect(try await !Self.membersRecorded(id, wave: 2, fixture))
            _ = try await fixture.step(at: start.addingTimeInterval(41 * Self.minute), dispatcher)
            let progress = try #require(try await fixture.repository.progress(id: id, logger: fixture.logger))
            #expect(progress.waves.map(\.counts.sent) == [40, 30])
            let accepted = fixture.accepted()
            for token in fixture.tokens.prefix(10) { #expect(accepted[token.hex] == 1) }
            for token in fixture.tokens[10..<40] { #expect(accepted[token.hex] == 2) }
        }
    }
}
