import APNs
import APNsSimulator
import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

/// One content API, many broadcasts: the broadcasts of publications that share a content origin never wake more
/// devices a second than the origin serves, whatever their plans say, with real `paperboy worker` processes.
@Suite(
    "content origins shared by broadcasts",
    .serialized,
    .enabled(if: FileManager.default.isExecutableFile(atPath: FaultRig.binary.path), "the paperboy binary is built beside the tests")
)
struct OriginTests {
    @Test(
        "two broadcasts of one origin, the first's follow-up wave overlapping the second's first wave: no second above 1.10 × the origin's capacity, every device pushed as often as planned",
        .timeLimit(.minutes(3))
    )
    func sharedCapacity() async throws {
        let capacity = 150.0
        try await FaultRig.with { rig in
            try await FaultTests.withSimulator { simulator in
                let publications = PublicationRepository(client: rig.client)
                _ = try await OriginRepository(client: rig.client).add(name: "content-api", capacity: capacity, logger: rig.logger)
                _ = try await publications.add(appID: rig.app.id, slug: "evening", title: nil, origin: "content-api", logger: rig.logger)
                let morning = try #require(try await publications.find(appID: rig.app.id, slug: "morning", logger: rig.logger))
                _ = try await publications.setOrigin(morning, origin: "content-api", logger: rig.logger)
                let morningTokens = try await rig.seed(1500)
                let eveningTokens = try await rig.seed(1500, publication: "evening", first: 10_001)
                let workers = try (1...2).map { try rig.worker("origin-\($0)", endpoint: simulator.url, arguments: ["--count-ahead", "10s"]) }
                defer { for worker in workers { worker.stop() } }

                // The morning: 100/s for 15 s, and wave 2 (no receipts: everyone) 30 s after its start.
                let first = try await rig.startBroadcast(
                    window: 15,
                    options: BroadcastOptions(pace: .window(15), cohorts: 2, waveInterval: 30, maxPushesPerDevice: 2, jitter: 1),
                    minimumWaveInterval: 10
                )
                try await WorkerProcessTests.waitUntil(seconds: 60) { simulator.stats().accepted >= 1500 }
                // The evening, 100/s for 15 s, started while the morning's wave 2 is not planned yet: it fits, and its
                // wave 1 then overlaps the morning's wave 2 (200/s asked of a 150/s origin).
                let asked = Date()
                let second = try await rig.startBroadcast(window: 15, publication: "evening")
                let secondStatus = try #require(try await rig.repository.progress(id: second, logger: rig.logger))
                // It fits beside the morning's wave 1, which holds 100 of the 150/s until its last slot: it starts
                // when asked (its jitter aside), or a second or two later on a loaded machine where the morning's
                // last slots ran late. Not after wave 2's reservation, which would come 30 s on.
                let startsIn = (secondStatus.waves.first?.startsAt ?? .distantFuture).timeIntervalSince(asked)
                #expect(startsIn < 5, "it started when asked: in \(startsIn) s; \(secondStatus.note ?? "no note")")

                _ = try await rig.waitForCompletion(first, seconds: 120)
                _ = try await rig.waitForCompletion(second, seconds: 60)
                let counts = simulator.acceptedCounts()
                let perSecond = simulator.stats().acceptsPerSecond
                print("[origin] per second: \(perSecond)")
                #expect(
                    Double(perSecond.max() ?? 0) <= capacity * 1.10 + 1,
                    "no second above the origin's \(capacity)/s: busiest \(perSecond.max() ?? 0)"
                )
                #expect(perSecond.contains { Double($0) > 105 }, "the overlap ran above either broadcast's own 100/s: the origin paced it")
                let morningWrong = morningTokens.filter { counts[$0.hex, default: 0] != 2 }
                let eveningWrong = eveningTokens.filter { counts[$0.hex, default: 0] != 1 }
                #expect(morningWrong.isEmpty, "\(morningWrong.count) morning devices not pushed exactly twice (two waves)")
                #expect(eveningWrong.isEmpty, "\(eveningWrong.count) evening devices not pushed exactly once")
            }
        }
    }

    @Test("a broadcast started while another holds the origin is planned after it, and its status says why")
    func plannedIntoWhatRemains() async throws {
        try await FaultRig.with { rig in
            let publications = PublicationRepository(client: rig.client)
            _ = try await OriginRepository(client: rig.client).add(name: "content-api", capacity: 120, logger: rig.logger)
            _ = try await publications.add(appID: rig.app.id, slug: "evening", title: nil, origin: "content-api", logger: rig.logger)
            let morning = try #require(try await publications.find(appID: rig.app.id, slug: "morning", logger: rig.logger))
            _ = try await publications.setOrigin(morning, origin: "content-api", logger: rig.logger)
            _ = try await rig.seed(12_000)
            _ = try await rig.seed(600, publication: "evening", first: 20_001)
            let first = try await rig.startBroadcast(window: 120)
            let second = try await rig.startBroadcast(window: 10, publication: "evening")
            let firstWave = try #require(try await rig.repository.progress(id: first, logger: rig.logger)?.waves.first)
            let status = try #require(try await rig.repository.progress(id: second, logger: rig.logger))
            let firstEnd = firstWave.startsAt.addingTimeInterval(firstWave.window)
            #expect(status.waves.first.map { $0.startsAt >= firstEnd.addingTimeInterval(-0.001) } == true, "first come, first served")
            #expect(status.note?.contains("origin content-api (120/s) is held by morning") == true, "\(status.note ?? "no note")")
            #expect(status.waves.first?.rate == 60, "its own pace: 600 devices over 10 s")
        }
    }
}
