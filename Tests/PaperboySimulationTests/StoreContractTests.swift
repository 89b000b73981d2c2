import Foundation
import Logging
import PaperboyCore
import PaperboySimulation
import PaperboyStore
import PaperboyTesting
import Testing

@testable import PaperboyBroadcast
@testable import PaperboyDispatch

/// The worker's store protocol (``WorkerStore``), one test function per contract, each run against the model the
/// simulation's workers use (``ModelStore``) and against PostgreSQL (``PostgresWorkerStore``, the store `paperboy
/// worker` runs): the same app, devices and broadcast in both (``ContractTests/with(devices:cohorts:window:_:)``), the
/// same calls through the protocol, the same expectations. A store that breaks a rule the worker relies on fails
/// here, whichever it is.
@Suite("The worker's store contract, against the model and PostgreSQL")
struct StoreContractTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case model
        case postgres
        var testDescription: String { rawValue }
    }

    /// The store of `kind` over the pair's data (leases on the caller's clock, as the pair's repository).
    static func store(_ kind: Kind, _ pair: ContractTests.Pair) -> any WorkerStore {
        switch kind {
        case .model: ModelStore(model: pair.model, answersOnItsClock: false)
        case .postgres: PostgresWorkerStore(repository: pair.repository, editions: EditionRepository(client: pair.db.client), patience: .seconds(30))
        }
    }

    static func with(
        _ kind: Kind,
        devices: Int = 12,
        fcm: Int = 0,
        cohorts: Int = 1,
        window: TimeInterval = 2,
        _ body: (any WorkerStore, ContractTests.Pair) async throws -> Void
    ) async throws {
        try await ContractTests.with(devices: devices, fcm: fcm, cohorts: cohorts, window: window) { pair in
            try await body(store(kind, pair), pair)
        }
    }

    static let logger = Logger(label: "paperboy.test.contract")

    static func query(
        _ owner: String,
        at now: Date,
        maxBatchSize: Int = 5,
        excludingBatches: [Int64] = [],
        takeOverGrace: TimeInterval = 0
    ) -> LeaseQuery {
        LeaseQuery(
            owner: owner,
            now: now,
            lookahead: 0.5,
            duration: 30,
            batchDuration: 1,
            maxBatchSize: maxBatchSize,
            excludingBatches: excludingBatches,
            takeOverGrace: takeOverGrace
        )
    }

    static func accepted(_ targets: [BatchTarget], at now: Date) -> [BatchOutcome] {
        targets.map { BatchOutcome(deviceID: $0.deviceID, sentAt: now, result: .accepted) }
    }

    @Test("leasing carves the wave once: batches of the asked size in key order, each with its devices, then nothing", arguments: Kind.allCases)
    func carving(_ kind: Kind) async throws {
        try await Self.with(kind) { store, pair in
            var now = pair.firstDue
            var seen: Set<Int64> = []
            var ordinal = 0
            var held: [Int64] = []
            while let lease = try await store.lease(Self.query("w1", at: now, excludingBatches: held), logger: Self.logger) {
                let batch = lease.batch
                #expect(batch.leases == 1)
                #expect(batch.firstOrdinal == ordinal, "batches follow each other in the cohort's order")
                #expect((1...5).contains(batch.devices))
                let targets = try await store.targets(of: batch, now: now, logger: Self.logger)
                #expect(targets.count == batch.devices)
                #expect(lease.targets.map { $0.map(\.deviceID) == targets.map(\.deviceID) } ?? true, "a carve's own targets are the batch's")
                #expect(seen.isDisjoint(with: targets.map(\.deviceID)), "no device in two batches")
                seen.formUnion(targets.map(\.deviceID))
                ordinal += batch.devices
                held.append(batch.id)
                now = now.addingTimeInterval(1)
            }
            #expect(seen.count == 12, "every device of the wave in one batch")
            #expect(try await store.lease(Self.query("w2", at: now), logger: Self.logger) == nil)
        }
    }

    @Test(
        "a mixed app (APNs and FCM devices): every device carved once with its own provider; a give-back naming FCM is left by workers that cannot send through it and taken by one that can, without the devices already recorded",
        arguments: Kind.allCases
    )
    func mixedApp(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 6, fcm: 6) { store, pair in
            var now = pair.firstDue
            var providers: [Int64: PushProvider] = [:]
            var held: [Int64] = []
            var mixed: (batch: LeasedBatch, targets: [BatchTarget])?
            while let lease = try await store.lease(Self.query("w1", at: now, excludingBatches: held), logger: Self.logger) {
                let targets = try await store.targets(of: lease.batch, now: now, logger: Self.logger)
                for target in targets { providers[target.deviceID] = target.token.provider }
                if mixed == nil, targets.contains(where: { $0.token.provider == .fcm }), targets.contains(where: { $0.token.provider == .apns }) {
                    mixed = (lease.batch, targets)
                }
                held.append(lease.batch.id)
                now = now.addingTimeInterval(1)
            }
            #expect(providers.count == 12, "every device once")
            #expect(providers.values.count { $0 == .fcm } == 6)
            let (batch, targets) = try #require(mixed, "a batch with devices of both providers (cohort keys interleave them)")
            #expect(targets.allSatisfy { ($0.token.provider == .fcm) == ($0.platform == .android) })
            let apns = targets.filter { $0.token.provider == .apns }
            let returned = targets.indices.filter { targets[$0].token.provider == .fcm }
            #expect(
                try await store.giveBack(
                    batch,
                    recorded: Self.accepted(apns, at: now),
                    returned: returned,
                    because: BatchSendMachine.GiveBack(providers: [.fcm: .unavailable("no service account here")]),
                    owner: "w1",
                    configuration: nil,
                    now: now,
                    logger: Self.logger
                )
            )
            let later = now.addingTimeInterval(0.1)
            let fcm = AppProvider(appID: pair.app, provider: .fcm)
            var query = Self.query("w2", at: later, excludingBatches: held.filter { $0 != batch.id })
            query.excludingProviders = [fcm]
            #expect(try await store.lease(query, logger: Self.logger) == nil, "a worker that cannot send through FCM leaves it")
            query.excludingProviders = []
            let taken = try #require(try await store.lease(query, logger: Self.logger)?.batch)
            #expect(taken.id == batch.id)
            let rest = try await store.targets(of: taken, now: later, logger: Self.logger)
            #expect(rest.map(\.deviceID) == returned.map { targets[$0].deviceID }, "the FCM devices, without the APNs ones recorded")
        }
    }

    @Test(
        "an expired lease is taken over only after the grace; the holder's renewal, record and slot are then refused, and the new holder's accepted",
        arguments: Kind.allCases
    )
    func takeoverAfterTheGrace(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 5, window: 1) { store, pair in
            let now = pair.firstDue
            let batch = try #require(try await store.lease(Self.query("w1", at: now), logger: Self.logger)?.batch)
            let expired = now.addingTimeInterval(30)
            let withinGrace = try await store.lease(Self.query("w2", at: expired.addingTimeInterval(5), takeOverGrace: 10), logger: Self.logger)
            #expect(withinGrace == nil, "a lease expired less than the grace ago is left to its holder")
            let taken = try #require(
                try await store.lease(Self.query("w2", at: expired.addingTimeInterval(11), takeOverGrace: 10), logger: Self.logger)?.batch
            )
            #expect(taken.id == batch.id)
            #expect(taken.leases == 2)
            let later = expired.addingTimeInterval(11.5)
            #expect(try await store.renew([batch], owner: "w1", duration: 30, now: later, logger: Self.logger).held.isEmpty)
            #expect(try await store.reclaimSlot(batch, from: 0, remaining: 5, owner: "w1", now: later, notBefore: nil, logger: Self.logger) == nil)
            let targets = try await store.targets(of: taken, now: later, logger: Self.logger)
            let outcomes = Self.accepted(targets, at: later)
            #expect(try await !store.record(batch, outcomes: outcomes, owner: "w1", configuration: nil, now: later, logger: Self.logger))
            #expect(try await store.renew([taken], owner: "w2", duration: 30, now: later, logger: Self.logger).held == [taken.id])
            #expect(try await store.record(taken, outcomes: outcomes, owner: "w2", configuration: nil, now: later, logger: Self.logger))
            // Recorded again (its COMMIT's answer lost): done, not refused.
            #expect(try await store.record(taken, outcomes: outcomes, owner: "w2", configuration: nil, now: later, logger: Self.logger))
        }
    }

    @Test("a renewed lease is not taken over at its first expiry; a slot claimed again starts no earlier than asked", arguments: Kind.allCases)
    func renewAndSlots(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 5, window: 1) { store, pair in
            let now = pair.firstDue
            let batch = try #require(try await store.lease(Self.query("w1", at: now), logger: Self.logger)?.batch)
            let renewed = try await store.renew([batch], owner: "w1", duration: 30, now: now.addingTimeInterval(20), logger: Self.logger)
            #expect(renewed.held == [batch.id])
            #expect(try await store.lease(Self.query("w2", at: now.addingTimeInterval(31)), logger: Self.logger) == nil)
            let asked = now.addingTimeInterval(25)
            let start = try #require(
                try await store.reclaimSlot(
                    batch,
                    from: 2,
                    remaining: 3,
                    owner: "w1",
                    now: now.addingTimeInterval(21),
                    notBefore: asked,
                    logger: Self.logger
                )
            )
            #expect(start >= asked)
        }
    }

    @Test("a give-back records what it names, and the rest is leased again by another worker; a repeat is harmless", arguments: Kind.allCases)
    func giveBack(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 5, window: 1) { store, pair in
            let now = pair.firstDue
            let batch = try #require(try await store.lease(Self.query("w1", at: now), logger: Self.logger)?.batch)
            let targets = try await store.targets(of: batch, now: now, logger: Self.logger)
            let recorded = Self.accepted(Array(targets.prefix(2)), at: now)
            let because = BatchSendMachine.GiveBack(draining: true)
            for _ in 0..<2 {
                #expect(
                    try await store.giveBack(
                        batch,
                        recorded: recorded,
                        returned: Array(2..<targets.count),
                        because: because,
                        owner: "w1",
                        configuration: nil,
                        now: now,
                        logger: Self.logger
                    )
                )
            }
            let later = now.addingTimeInterval(0.1)
            let taken = try #require(try await store.lease(Self.query("w2", at: later), logger: Self.logger)?.batch)
            #expect(taken.id == batch.id)
            let rest = try await store.targets(of: taken, now: later, logger: Self.logger)
            #expect(rest.map(\.deviceID) == targets.dropFirst(2).map(\.deviceID), "the devices recorded are left out")
        }
    }

    @Test(
        "a hold: raised once for the app's configuration, in its environment only, in the app's standing; none for an older configuration",
        arguments: Kind.allCases
    )
    func holds(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 2) { store, pair in
            var suspicion = MisconfigurationGuard.Suspicion(
                appID: pair.app,
                provider: .apns,
                answer: "DeviceTokenNotForTopic",
                likelyCause: "a wrong bundle id",
                invalid: 12,
                answers: 14
            )
            suspicion.version = pair.version - 1
            #expect(try await !store.raise(suspicion, by: "w1", logger: Self.logger), "evidence of a configuration changed since holds nothing")
            suspicion.version = pair.version
            #expect(try await store.raise(suspicion, by: "w1", logger: Self.logger))
            #expect(try await !store.raise(suspicion, by: "w2", logger: Self.logger), "held already")
            let production = try await store.standing(appID: pair.app, environment: .production, logger: Self.logger)
            #expect(production.held == [.apns: suspicion.reason])
            #expect(production.confirmed.isEmpty)
            #expect(try await store.standing(appID: pair.app, environment: .sandbox, logger: Self.logger).held.isEmpty)
        }
    }

    @Test("the app and the edition a batch names are found, with the app's configuration version; an unknown app is not", arguments: Kind.allCases)
    func appAndEdition(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 2) { store, pair in
            let batch = try #require(try await store.lease(Self.query("w1", at: pair.firstDue), logger: Self.logger)?.batch)
            let app = try #require(try await store.app(id: batch.appID, logger: Self.logger))
            #expect(app.id == pair.app)
            #expect(app.credentialsVersion == pair.version)
            #expect(try await store.app(id: pair.app + 1000, logger: Self.logger) == nil)
            #expect(try await store.edition(id: batch.editionID, logger: Self.logger) != nil)
            #expect(try await store.edition(id: UUID(), logger: Self.logger) == nil)
        }
    }

    @Test("a broadcast failed once ends: failing it again does nothing, and none of it is leased any more", arguments: Kind.allCases)
    func failedBroadcast(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 4) { store, pair in
            let now = pair.firstDue
            let failed = try await store.fail(broadcast: pair.broadcast, reason: "nobody can send", now: now, logger: Self.logger)
            let again = try await store.fail(broadcast: pair.broadcast, reason: "again", now: now, logger: Self.logger)
            let lease = try await store.lease(Self.query("w1", at: now), logger: Self.logger)
            #expect(failed)
            #expect(!again)
            #expect(lease == nil)
        }
    }

    @Test("sender statuses and a worker's heartbeat are stored without error; the heartbeat answers with the store's clock", arguments: Kind.allCases)
    func statuses(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 1) { store, pair in
            let now = pair.firstDue
            let problem = SenderHealth.Problem(
                appID: pair.app,
                provider: .apns,
                code: "load",
                reason: "no key here",
                since: 0,
                retryAt: 60,
                failures: 1
            )
            try await store.reportProblem(problem, worker: "w1", now: now, logger: Self.logger)
            try await store.reportSent(AppProvider(appID: pair.app, provider: .apns), worker: "w1", now: now, logger: Self.logger)
            let status = WorkerStatus(name: "w1", startedAt: now, seenAt: now)
            #expect(try await store.report(status, logger: Self.logger) != nil)
        }
    }

    /// An operator's `broadcast cancel`, in the store's own terms (not a worker's statement).
    static func cancel(_ store: any WorkerStore, _ pair: ContractTests.Pair, now: Date) async throws {
        if let model = store as? ModelStore {
            model.model.cancel(pair.broadcast, now: now)
        } else {
            _ = try await pair.repository.cancel(id: pair.broadcast, now: now, logger: pair.logger)
        }
    }

    @Test("a batch of a broadcast cancelled meanwhile is renewed as stopped, and nothing more of it is leased", arguments: Kind.allCases)
    func renewStopped(_ kind: Kind) async throws {
        try await Self.with(kind, devices: 10) { store, pair in
            let now = pair.firstDue
            let batch = try #require(try await store.lease(Self.query("w1", at: now), logger: Self.logger)?.batch)
            try await Self.cancel(store, pair, now: now.addingTimeInterval(1))
            let renewed = try await store.renew([batch], owner: "w1", duration: 30, now: now.addingTimeInterval(2), logger: Self.logger)
            #expect(renewed.held == [batch.id])
            #expect(renewed.stopped == [batch.id])
            #expect(try await store.lease(Self.query("w2", at: now.addingTimeInterval(2)), logger: Self.logger) == nil)
        }
    }

}
