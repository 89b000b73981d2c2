import Foundation
import Logging
import PaperboyCore
import PaperboySimulation
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

@testable import PaperboyBroadcast
@testable import PaperboyDispatch

/// The wave driver's store protocol (``WaveStore``), the same test function run against the model the simulation's
/// duties use (``ModelStore``) and against PostgreSQL (``PostgresWaveStore``, the store every worker's duties run):
/// the same app, devices and broadcast in both (``ContractTests/with(devices:fcm:cohorts:window:_:)``), wave 1 sent
/// through the worker's store, receipts posted, and production's ``WaveDriver`` moving the broadcast along.
@Suite("The waves' store contract, against the model and PostgreSQL")
struct WaveStoreContractTests {
    typealias Kind = StoreContractTests.Kind
    static let logger = Logger(label: "paperboy.test.contract")

    /// Every batch due in the 30 s from `start` leased and recorded accepted, a second apart; the devices they carried.
    static func sendWave(_ store: any WorkerStore, from start: Date) async throws -> (devices: [Int64], end: Date) {
        var now = start
        var held: [Int64] = []
        var devices: [Int64] = []
        while now < start.addingTimeInterval(30) {
            guard let lease = try await store.lease(StoreContractTests.query("w1", at: now, excludingBatches: held), logger: logger) else {
                now = now.addingTimeInterval(1)
                continue
            }
            let targets = try await store.targets(of: lease.batch, now: now, logger: logger)
            devices += targets.map(\.deviceID)
            _ = try await store.record(
                lease.batch,
                outcomes: StoreContractTests.accepted(targets, at: now),
                owner: "w1",
                configuration: nil,
                now: now,
                logger: logger
            )
            held.append(lease.batch.id)
            now = now.addingTimeInterval(1)
        }
        return (devices.sorted(), now)
    }

    /// The driver's rounds at `now` until it has nothing more to do (a few at most).
    static func advance<Store: WaveStore>(_ driver: WaveDriver<Store>, at now: Date) async throws -> [BroadcastEvent] {
        var events: [BroadcastEvent] = []
        for _ in 0..<6 {
            let round = try await driver.advance(now: now, logger: logger)
            if round.isEmpty && !events.isEmpty { break }
            events += round
        }
        return events
    }

    /// Production's wave driver, over the store of `kind`, advanced at `now` (``advance(_:at:)``).
    static func advance(_ kind: Kind, _ pair: ContractTests.Pair, model: ModelStore, at now: Date) async throws -> [BroadcastEvent] {
        switch kind {
        case .model: try await advance(WaveDriver(store: model, countAhead: 60, owner: "d1", claimSeconds: 60), at: now)
        case .postgres:
            try await advance(
                WaveDriver(store: PostgresWaveStore(repository: pair.repository), countAhead: 60, owner: "d1", claimSeconds: 60),
                at: now
            )
        }
    }

