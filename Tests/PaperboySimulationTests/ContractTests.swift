import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboySimulation
import PaperboyTesting
import PostgresNIO
import Testing

@testable import PaperboyStore

/// The simulation's model of the dispatch store (``DispatchModel``) against PostgreSQL (``BroadcastRepository``,
/// ``SenderStatusRepository``, ``ProviderHoldRepository``): the same operations, in the same order, with the same
/// `now`, give the same results. A rule changed on one side and not the other fails here, so that the simulation keeps
/// testing what production runs.
@Suite("The dispatch model against PostgreSQL")
struct ContractTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let key = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-contract.p8").path

    /// Both stores with the same app, devices and broadcast: PostgreSQL set up through the repositories, the model
    /// from what PostgreSQL then holds (the device ids and cohort keys, the broadcast's cohorts).
    struct Pair {
        var model = DispatchModel()
        let db: TestDatabase
        let repository: BroadcastRepository
        let broadcast: UUID
        let app: Int
        /// The app's configuration version (`credentials_version`) when it was set up.
        var version: Int
        var logger: Logger { db.logger }
        /// When the wave's first cohort starts (the plan jitters it).
        var firstDue: Date { model.cohorts.map(\.startsAt).min()! }

        /// What a batch is, without what the model does not keep (the edition's options).
        static func shape(_ batch: LeasedBatch?) -> String {
            guard let batch else { return "none" }
            return
                "batch \(batch.id) cohort \(batch.cohort) keys \(batch.firstKey)...\(batch.lastKey) ordinal \(batch.firstOrdinal) devices \(batch.devices) "
                + "leases \(batch.leases) given back \(batch.givenBack)"
        }

        /// An APNs hold (`BadDeviceToken`) for the app's configuration now, raised by w1 on both stores.
        mutating func raiseAPNsHold() async throws {
            try await ProviderHoldRepository(client: db.client).raise(
                appID: app,
                provider: .apns,
                answer: "BadDeviceToken",
                likelyCause: "c",
                reason: "r",
                by: "w1",
                version: version,
                logger: logger
            )
            model.raiseHold(appID: app, provider: .apns, answer: "BadDeviceToken", reason: "r", by: "w1", version: version)
        }

        /// `giveBack` on both stores, with the same arguments: whether each wrote it.
        mutating func giveBack(
            _ batch: LeasedBatch,
            recorded: [BatchOutcome] = [],
            firstReturned: Int,
            returned: Int,
            because reason: String,
            providers: [PushProvider] = [],
            held: [PushProvider] = [],
            owner: String,
            now: Date
        ) async throws -> (stored: Bool, modelled: Bool) {
            let stored = try await repository.giveBack(
                batch,
                recorded: recorded,
                firstReturned: firstReturned,
                returned: returned,
                because: reason,
                providers: providers,
                held: held,
                owner: owner,
                now: now,
                logger: logger
            )
            let modelled = model.giveBack(
                batch,
                recorded: recorded,
                firstReturned: firstReturned,
                returned: returned,
                because: reason,
                providers: providers,
                held: held,
                owner: owner,
                now: now
            )
            return (stored, modelled)
        }

        static func micro(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1e6).rounded()) }

        func cohortCounts() async throws -> [String] {
            let rows = try await db.client.query(
                "SELECT cohort, sent, accepted, rejected::text, skipped::text FROM broadcast_cohorts WHERE broadcast_id = \(broadcast) ORDER BY cohort",
                logger: logger
            )
            var counts: [String] = []
            for try await (cohort, sent, accepted, rejected, skipped) in rows.decode((Int, Int, Int, String, String).self) {
                counts.append("\(cohort): \(sent) sent, \(accepted) accepted, \(Self.normalised(rejected)), \(Self.normalised(skipped))")
            }
            return counts
        }

        func modelCohortCounts() -> [String] {
            model.cohorts.filter { $0.broadcast == broadcast }.sorted { $0.cohort < $1.cohort }.map {
                "\($0.cohort): \($0.sent) sent, \($0.accepted) accepted, \(Self.json($0.rejected)), \(Self.json($0.skipped))"
            }
        }

        static func json(_ counts: [String: Int]) -> String {
            "{" + counts.filter { $0.value != 0 }.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}"
        }

        static func normalised(_ text: String) -> String {
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Int] ?? [:]
            return json(object)
        }

        func activeDevices() async throws -> [Int64] {
            let rows = try await db.client.query("SELECT id FROM devices WHERE active ORDER BY id", logger: logger)
            return try await rows.collect().map { try $0.decode(Int64.self) }
        }

        func heldDeactivations() async throws -> [Int64] {
            let rows = try await db.client.query("SELECT device_id FROM held_deactivations ORDER BY device_id", logger: logger)
            return try await rows.collect().map { try $0.decode(Int64.self) }
        }
    }

    /// How the pair's APNs devices are registered in PostgreSQL.
    static let apnsRegistration = DeviceRegistration(
        environment: .production,
        subscriptions: ["morning"],
        timeZone: "Asia/Tokyo",
        tier: .large,
        autoDownload: true,
        alertsAuthorized: false
    )

    /// The same app, devices and broadcast in PostgreSQL and the model: `devices` APNs devices, and `fcm` more through
    /// FCM (Android), when the app has FCM too.
    static func with(
        devices: Int,
        fcm: Int = 0,
        cohorts: Int,
        window: TimeInterval,
        options: BroadcastOptions? = nil,
        _ body: (inout Pair) async throws -> Void
    ) async throws {
        try await TestDatabase.with { db in
            try "not read by these tests".write(toFile: key, atomically: true, encoding: .utf8)
            let apps = AppRepository(client: db.client)
            var app = try await apps.create(
                try NewApp(bundleID: "com.example.contract", teamID: "TEAM123456", keyID: "KEY1234567", keyReference: key),
                logger: db.logger
            ).app
            if fcm > 0 {
                app = try await apps.setFCM(
                    appID: app.id,
                    try FCMCredentials(serviceAccount: "/secrets/contract-firebase.json", projectID: "paperboy-contract"),
                    logger: db.logger
                )
            }
            _ = try await PublicationRepository(client: db.client).add(appID: app.id, slug: "morning", title: nil, logger: db.logger)
            for index in 0..<devices {
                let hex = String(format: "%064x", index * 7919 + 1)
                _ = try await DeviceRepository(client: db.client).register(
                    appID: app.id,
                    token: .apns(try DeviceToken(hex: hex)),
                    Self.apnsRegistration,
                    logger: db.logger
                )
            }
            for index in 0..<fcm {
                _ = try await DeviceRepository(client: db.client).register(
                    appID: app.id,
                    token: .fcm(try FCMToken("contract-\(index * 7919 + 1):APA91b" + String(repeating: "x", count: 40))),
                    DeviceRegistration(
                        provider: .fcm,
                        platform: .android,
                        environment: .production,
                        subscriptions: ["morning"],
                        timeZone: "Asia/Tokyo",
                        tier: .large,
                        autoDownload: true,
                        alertsAuthorized: false
                    ),
                    logger: db.logger
                )
            }
            let manifest = EditionManifest(
                publication: "morning",
                issueDate: "2026-11-23",
                deadline: start.addingTimeInterval(6 * 3600).formatted(.iso8601),
                tiers: [
                    "large": .init(bundles: [
                        .init(url: "https://cdn.example.com/large-1.zip", bytes: 1000, sha256: String(repeating: "0f", count: 32))
                    ])
                ],
                pages: [.init(number: 1, title: "Front page")]
            )
            let edition = try await EditionRepository(client: db.client).publish(manifest, appID: app.id, now: start, logger: db.logger)
            var repository = BroadcastRepository(client: db.client)
            repository.leaseClock = .caller
            let started = try await repository.start(
                editionID: edition.id,
                environment: .production,
                options: options ?? BroadcastOptions(pace: .window(window), cohorts: cohorts),
                origin: "contract",
                now: start,
                logger: db.logger
            )
            var pair = Pair(db: db, repository: repository, broadcast: started.broadcast.id, app: app.id, version: app.credentialsVersion)
            pair.model.addApp(app.id, providers: fcm > 0 ? [.apns, .fcm] : [.apns], version: app.credentialsVersion)
            let rows = try await db.client.query(
                "SELECT id, cohort_key, token, registered_at, provider FROM devices ORDER BY id",
                logger: db.logger
            )
            var modelled: [DispatchModel.Device] = []
            for try await (id, key, token, registered, provider) in rows.decode((Int64, Int32, ByteBuffer, Date, Int16).self) {
                let fcm = PushProvider(storageCode: provider) == .fcm
                modelled.append(
                    DispatchModel.Device(
                        id: id,
                        app: app.id,
                        token: fcm ? .fcm(FCMToken(bytes: Array(buffer: token))) : .apns(DeviceToken(bytes: Array(buffer: token))),
                        key: Int64(key),
                        platform: fcm ? .android : .ios,
                        tier: .large,
                        registeredAt: registered
                    )
                )
            }
            pair.model.addDevices(modelled)
            let plan = try await db.client.query(
                """
                SELECT c.starts_at, c.next_key, c.end_key, w.rate FROM broadcast_cohorts c
                JOIN broadcast_waves w ON w.broadcast_id = c.broadcast_id AND w.wave = c.wave
                WHERE c.broadcast_id = \(started.broadcast.id) ORDER BY c.cohort
                """,
                logger: db.logger
            )
            var cohorts: [(startsAt: Date, firstKey: Int64, endKey: Int64)] = []
            var rate = 0.0
            for try await (startsAt, first, end, waveRate) in plan.decode((Date, Int64, Int64, Double).self) {
                cohorts.append((startsAt, first, end))
                rate = waveRate
            }
            pair.model.startBroadcast(
                started.broadcast.id,
                app: app.id,
                rate: rate,
                cohorts: cohorts,
                deadline: started.broadcast.deadline,
                options: started.broadcast.options
            )
            do {
                try await body(&pair)
            } catch {
                Issue.record("\(String(reflecting: error))")
                throw error
            }
        }
    }

    static func lease(
        _ pair: inout Pair,
        _ owner: String,
        at now: Date,
        excludingProviders: [AppProvider] = []
    ) async throws -> (LeasedBatch?, LeasedBatch?) {
        let lease = try await pair.repository.leaseReading(
            owner: owner,
            now: now,
            lookahead: 0.5,
            duration: 30,
            batchDuration: 1,
            maxBatchSize: 7,
            excludingProviders: excludingProviders.map { ($0.appID, $0.provider) },
            logger: pair.logger
        )
        let stored = lease?.batch
        let modelled = pair.model.lease(
            owner: owner,
            now: now,
            lookahead: 0.5,
            duration: 30,
            batchDuration: 1,
            maxBatchSize: 7,
            excludingProviders: excludingProviders
        )
        #expect(Pair.shape(modelled) == Pair.shape(stored), "lease by \(owner) at \(now)")
        if let stored, let modelled {
            #expect(abs(stored.slotStart.timeIntervalSince(modelled.slotStart)) < 1e-5, "the slot of batch \(stored.id)")
        }
        // A batch the lease carved comes with its targets, read in the carve's statement: the devices and budgets the
        // batch's own read (and the model) finds, the lease's `now`.
        if let stored, let carved = lease?.targets {
            #expect(carved == (try await pair.repository.targets(of: stored, now: now, logger: pair.logger)), "carved targets of batch \(stored.id)")
            #expect(carved.map(\.deviceID) == pair.model.targets(of: stored, now: now).map(\.deviceID), "carved targets of batch \(stored.id)")
        }
        return (stored, modelled)
    }

    static func targets(_ pair: Pair, _ batch: LeasedBatch, at now: Date) async throws -> [BatchTarget] {
        let stored = try await pair.repository.targets(of: batch, now: now, logger: pair.logger)
        let modelled = pair.model.targets(of: batch, now: now)
        #expect(modelled.map(\.deviceID) == stored.map(\.deviceID), "targets of batch \(batch.id)")
        #expect(modelled.map(\.recentBackgroundPushes.count) == stored.map(\.recentBackgroundPushes.count), "recent pushes of batch \(batch.id)")
        return stored
    }

    @Test("carving a whole wave: every batch the same, in the same order, with the same devices and slots")
    func carving() async throws {
        try await Self.with(devices: 40, cohorts: 3, window: 6) { pair in
            var now = pair.firstDue
            var carved = 0
            for _ in 0..<40 {
                let (stored, _) = try await Self.lease(&pair, "w1", at: now)
                guard let stored else {
                    now = now.addingTimeInterval(0.7)
                    if now > pair.firstDue.addingTimeInterval(10) { break }
                    continue
                }
                carved += try await Self.targets(pair, stored, at: now).count
            }
            #expect(carved == 40, "every device carved once")
        }
    }

    @Test("recording, giving back, taking over: the same counters, ledger, deactivations and held deactivations")
    func recordAndGiveBack() async throws {
        try await Self.with(devices: 20, cohorts: 1, window: 2) { pair in
            let now = pair.firstDue
            let (first, _) = try await Self.lease(&pair, "w1", at: now)
            let batch = try #require(first)
            let targets = try await Self.targets(pair, batch, at: now)
            var outcomes: [BatchOutcome] = []
            for (index, target) in targets.enumerated() {
                let result: BatchOutcome.Result =
                    switch index % 4 {
                    case 0: .accepted
                    case 1: .rejected(reason: "Unregistered", deactivates: .at(now.addingTimeInterval(-60)))
                    case 2: .rejected(reason: "BadDeviceToken", deactivates: .deferred)
                    default: .skipped(.hourlyBudget)
                    }
                outcomes.append(BatchOutcome(deviceID: target.deviceID, sentAt: now, result: result))
            }
            let recorded = Array(outcomes.prefix(4))
            let given = try await pair.giveBack(
                batch,
                recorded: recorded,
                firstReturned: 4,
                returned: targets.count - 4,
                because: "draining",
                owner: "w1",
                now: now
            )
            #expect(given.stored && given.modelled)
            // The same give-back again (its COMMIT's answer lost): done, nothing counted twice.
            let again = try await pair.giveBack(
                batch,
                recorded: recorded,
                firstReturned: 4,
                returned: targets.count - 4,
                because: "draining",
                owner: "w1",
                now: now
            )
            #expect(again.stored && again.modelled)
            // Nobody renews a lease given back.
            let renewed = try await pair.repository.renew([batch], owner: "w1", duration: 30, now: now, logger: pair.logger)
            #expect(renewed == pair.model.renew([batch], owner: "w1", duration: 30, now: now))
            #expect(renewed.held.isEmpty)
            // Taken over: the devices recorded are left out.
            let later = now.addingTimeInterval(0.1)
            let (taken, _) = try await Self.lease(&pair, "w2", at: later)
            let retaken = try #require(taken)
            let rest = try await Self.targets(pair, retaken, at: later)
            #expect(rest.count == targets.count - 3, "the skipped one goes back, the three written do not")
            let finals = rest.map { BatchOutcome(deviceID: $0.deviceID, sentAt: later, result: .accepted) }
            #expect(try await pair.repository.record(retaken, outcomes: finals, owner: "w2", now: later, logger: pair.logger))
            let modelled2 = pair.model.record(retaken, outcomes: finals, owner: "w2", now: later)
            #expect(modelled2)
            // Recorded again after a lost answer: done; by the lease before: refused.
            #expect(try await pair.repository.record(retaken, outcomes: finals, owner: "w2", now: later, logger: pair.logger))
            let modelled3 = pair.model.record(retaken, outcomes: finals, owner: "w2", now: later)
            #expect(modelled3)
            #expect(try await !pair.repository.record(batch, outcomes: finals, owner: "w1", now: later, logger: pair.logger))
            let modelled4 = pair.model.record(batch, outcomes: finals, owner: "w1", now: later)
            #expect(!modelled4)

            #expect(pair.modelCohortCounts() == (try await pair.cohortCounts()))
            let active = pair.model.devices.values.filter(\.active).map(\.id).sorted()
            #expect(active == (try await pair.activeDevices()))
            #expect(pair.model.heldDeactivations.keys.sorted() == (try await pair.heldDeactivations()))
        }
    }

    @Test("a batch given back for a provider: left by workers that cannot send through it and while it is held, taken by the others")
    func givenBackForAProvider() async throws {
        try await Self.with(devices: 10, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            let (first, _) = try await Self.lease(&pair, "keyless", at: now)
            let batch = try #require(first)
            let targets = try await Self.targets(pair, batch, at: now)
            let given = try await pair.giveBack(
                batch,
                firstReturned: 0,
                returned: targets.count,
                because: "apns: no key",
                providers: [.apns],
                owner: "keyless",
                now: now
            )
            #expect(given.stored && given.modelled)
            let later = now.addingTimeInterval(0.1)
            let apns = AppProvider(appID: pair.app, provider: .apns)
            let (left, _) = try await Self.lease(&pair, "keyless", at: later, excludingProviders: [apns])
            #expect(left == nil || left?.id != batch.id, "the keyless worker leaves it")
            let since = try await SenderStatusRepository(client: pair.db.client).givenBackBroadcasts(logger: pair.logger)
            #expect(since.map(\.givenBackSince) == pair.model.givenBackBroadcasts().map(\.givenBackSince))
            #expect(since.first?.givenBackSince[.apns].map(Pair.micro) == Pair.micro(now))
            // Held: nobody takes it; released: the next worker does.
            try await ProviderHoldRepository(client: pair.db.client).raise(
                appID: pair.app,
                provider: .apns,
                answer: "DeviceTokenNotForTopic",
                likelyCause: "the bundle id",
                reason: "reason",
                by: "w",
                version: pair.version,
                logger: pair.logger
            )
            pair.model.raiseHold(appID: pair.app, provider: .apns, answer: "DeviceTokenNotForTopic", reason: "reason", by: "w", version: pair.version)
            let (held, _) = try await Self.lease(&pair, "w2", at: later.addingTimeInterval(0.1))
            #expect(held == nil, "a held provider's batches and the app's new ones wait")
            #expect(try await SenderStatusRepository(client: pair.db.client).givenBackBroadcasts(logger: pair.logger).isEmpty)
            #expect(pair.model.givenBackBroadcasts().isEmpty)
            _ = try await ProviderHoldRepository(client: pair.db.client).release(appID: pair.app, provider: .apns, logger: pair.logger)
            pair.model.releaseHold(appID: pair.app, provider: .apns, now: Date())
            let (taken, _) = try await Self.lease(&pair, "w2", at: later.addingTimeInterval(0.2))
            #expect(taken?.id == batch.id)
        }
    }

    @Test(
        "a batch given back for a provider held for a suspected misconfiguration: the wait is not counted towards --fail-after, and a later give-back by a keyless worker starts the count then"
    )
    func givenBackWhileHeld() async throws {
        try await Self.with(devices: 10, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            let (first, _) = try await Self.lease(&pair, "w", at: now)
            let batch = try #require(first)
            let targets = try await Self.targets(pair, batch, at: now)
            let given = try await pair.giveBack(
                batch,
                firstReturned: 0,
                returned: targets.count,
                because: "apns: held",
                providers: [.apns],
                held: [.apns],
                owner: "w",
                now: now
            )
            #expect(given.stored && given.modelled)
            let statuses = SenderStatusRepository(client: pair.db.client)
            #expect(try await statuses.givenBackBroadcasts(logger: pair.logger).isEmpty, "held: no failure to send is counted")
            #expect(pair.model.givenBackBroadcasts().isEmpty)
            // After the operator's fix a keyless worker is the first to lease it: the count starts with its give-back.
            let later = now.addingTimeInterval(600)
            let (again, _) = try await Self.lease(&pair, "keyless", at: later)
            let retaken = try #require(again)
            #expect(retaken.id == batch.id)
            let givenAgain = try await pair.giveBack(
                retaken,
                firstReturned: 0,
                returned: targets.count,
                because: "apns: no key",
                providers: [.apns],
                owner: "keyless",
                now: later
            )
            #expect(givenAgain.stored && givenAgain.modelled)
            let since = try await statuses.givenBackBroadcasts(logger: pair.logger)
            #expect(since.first?.givenBackSince[.apns].map(Pair.micro) == Pair.micro(later), "counted from the keyless give-back, not the hold")
            #expect(since.map(\.givenBackSince) == pair.model.givenBackBroadcasts().map(\.givenBackSince))
        }
    }

    @Test(
        "a hold's end restarts the --fail-after count of the batches a keyless worker gave back just before it (they waited through the hold): on both stores"
    )
    func holdEndRestartsTheCount() async throws {
        try await Self.with(devices: 10, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            let (first, _) = try await Self.lease(&pair, "keyless", at: now)
            let batch = try #require(first)
            let targets = try await Self.targets(pair, batch, at: now)
            let early = now.addingTimeInterval(-3600)
            let given = try await pair.giveBack(
                batch,
                firstReturned: 0,
                returned: targets.count,
                because: "apns: no key",
                providers: [.apns],
                owner: "keyless",
                now: early
            )
            #expect(given.stored && given.modelled)
            let statuses = SenderStatusRepository(client: pair.db.client)
            #expect(try await statuses.givenBackBroadcasts(logger: pair.logger).first?.givenBackSince[.apns].map(Pair.micro) == Pair.micro(early))
            // Held for an hour, then released: the batch counts from the release, not from the give-back before the hold.
            let holds = ProviderHoldRepository(client: pair.db.client)
            try await pair.raiseAPNsHold()
            let released = Date()
            #expect(try await holds.release(appID: pair.app, provider: .apns, logger: pair.logger).released)
            #expect(pair.model.releaseHold(appID: pair.app, provider: .apns, now: released).released)
            let after = Date()
            let stored = try #require(try await statuses.givenBackBroadcasts(logger: pair.logger).first?.givenBackSince[.apns])
            #expect(
                stored >= released.addingTimeInterval(-1) && stored <= after.addingTimeInterval(1),
                "counted from the release (the database's clock), not from the give-back an hour before"
            )
            #expect(pair.model.givenBackBroadcasts().first?.givenBackSince[.apns] == released)
        }
    }

    @Test(
        "an operator's confirm or release of one provider leaves the other provider's confirmation standing (the simulation's seed 732): on both stores"
    )
    func confirmationsOfOtherProvidersStand() async throws {
        try await Self.with(devices: 4, cohorts: 1, window: 1) { pair in
            let now = Date()
            let holds = ProviderHoldRepository(client: pair.db.client)
            _ = try await holds.confirm(appID: pair.app, provider: .fcm, logger: pair.logger)
            _ = pair.model.confirm(appID: pair.app, provider: .fcm, now: now)
            _ = try await holds.confirm(appID: pair.app, provider: .apns, logger: pair.logger)
            _ = pair.model.confirm(appID: pair.app, provider: .apns, now: now)
            #expect(try await holds.confirmed(appID: pair.app, logger: pair.logger) == [.apns, .fcm], "FCM's stands after APNs' confirm")
            #expect(pair.model.confirmed(appID: pair.app, now: now) == [.apns, .fcm])
            // A release of APNs (fixed elsewhere) ends APNs' confirmation, for its configuration changed; FCM's stands.
            _ = try await holds.release(appID: pair.app, provider: .apns, logger: pair.logger)
            _ = pair.model.releaseHold(appID: pair.app, provider: .apns, now: now)
            #expect(try await holds.confirmed(appID: pair.app, logger: pair.logger) == [.fcm])
            #expect(pair.model.confirmed(appID: pair.app, now: now) == [.fcm])
        }
    }

    @Test("slots claimed again after a stall: the same starts, after the work claimed and no earlier than asked")
    func slots() async throws {
        try await Self.with(devices: 30, cohorts: 2, window: 2) { pair in
            let now = pair.firstDue
            let (one, _) = try await Self.lease(&pair, "w1", at: now)
            let (two, _) = try await Self.lease(&pair, "w2", at: now)
            let first = try #require(one)
            let second = try #require(two)
            let late = now.addingTimeInterval(9)
            for (batch, owner, notBefore) in [(first, "w1", nil), (second, "w2", late.addingTimeInterval(2)), (first, "w2", nil)]
                as [(LeasedBatch, String, Date?)]
            {
                let stored = try await pair.repository.reclaimSlot(
                    batch,
                    from: 2,
                    remaining: 3,
                    owner: owner,
                    now: late,
                    notBefore: notBefore,
                    logger: pair.logger
                )
                let modelled = pair.model.reclaimSlot(batch, from: 2, remaining: 3, owner: owner, now: late, notBefore: notBefore)
                #expect((stored == nil) == (modelled == nil), "batch \(batch.id) by \(owner)")
                if let stored, let modelled { #expect(abs(stored.timeIntervalSince(modelled)) < 1e-5, "batch \(batch.id) by \(owner)") }
            }
        }
    }

    @Test("held deactivations: applied once old enough and unheld, never while held, dropped on release, kept for a device registered again")
    func heldDeactivations() async throws {
        try await Self.with(devices: 6, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            let (first, _) = try await Self.lease(&pair, "w1", at: now)
            let batch = try #require(first)
            let targets = try await Self.targets(pair, batch, at: now)
            let outcomes = targets.map {
                BatchOutcome(deviceID: $0.deviceID, sentAt: now, result: .rejected(reason: "BadDeviceToken", deactivates: .deferred))
            }
            #expect(try await pair.repository.record(batch, outcomes: outcomes, owner: "w1", now: now, logger: pair.logger))
            let modelled6 = pair.model.record(batch, outcomes: outcomes, owner: "w1", now: now)
            #expect(modelled6)
            let holds = ProviderHoldRepository(client: pair.db.client)
            // The database's clock stamped the answers: compare with a cutoff after them.
            let cutoff = Date().addingTimeInterval(60)
            try await holds.raise(
                appID: pair.app,
                provider: .apns,
                answer: "BadDeviceToken",
                likelyCause: "c",
                reason: "r",
                by: "w",
                version: pair.version,
                logger: pair.logger
            )
            pair.model.raiseHold(appID: pair.app, provider: .apns, answer: "BadDeviceToken", reason: "r", by: "w", version: pair.version)
            #expect(try await holds.applyDue(before: cutoff, logger: pair.logger) == 0)
            let modelled7 = pair.model.applyHeldDeactivations(before: .distantFuture)
            #expect(modelled7 == 0)
            _ = try await holds.release(appID: pair.app, provider: .apns, logger: pair.logger)
            let modelled8 = pair.model.releaseHold(appID: pair.app, provider: .apns, now: Date()).dropped == targets.count
            #expect(modelled8)
            // A worker's suspicion from answers to sends made before the release raises no hold again.
            let stale = try await holds.raise(
                appID: pair.app,
                provider: .apns,
                answer: "BadDeviceToken",
                likelyCause: "c",
                reason: "late answers",
                by: "w2",
                version: pair.version,
                logger: pair.logger
            )
            let modelledStale = pair.model.raiseHold(
                appID: pair.app,
                provider: .apns,
                answer: "BadDeviceToken",
                reason: "late answers",
                by: "w2",
                version: pair.version
            )
            #expect(!stale && !modelledStale)
            #expect(try await pair.heldDeactivations().isEmpty)
            #expect(try await pair.activeDevices().count == 6, "released: every device stays active")
        }
    }

    /// The fleet's evidence of both stores, without the version (the model keeps its own) and with the database's `due`
    /// counted against a cutoff after every answer.
    static func evidence(_ pair: Pair) async throws -> (stored: [FleetAnswers], modelled: [FleetAnswers]) {
        let stored = try await ProviderHoldRepository(client: pair.db.client).fleetAnswers(before: Date().addingTimeInterval(60), logger: pair.logger)
        let modelled = pair.model.fleetAnswers(before: .distantFuture, now: Date())
        return (stored, modelled)
    }

    @Test(
        "the fleet's evidence: a batch's answers kept by when they were sent, only those after the first 'not valid' one in its ten seconds; the same on both stores, and the fleet rule holds on it"
    )
    func fleetEvidence() async throws {
        try await Self.with(devices: 14, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            // Sent at the start of a ten-second period by two workers: two accepted, then the bundle id went wrong.
            let sentAt = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 10).rounded(.up) * 10)
            for (index, owner) in ["w1", "w2"].enumerated() {
                let at = now.addingTimeInterval(Double(index) * 0.5)
                let (leased, _) = try await Self.lease(&pair, owner, at: at)
                let batch = try #require(leased)
                let targets = try await Self.targets(pair, batch, at: at)
                #expect(targets.count == 7)
                let outcomes = targets.enumerated().map { position, target in
                    let accepted = index == 0 && position < 2
                    return BatchOutcome(
                        deviceID: target.deviceID,
                        sentAt: sentAt.addingTimeInterval(Double(index * 7 + position) * 0.1),
                        result: accepted ? .accepted : .rejected(reason: "DeviceTokenNotForTopic", deactivates: .deferred),
                        hint: accepted ? nil : "the bundle id"
                    )
                }
                #expect(
                    try await pair.repository.record(
                        batch,
                        outcomes: outcomes,
                        owner: owner,
                        configuration: pair.version,
                        now: at,
                        logger: pair.logger
                    )
                )
                let modelled = pair.model.record(batch, outcomes: outcomes, owner: owner, configuration: pair.version, now: at)
                #expect(modelled)
            }
            let (stored, model) = try await Self.evidence(pair)
            let fleet = try #require(stored.first)
            #expect(stored.count == 1)
            #expect(
                fleet.held == 12 && fleet.due == 12 && fleet.answers == 12 && fleet.invalid == 12,
                "the two accepted before the first 'not valid' one do not count"
            )
            #expect(fleet.reason == "DeviceTokenNotForTopic" && fleet.hint == "the bundle id" && fleet.activeDevices == 14 && !fleet.confirmed)
            #expect(fleet.version == pair.version)
            let lastAccepted = try #require(fleet.lastAccepted, "two were accepted")
            #expect(abs(lastAccepted.timeIntervalSince(sentAt.addingTimeInterval(0.1))) < 0.001)
            #expect(abs((model.first?.lastAccepted ?? .distantPast).timeIntervalSince(lastAccepted)) < 0.001)
            var same = fleet
            same.version = model.first?.version ?? -1
            same.lastAccepted = model.first?.lastAccepted
            #expect(model == [same])
            guard case .hold = MisconfigurationGuard.judge(fleet) else {
                Issue.record("twelve of twelve after the first 'not valid' one, over two workers: expected a hold")
                return
            }
        }
    }

    @Test(
        "a held deactivation is applied only once the provider accepted a push sent after its answer (a misconfiguration at a broadcast's end deactivates nobody): the same on both stores"
    )
    func heldWaitsForALaterAcceptance() async throws {
        try await Self.with(devices: 14, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            let holds = ProviderHoldRepository(client: pair.db.client)
            let key = HoldKey(appID: pair.app, environment: .production, provider: .apns)
            // Wave 1's last batch: the first push answered "not valid", the six after it accepted, all before the batch
            // was recorded.
            let answeredAt = Date()
            let (first, _) = try await Self.lease(&pair, "w1", at: now)
            let batch = try #require(first)
            let targets = try await Self.targets(pair, batch, at: now)
            let outcomes = targets.enumerated().map { position, target in
                BatchOutcome(
                    deviceID: target.deviceID,
                    sentAt: answeredAt.addingTimeInterval(position == 0 ? -1 : -0.5),
                    result: position == 0 ? .rejected(reason: "BadDeviceToken", deactivates: .deferred) : .accepted
                )
            }
            #expect(
                try await pair.repository.record(
                    batch,
                    outcomes: outcomes,
                    owner: "w1",
                    configuration: pair.version,
                    now: answeredAt,
                    logger: pair.logger
                )
            )
            let modelled = pair.model.record(batch, outcomes: outcomes, owner: "w1", configuration: pair.version, now: answeredAt)
            #expect(modelled)
            var (stored, model) = try await Self.evidence(pair)
            #expect(stored.map { MisconfigurationGuard.judge($0) } == [.apply], "one of seven: a stray token, by share")
            #expect(model.map { MisconfigurationGuard.judge($0) } == [.apply])
            var before = try #require(stored.first.flatMap { MisconfigurationGuard.appliedBefore($0) })
            #expect(before < answeredAt, "the accepted pushes went out before the answer was recorded: they vouch for nothing")
            #expect(try await holds.applyDue(before: Date().addingTimeInterval(60), only: [key: before], logger: pair.logger) == 0)
            let modelApplied = pair.model.applyHeldDeactivations(before: .distantFuture, only: [key: before])
            #expect(modelApplied == 0)
            #expect(try await pair.heldDeactivations().count == 1)
            // The next batch, sent two seconds after the answer was recorded (by the database's clock, which stamped
            // it: on a loaded machine seconds after `answeredAt`): accepted, so the configuration was good then.
            let stamped = try await pair.db.client.query("SELECT max(answered_at) FROM held_deactivations", logger: pair.logger)
            var recordedAt = answeredAt
            for try await stamp in stamped.decode(Date.self) { recordedAt = max(recordedAt, stamp) }
            let later = recordedAt.addingTimeInterval(2)
            let (second, _) = try await Self.lease(&pair, "w2", at: now)
            let next = try #require(second)
            let nextTargets = try await Self.targets(pair, next, at: now)
            let accepted = nextTargets.map { BatchOutcome(deviceID: $0.deviceID, sentAt: later, result: .accepted) }
            #expect(
                try await pair.repository.record(
                    next,
                    outcomes: accepted,
                    owner: "w2",
                    configuration: pair.version,
                    now: later,
                    logger: pair.logger
                )
            )
            let modelledNext = pair.model.record(next, outcomes: accepted, owner: "w2", configuration: pair.version, now: later)
            #expect(modelledNext)
            (stored, model) = try await Self.evidence(pair)
            before = try #require(stored.first.flatMap { MisconfigurationGuard.appliedBefore($0) })
            let modelBefore = try #require(model.first.flatMap { MisconfigurationGuard.appliedBefore($0) })
            #expect(before > recordedAt && abs(modelBefore.timeIntervalSince(before)) < 0.001)
            #expect(try await holds.applyDue(before: Date().addingTimeInterval(60), only: [key: before], logger: pair.logger) == 1)
            let modelAppliedNext = pair.model.applyHeldDeactivations(before: .distantFuture, only: [key: modelBefore])
            #expect(modelAppliedNext == 1)
            #expect(try await pair.activeDevices().count == 13)
        }
    }

    @Test(
        "confirm-deactivations ends the hold for good: what was held is applied, the provider is confirmed for the new configuration, and later 'not valid' answers are held and then applied without a new hold"
    )
    func confirmEndsTheHold() async throws {
        try await Self.with(devices: 7, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            let (first, _) = try await Self.lease(&pair, "w1", at: now)
            let batch = try #require(first)
            let targets = try await Self.targets(pair, batch, at: now)
            let invalid = BatchOutcome.Result.rejected(reason: "BadDeviceToken", deactivates: .deferred)
            let answered = targets.prefix(3).map { BatchOutcome(deviceID: $0.deviceID, sentAt: now, result: invalid) }
            let holds = ProviderHoldRepository(client: pair.db.client)
            // Three answered and held, then the hold (a worker's guard tripped); the other four given back.
            let given = try await pair.giveBack(
                batch,
                recorded: answered,
                firstReturned: 3,
                returned: 4,
                because: "held",
                providers: [.apns],
                held: [.apns],
                owner: "w1",
                now: now
            )
            #expect(given.stored && given.modelled)
            try await pair.raiseAPNsHold()
            let confirmed = try await holds.confirm(appID: pair.app, provider: .apns, logger: pair.logger)
            let modelConfirmed = pair.model.confirm(appID: pair.app, provider: .apns, now: now)
            #expect(confirmed.released && confirmed.deactivated == 3)
            #expect(modelConfirmed.released && modelConfirmed.deactivated == 3)
            #expect(try await holds.confirmed(appID: pair.app, logger: pair.logger) == [.apns])
            #expect(pair.model.confirmed(appID: pair.app, now: now) == [.apns])
            // The rest, sent after the confirm under the new configuration: held, and the fleet rule lets them through.
            let app = try #require(try await AppRepository(client: pair.db.client).find(id: pair.app, logger: pair.logger))
            #expect(app.credentialsVersion == pair.version + 1)
            let later = now.addingTimeInterval(1)
            let (second, _) = try await Self.lease(&pair, "w2", at: later)
            let rest = try #require(second)
            let restTargets = try await Self.targets(pair, rest, at: later)
            #expect(restTargets.count == 4)
            let outcomes = restTargets.map { BatchOutcome(deviceID: $0.deviceID, sentAt: later, result: invalid) }
            #expect(
                try await pair.repository.record(
                    rest,
                    outcomes: outcomes,
                    owner: "w2",
                    configuration: app.credentialsVersion,
                    now: later,
                    logger: pair.logger
                )
            )
            let modelled = pair.model.record(rest, outcomes: outcomes, owner: "w2", configuration: app.credentialsVersion, now: later)
            #expect(modelled)
            let (stored, model) = try await Self.evidence(pair)
            #expect(stored.map(\.confirmed) == [true] && model.map(\.confirmed) == [true])
            #expect(stored.map(\.held) == [4] && model.map(\.held) == [4])
            #expect(stored.map { MisconfigurationGuard.judge($0) } == [.apply])
            // Confirmed: every due one is applied, with no accepted push after them.
            #expect(stored.map(\.lastAccepted) == [nil] && model.map(\.lastAccepted) == [nil])
            let before = try #require(MisconfigurationGuard.appliedBefore(stored[0]))
            let key = HoldKey(appID: pair.app, environment: .production, provider: .apns)
            #expect(try await holds.applyDue(before: Date().addingTimeInterval(60), only: [key: before], logger: pair.logger) == 4)
            let applied = pair.model.applyHeldDeactivations(before: .distantFuture, only: [key: before])
            #expect(applied == 4)
            #expect(try await pair.activeDevices().isEmpty, "every token was invalid, as the operator said")
            #expect(try await holds.all(logger: pair.logger).isEmpty)
        }
    }

    @Test(
        "'not valid' answers to a configuration changed since (a fix made while the batch was out) are neither held nor counted: on both stores"
    )
    func staleAnswers() async throws {
        try await Self.with(devices: 4, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            let (first, _) = try await Self.lease(&pair, "w1", at: now)
            let batch = try #require(first)
            let targets = try await Self.targets(pair, batch, at: now)
            _ = try await ProviderHoldRepository(client: pair.db.client).release(appID: pair.app, provider: .apns, logger: pair.logger)
            pair.model.releaseHold(appID: pair.app, provider: .apns, now: Date())
            let outcomes = targets.map {
                BatchOutcome(deviceID: $0.deviceID, sentAt: now, result: .rejected(reason: "DeviceTokenNotForTopic", deactivates: .deferred))
            }
            #expect(
                try await pair.repository.record(batch, outcomes: outcomes, owner: "w1", configuration: pair.version, now: now, logger: pair.logger)
            )
            let modelled = pair.model.record(batch, outcomes: outcomes, owner: "w1", configuration: pair.version, now: now)
            #expect(modelled)
            #expect(try await pair.heldDeactivations().isEmpty)
            #expect(pair.model.heldDeactivations.isEmpty)
            let (stored, model) = try await Self.evidence(pair)
            #expect(stored.isEmpty && model.isEmpty)
            let tallies = try await pair.db.client.query("SELECT count(*)::integer FROM answer_tallies", logger: pair.logger)
            for try await count in tallies.decode(Int.self) { #expect(count == 0) }
            #expect(try await pair.activeDevices().count == 4)
        }
    }

    @Test(
        "a hold covers one environment: a sandbox hold leaves the production broadcast's batches leased and its held deactivations judged and applied, on both stores (issue 47, finding 5)"
    )
    func holdPerEnvironment() async throws {
        try await Self.with(devices: 4, cohorts: 1, window: 1) { pair in
            let now = pair.firstDue
            let holds = ProviderHoldRepository(client: pair.db.client)
            #expect(
                try await holds.raise(
                    appID: pair.app,
                    environment: .sandbox,
                    provider: .apns,
                    answer: "BadDeviceToken",
                    likelyCause: "c",
                    reason: "r",
                    by: "w",
                    version: pair.version,
                    logger: pair.logger
                )
            )
            let modelled = pair.model.raiseHold(
                appID: pair.app,
                environment: .sandbox,
                provider: .apns,
                answer: "BadDeviceToken",
                reason: "r",
                by: "w",
                version: pair.version
            )
            #expect(modelled)
            #expect(try await holds.holds(appID: pair.app, environment: .production, logger: pair.logger).isEmpty)
            #expect(try await holds.holds(appID: pair.app, environment: .sandbox, logger: pair.logger).map(\.environment) == [.sandbox])
            let (leased, _) = try await Self.lease(&pair, "w1", at: now)
            let batch = try #require(leased, "the production broadcast is not held by a sandbox hold")
            let targets = try await Self.targets(pair, batch, at: now)
            let outcomes = targets.map {
                BatchOutcome(deviceID: $0.deviceID, sentAt: now, result: .rejected(reason: "BadDeviceToken", deactivates: .deferred))
            }
            #expect(
                try await pair.repository.record(batch, outcomes: outcomes, owner: "w1", configuration: pair.version, now: now, logger: pair.logger)
            )
            let recorded = pair.model.record(batch, outcomes: outcomes, owner: "w1", configuration: pair.version, now: now)
            #expect(recorded)
            let (stored, model) = try await Self.evidence(pair)
            #expect(stored.map(\.environment) == [.production] && model.map(\.environment) == [.production])
            #expect(stored.map(\.held) == [4] && model.map(\.held) == [4])
            // Releasing the sandbox hold leaves production's held deactivations alone.
            let released = try await holds.release(appID: pair.app, provider: .apns, environment: .sandbox, logger: pair.logger)
            let modelReleased = pair.model.releaseHold(appID: pair.app, provider: .apns, environment: .sandbox, now: Date())
            #expect(released.released && released.dropped == 0)
            #expect(modelReleased.released && modelReleased.dropped == 0)
            #expect(try await pair.heldDeactivations().count == 4)
        }
    }
}