    /// The successful receipts of `devices` for the broadcast's edition, on the store of `kind`.
    static func receive(_ devices: [Int64], _ kind: Kind, _ pair: ContractTests.Pair, model: ModelStore) async throws {
        switch kind {
        case .model:
            for device in devices { model.model.receive(device: device, edition: pair.broadcast, now: Date()) }
        case .postgres:
            let rows = try await pair.db.client.query("SELECT edition_id FROM broadcasts WHERE id = \(pair.broadcast)", logger: pair.logger)
            var edition: UUID?
            for try await id in rows.decode(UUID.self) { edition = id }
            let receipts = ReceiptRepository(client: pair.db.client)
            for device in devices {
                guard case .apns(let token) = pair.model.devices[device]?.token else { continue }
                _ = try await receipts.record(
                    appID: pair.app,
                    token: token,
                    ReceiptReport(editionID: try #require(edition), result: .newData),
                    logger: pair.logger
                )
            }
        }
    }

    @Test(
        "wave 2 goes to the devices with no receipt when it is counted: the driver starts it a wave interval after wave 1, its batches carry exactly those devices, and once everyone answered the broadcast completes",
        arguments: Kind.allCases
    )
    func followUpWave(_ kind: Kind) async throws {
        try await ContractTests.with(devices: 12, cohorts: 2, window: 2) { pair in
            let model = ModelStore(model: pair.model, answersOnItsClock: false)
            let worker: any WorkerStore = kind == .model ? model : StoreContractTests.store(.postgres, pair)
            let wave1 = try await Self.sendWave(worker, from: pair.firstDue)
            #expect(wave1.devices.count == 12)
            let answered = Array(wave1.devices.prefix(5))
            try await Self.receive(answered, kind, pair, model: model)

            let interval = BroadcastOptions.defaultWaveInterval
            let waveStart = pair.firstDue.addingTimeInterval(interval)
            let events = try await Self.advance(kind, pair, model: model, at: waveStart)
            #expect(events.contains(.waveFinished(broadcast: pair.broadcast, wave: 1)), "\(events)")
            let started = events.compactMap { event -> (wave: Int, planned: Int)? in
                if case .waveStarted(_, let wave, _, let planned, _) = event { (wave, planned) } else { nil }
            }
            #expect(started.map(\.wave) == [2] && started.map(\.planned) == [7], "\(events)")

            // Wave 2's batches, leased from its slots: the seven devices that posted nothing, each once.
            let wave2 = try await Self.sendWave(worker, from: waveStart)
            #expect(wave2.devices == Array(wave1.devices.dropFirst(5)))

            // Everyone answers; at wave 3's time the driver finds nobody to wake and completes the broadcast.
            try await Self.receive(wave2.devices, kind, pair, model: model)
            let later = pair.firstDue.addingTimeInterval(2 * interval)
            let ending = try await Self.advance(kind, pair, model: model, at: later)
            #expect(ending.contains(.completed(broadcast: pair.broadcast)), "\(ending)")
            #expect(!ending.contains { if case .waveStarted = $0 { true } else { false } }, "\(ending)")
        }
    }

    /// Earlier editions' counts on the store of `kind`: each device's `device_pushes` row (an edition of yesterday,
    /// so many unanswered in a row before it) and its `dormant` flag.
    static func history(
        _ rows: [(device: Int64, unanswered: Int, dormant: Bool)],
        _ kind: Kind,
        _ pair: ContractTests.Pair,
        model: ModelStore
    )
        async throws
    {
        let yesterday = UUID()
        for row in rows {
            switch kind {
            case .model:
                model.model.setHistory(row.device, DispatchModel.PushHistory(edition: yesterday, unanswered: row.unanswered), dormant: row.dormant)
            case .postgres:
                let unanswered = Int16(row.unanswered)
                _ = try await pair.db.client.query(
                    "INSERT INTO device_pushes (device_id, pushed_edition, editions_unanswered) VALUES (\(row.device), \(yesterday), \(unanswered))",
                    logger: pair.logger
                )
                _ = try await pair.db.client.query("UPDATE devices SET dormant = \(row.dormant) WHERE id = \(row.device)", logger: pair.logger)
            }
        }
    }

    /// The devices flagged dormant on the store of `kind`.
    static func dormant(_ kind: Kind, _ pair: ContractTests.Pair, model: ModelStore) async throws -> [Int64] {
        switch kind {
        case .model:
            return model.model.devices.values.filter(\.dormant).map(\.id).sorted()
        case .postgres:
            let rows = try await pair.db.client.query("SELECT id FROM devices WHERE dormant ORDER BY id", logger: pair.logger)
            return try await rows.collect().map { try $0.decode(Int64.self) }
        }
    }

    @Test(
        "dormancy: wave 1 goes to dormant devices too; its accepted pushes are counted after it, before wave 2 is counted, so a device whose third edition in a row went unanswered falls dormant and wave 2 leaves it out",
        arguments: Kind.allCases
    )
    func dormancy(_ kind: Kind) async throws {
        try await ContractTests.with(devices: 12, cohorts: 2, window: 2) { pair in
            let model = ModelStore(model: pair.model, answersOnItsClock: false)
            let worker: any WorkerStore = kind == .model ? model : StoreContractTests.store(.postgres, pair)
            let ids = pair.model.devices.keys.sorted()
            #expect(pair.model.broadcasts[pair.broadcast]?.options.dormantAfter == 3)
            // Two dormant since earlier mornings, two at two unanswered (this edition's push makes three), one at one
            // (two: still awake); the others counted for the first time (0).
            try await Self.history(
                [(ids[0], 5, true), (ids[1], 3, true), (ids[2], 2, false), (ids[3], 2, false), (ids[4], 1, false)],
                kind,
                pair,
                model: model
            )
            let wave1 = try await Self.sendWave(worker, from: pair.firstDue)
            #expect(wave1.devices == ids, "wave 1 goes to every device, dormant or not")
            let answered = [ids[5], ids[6]]
            try await Self.receive(answered, kind, pair, model: model)

            let waveStart = pair.firstDue.addingTimeInterval(BroadcastOptions.defaultWaveInterval)
            let events = try await Self.advance(kind, pair, model: model, at: waveStart)
            #expect(try await Self.dormant(kind, pair, model: model) == [ids[0], ids[1], ids[2], ids[3]])
            let started = events.compactMap { event -> Int? in
                if case .waveStarted(_, 2, _, let planned, _) = event { planned } else { nil }
            }
            #expect(started == [6], "\(events)")
            let wave2 = try await Self.sendWave(worker, from: waveStart)
            #expect(wave2.devices == [ids[4]] + Array(ids[7...]))
        }
    }

    @Test(
        "a registration revives a dormant device: it is no longer dormant, its count starts again, and the next wave counted includes it",
        arguments: Kind.allCases
    )
    func registrationRevives(_ kind: Kind) async throws {
        try await ContractTests.with(devices: 6, cohorts: 1, window: 2) { pair in
            let model = ModelStore(model: pair.model, answersOnItsClock: false)
            let worker: any WorkerStore = kind == .model ? model : StoreContractTests.store(.postgres, pair)
            let ids = pair.model.devices.keys.sorted()
            // Both dormant since earlier mornings (5 editions unanswered; dormant after 3); the first registers again.
            try await Self.history([(ids[0], 5, true), (ids[1], 5, true)], kind, pair, model: model)
            switch kind {
            case .model:
                model.model.register(ids[0], now: Date())
            case .postgres:
                guard case .apns(let token) = pair.model.devices[ids[0]]?.token else {
                    Issue.record("an APNs device")
                    return
                }
                _ = try await DeviceRepository(client: pair.db.client).register(
                    appID: pair.app,
                    token: .apns(token),
                    ContractTests.apnsRegistration,
                    logger: pair.logger
                )
            }
            #expect(try await Self.dormant(kind, pair, model: model) == [ids[1]])

            let wave1 = try await Self.sendWave(worker, from: pair.firstDue)
            #expect(wave1.devices == ids)
            let waveStart = pair.firstDue.addingTimeInterval(BroadcastOptions.defaultWaveInterval)
            _ = try await Self.advance(kind, pair, model: model, at: waveStart)
            // Its count started again at 0: this edition's push makes one, far from three.
            #expect(try await Self.dormant(kind, pair, model: model) == [ids[1]])
            let wave2 = try await Self.sendWave(worker, from: waveStart)
            #expect(wave2.devices == [ids[0]] + Array(ids[2...]), "the revived device is in wave 2, the dormant one is not")
        }
    }

    /// A registration's alert settings for `device`, on the store of `kind`.
    static func alerts(
        _ device: Int64,
        authorized: Bool,
        editionAlerts: Bool,
        notifyWhenReady: Bool,
        _ kind: Kind,
        _ pair: ContractTests.Pair,
        model: ModelStore
    ) async throws {
        switch kind {
        case .model:
            model.model.setAlerts(device, authorized: authorized, editionAlerts: editionAlerts, notifyWhenReady: notifyWhenReady)
        case .postgres:
            _ = try await pair.db.client.query(
                """
                UPDATE devices SET alerts_authorized = \(authorized), edition_alerts = \(editionAlerts), notify_when_ready = \(notifyWhenReady)
                WHERE id = \(device)
                """,
                logger: pair.logger
            )
        }
    }

    /// Like ``sendWave(_:from:)``, each target recorded as the batch's machine would send it: the ready alert (an
    /// alert, not a background push) to a target asking for it when the batch carries ready alerts from its slot, and
    /// an alert to those in `alerted` (an alert of the edition sent otherwise). Returns the batches leased and the
    /// targets that asked.
    static func sendWaveWithReadyAlerts(
        _ store: any WorkerStore,
        from start: Date,
        alerted: Set<Int64> = []
    ) async throws -> (devices: [Int64], batches: [LeasedBatch], asked: [Int64]) {
        var now = start
        var held: [Int64] = []
        var devices: [Int64] = []
        var batches: [LeasedBatch] = []
        var asked: [Int64] = []
        while now < start.addingTimeInterval(30) {
            guard let lease = try await store.lease(StoreContractTests.query("w1", at: now, excludingBatches: held), logger: logger) else {
                now = now.addingTimeInterval(1)
                continue
            }
            let batch = lease.batch
            let targets = try await store.targets(of: batch, now: now, logger: logger)
            devices += targets.map(\.deviceID)
            batches.append(batch)
            asked += targets.filter(\.notifyWhenReady).map(\.deviceID)
            let ready = batch.readyAlertsFrom.map { now >= $0 } == true
            let outcomes = targets.map {
                BatchOutcome(
                    deviceID: $0.deviceID,
                    sentAt: now,
                    result: .accepted,
                    alert: batch.kind == .alert || (ready && $0.notifyWhenReady) || alerted.contains($0.deviceID)
                )
            }
            _ = try await store.record(batch, outcomes: outcomes, owner: "w1", configuration: nil, now: now, logger: logger)
            held.append(batch.id)
            now = now.addingTimeInterval(1)
        }
        return (devices.sorted(), batches, asked.sorted())
    }

    @Test(
        "the ready alert and the alert wave: the last background wave carries the ready alert to the readers who allowed alerts, asked to be told and had no alert of the edition yet; after it, the alert wave goes to those who allowed alerts, asked for edition alerts, got a background push, no alert yet and have no receipt",
        arguments: Kind.allCases
    )
    func alertWaves(_ kind: Kind) async throws {
        let options = BroadcastOptions(pace: .window(2), cohorts: 1, maxPushesPerDevice: .fixed(2), alertLastResort: true)
        try await ContractTests.with(devices: 8, cohorts: 1, window: 2, options: options) { pair in
            let model = ModelStore(model: pair.model, answersOnItsClock: false)
            let worker: any WorkerStore = kind == .model ? model : StoreContractTests.store(.postgres, pair)
            let ids = pair.model.devices.keys.sorted()
            // 0 and 6 ask for the ready alert (6 was told already: an alert of the edition reached it in wave 1, as
            // another wave of the edition would); 1 and 5 for edition alerts (5 posts a receipt after wave 1); 2 allows
            // alerts and asks for neither; 3 asks for both and did not allow alerts; the others have the defaults.
            let settings: [(Int, Bool, Bool, Bool)] = [
                (0, true, false, true), (1, true, true, false), (2, true, false, false), (3, false, true, true), (5, true, true, false),
                (6, true, false, true),
            ]
            for (index, authorized, editionAlerts, notify) in settings {
                try await Self.alerts(
                    ids[index],
                    authorized: authorized,
                    editionAlerts: editionAlerts,
                    notifyWhenReady: notify,
                    kind,
                    pair,
                    model: model
                )
            }
            let wave1 = try await Self.sendWaveWithReadyAlerts(worker, from: pair.firstDue, alerted: [ids[6]])
            #expect(wave1.devices == ids)
            #expect(wave1.batches.allSatisfy { $0.kind == .background && $0.readyAlertsFrom == nil }, "wave 1 carries no ready alert")
            #expect(wave1.asked.isEmpty, "wave 1 asks nobody")
            try await Self.receive([ids[5]], kind, pair, model: model)

            let interval = BroadcastOptions.defaultWaveInterval
            let wave2Start = pair.firstDue.addingTimeInterval(interval)
            _ = try await Self.advance(kind, pair, model: model, at: wave2Start)
            let wave2 = try await Self.sendWaveWithReadyAlerts(worker, from: wave2Start)
            #expect(wave2.devices == ids.filter { $0 != ids[5] })
            #expect(
                wave2.batches.allSatisfy { $0.kind == .background && $0.readyAlertsFrom == .distantPast },
                "the last background wave the cap allows carries the ready alert from its start"
            )
            #expect(wave2.asked == [ids[0]], "only the reader who allowed alerts, asked to be told and was not told yet")

            // The alert wave: of those who allowed alerts and asked, 0 had its ready alert, 5 its edition; 1 is left.
            let alertStart = pair.firstDue.addingTimeInterval(2 * interval)
            let events = try await Self.advance(kind, pair, model: model, at: alertStart)
            let started = events.compactMap { event -> (wave: Int, kind: BroadcastProgress.Wave.Kind, planned: Int)? in
                if case .waveStarted(_, let wave, let kind, let planned, _) = event { (wave, kind, planned) } else { nil }
            }
            #expect(started.map(\.wave) == [3] && started.map(\.kind) == [.alert] && started.map(\.planned) == [1], "\(events)")
            let wave3 = try await Self.sendWaveWithReadyAlerts(worker, from: alertStart)
            #expect(wave3.devices == [ids[1]])
            #expect(wave3.batches.allSatisfy { $0.kind == .alert && $0.readyAlertsFrom == nil })

            let ending = try await Self.advance(kind, pair, model: model, at: pair.firstDue.addingTimeInterval(3 * interval))
            #expect(ending.contains(.completed(broadcast: pair.broadcast)), "\(ending)")
        }
    }
}
