import Foundation
import PaperboyCore
import PaperboyDispatch
import PostgresNIO

/// The statements that API requests, the scheduler and dispatch batches run against the big tables
/// (`devices`, `deliveries`, `receipts`, `broadcasts`), in one place.
///
/// The repositories build their queries with these functions, and ``catalogue`` lists every one with
/// sample values, so that a test can `EXPLAIN` each on a large database and fail when one would read a
/// big table sequentially: at 10 million devices that is seconds per request instead of a millisecond.
/// The catalogue builds each statement with the same function the repository runs, so it cannot drift
/// from them (the wave audience is ``WaveAudience``).
public enum RequestStatements {
    /// Values to bind when explaining a statement: ids that exist in the database.
    public struct Samples: Sendable {
        public var appID: Int
        public var publicationID: Int
        public var environment: APNsEnvironment
        public var token: DeviceToken
        /// An FCM registration token, for the FCM variants of the device statements.
        public var fcmToken: FCMToken
        public var deviceID: Int64
        public var editionID: UUID
        public var broadcastID: UUID
        public var batchID: Int64
        public var now: Date
        /// The cohort keys of a batch, for the statements that read one (a batch's size and targets); nil: a
        /// fixed range at the start of the key space, as wide as 1/1024 of it (1/256 for the size).
        public var batchKeys: ClosedRange<Int64>?

        public init(
            appID: Int,
            publicationID: Int,
            environment: APNsEnvironment,
            token: DeviceToken,
            deviceID: Int64,
            editionID: UUID,
            broadcastID: UUID,
            batchID: Int64,
            now: Date,
            batchKeys: ClosedRange<Int64>? = nil,
            fcmToken: FCMToken = Samples.defaultFCMToken
        ) {
            self.fcmToken = fcmToken
            self.appID = appID
            self.publicationID = publicationID
            self.environment = environment
            self.token = token
            self.deviceID = deviceID
            self.editionID = editionID
            self.broadcastID = broadcastID
            self.batchID = batchID
            self.now = now
            self.batchKeys = batchKeys
        }

        /// A token of today's shape: an 11-character instance id, `:APA91b` and 143 characters (161 in all).
        public static let defaultFCMToken = FCMToken(bytes: Array(("dGVzdGluc3Q:APA91b" + String(repeating: "Zm9vYmFyX2-", count: 13)).utf8))

        /// The batch range the batch statements read.
        func batchRange(defaultWidth: Int64) -> ClosedRange<Int64> {
            batchKeys ?? Int64(Int32.min)...(Int64(Int32.min) + defaultWidth)
        }
    }

    /// A statement of the catalogue.
    public struct Statement: Sendable {
        /// Who runs it, e.g. `GET /v1/devices/{token}`.
        public let name: String
        /// Tables it reads whole by design (an audience count reads every target), so a sequential scan
        /// of them is the right plan; every other big table must be read through an index.
        public let wholeTableReads: Set<String>
        /// The parameters' types of a statement the repository runs prepared (planned once per connection, then
        /// PostgreSQL's generic plan, which knows no parameter's value); nil for one planned with its values.
        public let preparedTypes: [PostgresDataType]?
        let build: @Sendable (Samples) -> PostgresQuery

        init(
            _ name: String,
            wholeTableReads: Set<String> = [],
            preparedTypes: [PostgresDataType]? = nil,
            _ build: @escaping @Sendable (Samples) -> PostgresQuery
        ) {
            self.name = name
            self.wholeTableReads = wholeTableReads
            self.preparedTypes = preparedTypes
            self.build = build
        }

        /// The statement with the samples bound.
        public func query(_ samples: Samples) -> PostgresQuery {
            build(samples)
        }
    }

    /// The big tables, which no statement here may read sequentially (unless it reads them whole).
    public static let bigTables: Set<String> = [
        "devices", "deliveries", "receipts", "broadcasts", "device_habits", "broadcast_opens", "device_pushes",
    ]

    /// The sample a week of broadcasts at 10,000,000 devices would read (250,000 of 170,000,000 pushes): 1,024
    /// ranges of about 15 ids.
    static let weekAtTenMillion = WakeRates.samplePlan(windowPushes: 170_000_000, target: 250_000, maxDeviceID: 10_000_000)!

    /// Every statement a request, the scheduler or a dispatch batch runs on the big tables.
    public static let catalogue: [Statement] = [
        Statement("PUT /v1/devices/{token}", preparedTypes: RegisterDevice.bindingDataTypes) { s in
            register(
                appID: s.appID,
                token: .apns(s.token),
                DeviceRegistration(
                    environment: s.environment,
                    subscriptions: ["morning"],
                    timeZone: "Asia/Tokyo",
                    tier: .large,
                    autoDownload: true,
                    alertsAuthorized: false
                )
            )
        },
        Statement("PUT /v1/devices/{token} (FCM)", preparedTypes: RegisterDevice.bindingDataTypes) { s in
            register(
                appID: s.appID,
                token: .fcm(s.fcmToken),
                DeviceRegistration(
                    provider: .fcm,
                    platform: .android,
                    environment: .production,
                    subscriptions: ["morning"],
                    timeZone: "Asia/Tokyo",
                    tier: .large,
                    autoDownload: true,
                    alertsAuthorized: false
                )
            )
        },
        Statement("GET /v1/devices/{token}") { s in findDevice(appID: s.appID, candidates: [.apns(s.token)]) },
        Statement("GET /v1/devices/{token} (FCM)") { s in findDevice(appID: s.appID, candidates: [.fcm(s.fcmToken)]) },
        Statement("GET /v1/devices/{token} (hex: APNs or FCM)") { s in
            findDevice(appID: s.appID, candidates: [.apns(s.token), .fcm(FCMToken(bytes: Array(s.token.hex.utf8)))])
        },
        Statement("DELETE /v1/devices/{token}") { s in deleteDevice(appID: s.appID, candidates: [.apns(s.token)]) },
        Statement("DELETE /v1/devices/{token} (FCM)") { s in deleteDevice(appID: s.appID, candidates: [.fcm(s.fcmToken)]) },
        // Erasing reads the broadcasts' ids (a few thousand a year) to find the device's first opens by their key.
        Statement("DELETE /v1/devices/{token}?erase=true", wholeTableReads: ["broadcasts"]) { s in
            eraseDevice(appID: s.appID, candidates: [.apns(s.token)])
        },
        Statement("DELETE /v1/devices/{token}?erase=true (FCM)", wholeTableReads: ["broadcasts"]) { s in
            eraseDevice(appID: s.appID, candidates: [.fcm(s.fcmToken)])
        },
        Statement("APNs 410: a device's id by token") { s in deviceID(appID: s.appID, environment: s.environment, token: s.token) },
        Statement("POST /v1/devices/{token}/receipts: record", preparedTypes: RecordReceipt.bindingDataTypes) { s in
            recordReceipt(appID: s.appID, candidates: [.apns(s.token)], ReceiptReport(editionID: s.editionID, result: .newData, bytes: 1, seconds: 1))
        },
        Statement("POST /v1/devices/{token}/receipts: record, receipts arriving together", preparedTypes: RecordReceipts.bindingDataTypes) { s in
            recordReceipts([
                RecordReceipt(
                    appID: s.appID,
                    candidates: [.apns(s.token)],
                    ReceiptReport(editionID: s.editionID, result: .newData, bytes: 1, seconds: 1)
                ),
                RecordReceipt(appID: s.appID, candidates: [.fcm(s.fcmToken)], ReceiptReport(editionID: s.editionID, result: .failed)),
            ])
        },
        Statement("POST /v1/devices/{token}/receipts: record (FCM)", preparedTypes: RecordReceipt.bindingDataTypes) { s in
            recordReceipt(
                appID: s.appID,
                candidates: [.fcm(s.fcmToken)],
                ReceiptReport(editionID: s.editionID, result: .newData, bytes: 1, seconds: 1)
            )
        },
        Statement("POST /v1/devices/{token}/receipts: read the stored one", preparedTypes: FindReceipt.bindingDataTypes) { s in
            findReceipt(deviceID: s.deviceID, editionID: s.editionID)
        },
        Statement("POST /v1/devices/{token}/opens: the device and its habit", preparedTypes: ReadDeviceHabit.bindingDataTypes) { s in
            readDeviceHabit(appID: s.appID, candidates: [.apns(s.token)])
        },
        Statement("POST /v1/devices/{token}/opens: learn, move the key, count the open", preparedTypes: WriteOpen.bindingDataTypes) { s in
            writeOpen(
                deviceID: s.deviceID,
                now: s.now,
                learned: ReadingHabit(weekday: .init(minute: 200, spread: 15, mornings: 4), lastDay: 20_000),
                key: StoredCohortKey.stored(ReadingHabit.cohortKey(minute: 200, tokenKey: s.token.cohortKey))
            )
        },
        Statement("paperboy insights ready-at-open: a broadcast's ready-at-open tallies") { s in readyAtOpen(broadcastID: s.broadcastID) },
        Statement("paperboy insights ready-at-open: the window's broadcasts") { s in
            broadcastsForReadiness(publication: "morning", appID: nil, since: s.now.addingTimeInterval(-14 * 86_400))
        },
        Statement("paperboy cohorts plan: the targets by cohort, minute and habit", wholeTableReads: ["devices", "device_habits"]) { s in
            audience(s, wave: 1).habitOrderQuery(cohorts: 16)
        },
        Statement("GET /v1/broadcasts/{id}: receipt tallies of the broadcast and its edition") { s in
            ReceiptTallies.broadcastCountsQuery(broadcastID: s.broadcastID, editionID: s.editionID)
        },
        Statement("receipt tallies: an edition's receipts by result") { s in ReceiptTallies.editionCountsQuery(editionID: s.editionID) },
        Statement("dispatch: lock the receipt tallies' watermark (every 2 s)") { _ in
            ReceiptTallies.lockQuery(ReceiptTallies.Configuration(), wait: false, dueOnly: true)
        },
        Statement("dispatch: tally the receipts per wave and cohort, and ready at open, since the last step (every 2 s)") { s in
            ReceiptTallies.stepQuery(
                after: s.now.addingTimeInterval(-4).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
                through: s.now.addingTimeInterval(-2).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
                lookback: ReceiptTallies.Configuration().editionLookback.seconds
            )
        },
        Statement("dispatch: recount an ended broadcast's ready at open (once)") { s in
            ReceiptTallies.recountOpensQuery(broadcastIDs: [s.broadcastID])
        },
        Statement("dispatch: the ended broadcasts, to recount their receipts") { _ in
            ReceiptTallies.endedBroadcastsQuery(lookback: ReceiptTallies.Configuration().editionLookback.seconds)
        },
        // Once per broadcast, every receipt of its edition with its provider (the device read by its key only for
        // receipts stored before migration 0038, a correlated read: never the devices read whole).
        Statement("dispatch: recount an ended broadcast's receipts per wave and cohort (once)") { s in
            ReceiptTallies.recountQuery(editionID: s.editionID, broadcastIDs: [s.broadcastID])
        },
        Statement("GET /v1/insights/wake-rates: a publication's wake rates, 14 days") { s in
            WakeRateRepository.countsQuery(publicationIDs: [Int32(s.publicationID)], from: s.now.addingTimeInterval(-14 * 86_400), to: s.now)
        },
        Statement("GET /v1/insights/wake-rates: every publication's wake rates, 14 days") { s in
            WakeRateRepository.countsQuery(publicationIDs: nil, from: s.now.addingTimeInterval(-14 * 86_400), to: s.now)
        },
        Statement("paperboy broadcast status: an ended broadcast's wake rates by wave") { s in
            WakeRateRepository.waveQuery(broadcastID: s.broadcastID)
        },
        Statement("GET /v1/insights/wake-rates: the window's accepted background pushes, by the counters") { s in
            WakeRateRepository.windowPushesQuery(publicationIDs: nil, from: s.now.addingTimeInterval(-14 * 86_400), to: s.now)
        },
        Statement("paperboy broadcast status: a broadcast's accepted background pushes, by the counters") { s in
            WakeRateRepository.broadcastPushesQuery(broadcastID: s.broadcastID)
        },
        Statement("GET /v1/insights/wake-rates: the highest device id, to spread a sample") { _ in WakeRateRepository.maxDeviceIDQuery },
        Statement("GET /v1/insights/wake-rates: every publication's wake rates, 14 days, sampled") { s in
            WakeRateRepository.countsQuery(
                publicationIDs: nil,
                from: s.now.addingTimeInterval(-14 * 86_400),
                to: s.now,
                sample: weekAtTenMillion.ranges
            )
        },
        Statement("paperboy broadcast status: an ended broadcast's wake rates by wave, sampled") { s in
            WakeRateRepository.waveQuery(broadcastID: s.broadcastID, sample: weekAtTenMillion.ranges)
        },
        Statement("GET /v1/broadcasts/{id}", preparedTypes: BroadcastStatus.bindingDataTypes) { s in
            PostgresQuery(unsafeSQL: BroadcastStatus.sql, binds: BroadcastStatus(broadcastID: s.broadcastID).makeBindings())
        },
        Statement("a broadcast by its id (start, cancel, the console)") { s in
            BroadcastRepository.selectBroadcasts("WHERE b.id = \(s.broadcastID)")
        },
        Statement("GET /v1/broadcasts") { _ in BroadcastRepository.selectBroadcasts("ORDER BY b.created_at DESC LIMIT \(50)") },
        Statement("POST /v1/broadcasts: the edition's broadcast") { s in existingBroadcast(editionID: s.editionID, environment: s.environment) },
        Statement("POST /v1/broadcasts: wave 1's audience per cohort", wholeTableReads: ["devices"]) { s in
            audience(s, wave: 1).cohortCountsQuery(cohorts: 64)
        },
        Statement("scheduler: the newest edition and its broadcast") { s in
            newestEdition(publicationID: s.publicationID, environment: s.environment)
        },
        Statement("dispatch: running broadcasts") { _ in runningBroadcasts },
        Statement("dispatch: a running broadcast's waves (under its lock)") { s in BroadcastRepository.wavesQuery(broadcastID: s.broadcastID) },
        Statement("dispatch: wave 1's cohort slots, which later waves keep (under the lock)") { s in
            BroadcastRepository.firstWaveCohortsQuery(broadcastID: s.broadcastID)
        },
        Statement("dispatch: whether the last wave has work left (under the lock)") { s in
            BroadcastRepository.workLeftQuery(broadcastID: s.broadcastID, wave: 2)
        },
        Statement("GET /metrics: the running broadcasts and those ended within the hour") { s in
            BroadcastRepository.gaugesQuery(now: s.now, endedSince: s.now.addingTimeInterval(-3600))
        },
        Statement("dispatch: a later wave's audience per cohort", wholeTableReads: ["devices"]) { s in
            audience(s, wave: 2).cohortCountsQuery(cohorts: 64)
        },
        Statement("dispatch: a later wave's audience recorded as its members, per cohort", wholeTableReads: ["devices"]) { s in
            audience(s, wave: 2).recordMembersQuery(broadcastID: s.broadcastID, cohorts: 64)
        },
        Statement("dispatch: take over an expired batch (lease)", preparedTypes: BroadcastRepository.TakeOverText.bindingDataTypes) { s in
            BroadcastRepository.takeOverQuery(owner: "owner", duration: 30, now: nil, excluding: [])
        },
        Statement("dispatch: the cohort due soonest (lease)", preparedTypes: BroadcastRepository.DueCohortText.bindingDataTypes) { s in
            BroadcastRepository.dueCohortQuery(dueBy: s.now)
        },
        Statement("dispatch: a new batch's devices and targets, wave 1 (lease)") { s in
            batchTargets(audience(s, wave: 1), of: s.broadcastID, from: s.batchKeys?.lowerBound, now: s.now)
        },
        Statement("dispatch: a new batch's devices and targets, wave 2 (lease)") { s in
            batchTargets(audience(s, wave: 2), of: s.broadcastID, from: s.batchKeys?.lowerBound, now: s.now)
        },
        Statement("dispatch: a new batch's devices and targets, alert wave (lease)") { s in
            batchTargets(audience(s, wave: 3, kind: .alert), of: s.broadcastID, from: s.batchKeys?.lowerBound, now: s.now)
        },
        Statement("dispatch: a batch's extent, wave 2 from its recorded members (lease)") { s in
            WaveAudience.memberExtentQuery(
                broadcastID: s.broadcastID,
                wave: 2,
                from: s.batchKeys?.lowerBound ?? Int64(Int32.min),
                before: Int64(Int32.max),
                size: 500
            )
        },
        Statement("dispatch: a leased batch", preparedTypes: BroadcastRepository.BatchText.bindingDataTypes) { s in
            BroadcastRepository.batchQuery(id: s.batchID)
        },
        Statement("dispatch: the broadcast of a cohort (lease)", preparedTypes: BroadcastRepository.BroadcastByIDText.bindingDataTypes) { s in
            BroadcastRepository.broadcastByIDQuery(s.broadcastID)
        },
        Statement("dispatch: the content origin, for a slot (lease)", preparedTypes: BroadcastRepository.OriginText.bindingDataTypes) { s in
            BroadcastRepository.originQuery(broadcastID: s.broadcastID)
        },
        Statement("dispatch: a recorded batch's counts on its cohort", preparedTypes: BroadcastRepository.CountersText.bindingDataTypes) { s in
            BroadcastRepository.countersQuery(
                sent: 1000,
                accepted: 990,
                rejected: #"{"BadDeviceToken": 10}"#,
                skipped: "{}",
                providers: #"{"apns/sent": 1000, "apns/accepted": 990}"#,
                broadcastID: s.broadcastID,
                wave: 1,
                cohort: 0
            )
        },
        Statement("dispatch: a batch's targets, wave 1") { s in
            let keys = s.batchRange(defaultWidth: 1 << 22)
            return BroadcastRepository.targetsQuery(audience(s, wave: 1), firstKey: keys.lowerBound, lastKey: keys.upperBound, now: s.now)
        },
        Statement("dispatch: a batch's targets, wave 2") { s in
            let keys = s.batchRange(defaultWidth: 1 << 22)
            return BroadcastRepository.targetsQuery(audience(s, wave: 2), firstKey: keys.lowerBound, lastKey: keys.upperBound, now: s.now)
        },
        Statement("dispatch: a batch's targets, wave 2 from its recorded members") { s in
            let keys = s.batchRange(defaultWidth: 1 << 22)
            return BroadcastRepository.targetsQuery(
                audience(s, wave: 2),
                firstKey: keys.lowerBound,
                lastKey: keys.upperBound,
                now: s.now,
                members: (s.broadcastID, 2)
            )
        },
        Statement("dispatch: a batch's targets, alert wave") { s in
            let keys = s.batchRange(defaultWidth: 1 << 22)
            return BroadcastRepository.targetsQuery(
                audience(s, wave: 3, kind: .alert),
                firstKey: keys.lowerBound,
                lastKey: keys.upperBound,
                now: s.now
            )
        },
        Statement("prune: the finished broadcasts (hourly, all of them)", wholeTableReads: ["broadcasts"]) { s in
            LedgerPruner.finishedBroadcasts(cutoff: s.now.addingTimeInterval(-7 * 86_400), now: s.now)
        },
        Statement("prune: a batch of a broadcast's old deliveries") { s in
            LedgerPruner.deleteDeliveries(broadcastID: s.broadcastID, cutoff: s.now.addingTimeInterval(-7 * 86_400), limit: 10_000)
        },
        Statement("prune: a batch of a finished broadcast's batch rows") { s in
            LedgerPruner.deleteBatches(broadcastID: s.broadcastID, limit: 10_000)
        },
        Statement("prune: the counted waves that ended (hourly)") { _ in LedgerPruner.endedWaveMembers },
        Statement("prune: a batch of a broadcast's first opens") { s in LedgerPruner.deleteOpens(broadcastID: s.broadcastID, limit: 10_000) },
        Statement("prune: a batch of an ended wave's recorded members") { s in
            LedgerPruner.deleteWaveMembers(broadcastID: s.broadcastID, wave: 2, limit: 10_000)
        },
        Statement("prune: a batch of an edition's old receipts") { s in
            LedgerPruner.deleteReceipts(editionID: s.editionID, cutoff: s.now.addingTimeInterval(-7 * 86_400), limit: 10_000)
        },
        Statement("dispatch: renew leases, and see cancelled broadcasts (renew)") { s in
            BroadcastRepository.renewQuery(ids: [s.batchID], leases: [1], owner: "owner", duration: 30, now: nil)
        },
        Statement("dispatch: a broadcast that cannot be sent ends as failed") { s in
            BroadcastRepository.failQuery(id: s.broadcastID, reason: "reason", now: s.now)
        },
        Statement("dispatch: a batch's ledger rows (record)", preparedTypes: BroadcastRepository.LedgerText.bindingDataTypes) { s in
            ledgerRow(s, keepingRecorded: false)
        },
        Statement(
            "dispatch: a batch's ledger rows, keeping rows recorded before (record, after a duplicate)",
            preparedTypes: BroadcastRepository.LedgerKeepingText.bindingDataTypes
        ) { s in
            ledgerRow(s, keepingRecorded: true)
        },
        Statement(
            "dispatch: a wave-1 batch's pushes kept to be counted towards dormancy (record)",
            preparedTypes: BroadcastRepository.QueuePushesText.bindingDataTypes
        ) { s in
            queuePushes(broadcastID: s.broadcastID, cohort: 0, deviceIDs: [s.deviceID])
        },
        Statement("dispatch: wave 1's pushes sorted by key after the wave, 64 batches (advance)") { s in
            sortPushes(broadcastID: s.broadcastID, batches: 64)
        },
        Statement("dispatch: wave 1's pushes counted towards dormancy after the wave, one key range (advance)") { s in
            countPushes(broadcastID: s.broadcastID, editionID: s.editionID, dormantAfter: BroadcastOptions.defaultDormantAfter)
        },
        Statement("dispatch: the ended broadcasts with pushes not counted towards dormancy (advance)") { _ in endedBroadcastsWithUncountedPushes },
        Statement("dispatch: whether wave 1's pushes are all counted towards dormancy (under the lock)") { s in
            hasUncountedPushes(broadcastID: s.broadcastID)
        },
        Statement("dispatch: record APNs 410s (record)") { s in unregister(deviceIDs: [s.deviceID], at: [s.now], atDatabaseNow: [false], now: s.now)
        },
        Statement("dispatch: hold the deactivations of tokens a provider called not valid for the app (record)") { s in
            holdDeactivations(deviceIDs: [s.deviceID], appID: s.appID, providers: [0], reasons: ["BadDeviceToken"], sentAt: [s.now])
        },
        Statement("dispatch: apply held deactivations nobody suspects a misconfiguration of (each second)") { _ in
            applyHeldDeactivations(before: nil, limit: 1000)
        },
        Statement("dispatch: every worker's answers since the oldest held deactivation, per app, environment and provider (each second)") { _ in
            ProviderHoldRepository.fleetAnswersQuery(before: nil, smallFleet: 20)
        },
        Statement("dispatch: a recorded batch's answers added to the fleet's evidence (record)") { s in
            AnswerEvidence([
                BatchOutcome(deviceID: s.deviceID, sentAt: s.now, result: .accepted),
                BatchOutcome(deviceID: s.deviceID, sentAt: s.now, result: .rejected(reason: "BadDeviceToken", deactivates: .deferred)),
            ]).tallyQuery(appID: s.appID, environment: s.environment, worker: "w", configuration: nil)
        },
    ]

    /// One ledger row of a sample device, as ``BroadcastRepository/ledgerQuery(broadcastID:wave:cohort:deviceIDs:sentAt:outcomes:reasons:background:keepingRecorded:)`` writes it.
    static func ledgerRow(_ s: Samples, keepingRecorded: Bool) -> PostgresQuery {
        BroadcastRepository.ledgerQuery(
            broadcastID: s.broadcastID,
            wave: 1,
            cohort: 0,
            deviceIDs: [s.deviceID],
            sentAt: [s.now],
            outcomes: ["accepted"],
            reasons: [""],
            background: [true],
            keepingRecorded: keepingRecorded
        )
    }

    /// The wave audience of the sample broadcast, as the dispatcher builds it.
    static func audience(_ s: Samples, wave: Int, kind: BroadcastProgress.Wave.Kind = .background) -> WaveAudience {
        WaveAudience(
            appID: s.appID,
            environment: s.environment,
            publicationID: s.publicationID,
            editionID: s.editionID,
            wave: wave,
            kind: kind,
            maxPushesPerDevice: 3,
            dormantAfter: BroadcastOptions.defaultDormantAfter
        )
    }

    /// The carve's read of a new batch of 1,000 late in its cohort of wave 1: the range left holds a twentieth of the key
    /// space (a few batches of devices in the plan test's fleet).
    public static func carveLateInCohort(_ s: Samples) -> PostgresQuery {
        audience(s, wave: 1).batchTargetsQuery(
            broadcastID: s.broadcastID,
            from: Int64(Int32.max) - Int64(UInt32.max / 20),
            before: Int64(Int32.max),
            size: 1000,
            now: s.now
        )
    }

    /// The carve's read of `lease` for a batch of 500 from `first` on (the start of the key space when nil).
    static func batchTargets(_ audience: WaveAudience, of broadcastID: UUID, from first: Int64?, now: Date) -> PostgresQuery {
        audience.batchTargetsQuery(broadcastID: broadcastID, from: first ?? Int64(Int32.min), before: Int64(Int32.max), size: 500, now: now)
    }

    // MARK: Devices

    // A token is found through the unique (app_id, token, provider, environment) index (migration 0008): the
    // app and the token lead it, so a lookup needs neither the environment nor, for a text that may be a
    // token of either provider, one provider.

    /// The tokens a path's text may be (``PushToken/candidates(_:)``), as the device lookups bind them: each
    /// candidate is compared with its own provider's rows, so that an FCM token's bytes never match an APNs
    /// row. Always two index probes, one per provider; a provider the text is not a token of gets an empty
    /// token, which no row has (`devices_token_length`).
    struct TokenLookup {
        var apns = ByteBuffer()
        var fcm = ByteBuffer()

        init(_ candidates: [PushToken]) {
            for candidate in candidates {
                switch candidate {
                case .apns(let token): apns = ByteBuffer(bytes: token.bytes)
                case .fcm(let token): fcm = ByteBuffer(bytes: token.bytes)
                }
            }
        }
    }

    /// ``RegisterDevice``'s statement with its values bound, as the catalogue explains it.
    static func register(appID: Int, token: PushToken, _ registration: DeviceRegistration) -> PostgresQuery {
        PostgresQuery(unsafeSQL: RegisterDevice.sql, binds: RegisterDevice(appID: appID, token: token, registration: registration).makeBindings())
    }

    static func findDevice(appID: Int, candidates: [PushToken]) -> PostgresQuery {
        let lookup = TokenLookup(candidates)
        return """
            SELECT provider, token, platform, environment, array(SELECT slug FROM publications p WHERE p.id = ANY(d.subscriptions) ORDER BY slug),
                time_zone, tier, auto_download, alerts_authorized, app_version, os_version, model, locale,
                active, registered_at, updated_at, deleted_at, unregistered_at, notify_when_ready, edition_alerts
            FROM devices d
            WHERE d.app_id = \(appID) AND ((d.provider = 0 AND d.token = \(lookup.apns)) OR (d.provider = 1 AND d.token = \(lookup.fcm)))
            ORDER BY updated_at DESC LIMIT 1
            """
    }

    static func deleteDevice(appID: Int, candidates: [PushToken]) -> PostgresQuery {
        let lookup = TokenLookup(candidates)
        return """
            UPDATE devices d SET active = false, deleted_at = coalesce(deleted_at, now()), updated_at = now()
            WHERE d.app_id = \(appID) AND ((d.provider = 0 AND d.token = \(lookup.apns)) OR (d.provider = 1 AND d.token = \(lookup.fcm)))
            RETURNING 1
            """
    }

    /// Erases the device: its row, its receipts, its deliveries, its dormancy count, reading habit and first opens
    /// (`device_pushes`, `device_habits`, `broadcast_opens`), in one statement: none of these tables has a foreign key
    /// to `devices` (migrations 0022, 0025, 0027, 0028). What is left is not the device's: receipt tallies are counts
    /// per wave and cohort, and a `wave_members` row (ids only, until the pruner deletes the ended wave's members)
    /// finds no device to send to.
    ///
    /// `broadcast_opens` is keyed by broadcast first (the pruner deletes a broadcast's opens): a device's rows are
    /// found by one probe per broadcast (a few thousand a year), not by reading the table (ten million rows a morning).
    static func eraseDevice(appID: Int, candidates: [PushToken]) -> PostgresQuery {
        let lookup = TokenLookup(candidates)
        return """
            WITH erased AS (
                DELETE FROM devices d
                WHERE d.app_id = \(appID) AND ((d.provider = 0 AND d.token = \(lookup.apns)) OR (d.provider = 1 AND d.token = \(lookup.fcm)))
                RETURNING d.id
            ), erased_receipts AS (
                DELETE FROM receipts r USING erased WHERE r.device_id = erased.id
            ), erased_deliveries AS (
                DELETE FROM deliveries l USING erased WHERE l.device_id = erased.id
            ), erased_pushes AS (
                DELETE FROM device_pushes p USING erased WHERE p.device_id = erased.id
            ), erased_habit AS (
                DELETE FROM device_habits h USING erased WHERE h.device_id = erased.id
            ), erased_opens AS (
                DELETE FROM broadcast_opens o USING erased
                WHERE o.broadcast_id = ANY (ARRAY(SELECT b.id FROM broadcasts b)) AND o.device_id = erased.id
            )
            SELECT 1 FROM erased
            """
    }

    /// An APNs token's device, for APNs' answers about it.
    static func deviceID(appID: Int, environment: APNsEnvironment, token: DeviceToken) -> PostgresQuery {
        """
        SELECT id FROM devices
        WHERE app_id = \(appID) AND token = \(ByteBuffer(bytes: token.bytes)) AND provider = 0 AND environment = \(environment.storageCode)
        """
    }

    /// The rule for a token APNs declared dead at a time (410's timestamp, or the answer's time for
    /// `BadDeviceToken` and `DeviceTokenNotForTopic`): the device is inactive unless it registered after that
    /// time, and from then on only a registration newer than it makes the device active again (the
    /// registration upsert compares with `unregistered_at`). The one statement that applies it. Where
    /// `atDatabaseNow` is true the time is the database's `now()` instead of the one given: an answer without
    /// a time is compared with `registered_at` on the clock that wrote it.
    static func unregister(deviceIDs: [Int64], at times: [Date], atDatabaseNow: [Bool], now: Date) -> PostgresQuery {
        """
        UPDATE devices SET unregistered_at = greatest(devices.unregistered_at, u.at),
            active = devices.active AND devices.registered_at > u.at, updated_at = \(now)
        FROM (SELECT id, CASE WHEN database_now THEN now() ELSE at END AS at
              FROM unnest(\(deviceIDs)::bigint[], \(times)::timestamptz[], \(atDatabaseNow)::boolean[]) AS given(id, at, database_now)) u
        WHERE devices.id = u.id
        """
    }

    /// Deactivations held for answers that said the token is not valid for the app (migration 0023): the database's
    /// clock, which writes `registered_at`, is the answer's time (a worker's may disagree); a device answered again
    /// keeps its first. None when the app's configuration is no longer `configuration` (nil: any): the change that
    /// made a new one (a fix, a release) dropped the old one's held deactivations, and answers to sends made under the
    /// old one, recorded after it, say nothing of the tokens (found by the simulation: `paperboy-sim`, seed 830). The
    /// app's row is locked for share: a change of the configuration waits for this transaction, and its delete sees
    /// these rows.
    static func holdDeactivations(
        deviceIDs: [Int64],
        appID: Int,
        providers: [Int16],
        reasons: [String],
        sentAt: [Date],
        environment: APNsEnvironment = .production,
        configuration: Int? = nil
    ) -> PostgresQuery {
        """
        INSERT INTO held_deactivations (device_id, app_id, environment, provider, reason, answered_at, sent_at)
        SELECT u.id, \(appID), \(environment.storageCode), u.provider, u.reason, now(), u.sent_at
        FROM unnest(\(deviceIDs)::bigint[], \(providers)::smallint[], \(reasons)::text[], \(sentAt)::timestamptz[])
            AS u(id, provider, reason, sent_at)
        WHERE EXISTS (SELECT 1 FROM apps a WHERE a.id = \(appID)
            AND a.credentials_version = coalesce(\(configuration)::integer, a.credentials_version) FOR SHARE)
        ON CONFLICT (device_id) DO NOTHING
        """
    }

    /// Applies held deactivations answered before `cutoff` whose app's provider is not held, at most `limit` of them,
    /// oldest first, of the apps' providers given, each answered before its time (those the fleet's evidence clears,
    /// ``ProviderHoldRepository/fleetAnswers(before:logger:)``, and a later accepted push vouches for; nil: any); a
    /// device registered again after its answer stays active. Returns how many were applied.
    static func applyHeldDeactivations(before cutoff: Date?, limit: Int, only pairs: [HoldKey: Date]? = nil) -> PostgresQuery {
        let keys = (pairs ?? [:]).keys.sorted()
        let bounds = keys.map { pairs![$0]! }
        return """
            WITH due AS (
                DELETE FROM held_deactivations x WHERE x.device_id IN (
                    SELECT h.device_id FROM held_deactivations h
                    WHERE h.answered_at < coalesce(\(cutoff)::timestamptz, now() - interval '10 minutes')
                        AND (\(pairs == nil) OR EXISTS (
                            SELECT 1 FROM unnest(\(keys.map(\.appID))::integer[], \(keys.map(\.environment.storageCode))::smallint[],
                                \(keys.map(\.provider.storageCode))::smallint[], \(bounds)::timestamptz[]) AS p(app_id, environment, provider, answered_before)
                            WHERE p.app_id = h.app_id AND p.environment = h.environment AND p.provider = h.provider
                                AND h.answered_at < p.answered_before))
                        AND NOT EXISTS (SELECT 1 FROM provider_holds p
                            WHERE p.app_id = h.app_id AND p.environment = h.environment AND p.provider = h.provider)
                    ORDER BY h.app_id, h.provider, h.answered_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING x.device_id, x.answered_at
            ), gone AS (
                UPDATE devices SET unregistered_at = greatest(devices.unregistered_at, due.answered_at),
                    active = devices.active AND devices.registered_at > due.answered_at, updated_at = now()
                FROM due WHERE devices.id = due.device_id RETURNING 1
            )
            SELECT count(*)::integer FROM due
            """
    }

    /// A recorded wave-1 batch's accepted background pushes, kept to be counted towards dormancy after the wave
    /// (``sortPushes(broadcastID:batches:)`` then ``countPushes(broadcastID:editionID:dormantAfter:)``, migrations
    /// 0029 and 0039): one row, the device ids as an array, no key range.
    static func queuePushes(broadcastID: UUID, cohort: Int, deviceIDs: [Int64]) -> PostgresQuery {
        "INSERT INTO uncounted_pushes (broadcast_id, cohort, device_ids) VALUES (\(broadcastID), \(cohort), \(deviceIDs)::bigint[])"
    }

    /// How many device ids a key range of `uncounted_pushes` spans (migration 0039), as a shift: 2^14 = 16,384. A
    /// count of one range touches at most that many devices, neighbours in every table keyed by the device.
    static let pushKeyRangeShift: Int32 = 14

    /// Sorts up to `batches` of a broadcast's recorded wave-1 batches by key (migration 0039): deletes them and writes
    /// their devices back, sorted, one row per key range and cohort, in one statement. Rows another worker is sorting
    /// are skipped (`SKIP LOCKED`). Returns one row: the recorded batches taken (0: none left to this worker), the
    /// rows written. The oldest first, in the index's order: `ORDER BY key_range, id` (all NULL) reads the first
    /// `batches` entries of `uncounted_pushes_by_broadcast`, where `ORDER BY id` had the planner sort every recorded
    /// row of the broadcast, or walk the primary key past other broadcasts' rows.
    static func sortPushes(broadcastID: UUID, batches: Int) -> PostgresQuery {
        """
        WITH taken AS (
            DELETE FROM uncounted_pushes WHERE id IN (
                SELECT id FROM uncounted_pushes WHERE broadcast_id = \(broadcastID) AND key_range IS NULL
                ORDER BY key_range, id LIMIT \(batches) FOR UPDATE SKIP LOCKED)
            RETURNING cohort, device_ids
        ), sorted AS (
            INSERT INTO uncounted_pushes (broadcast_id, cohort, key_range, device_ids)
            SELECT \(broadcastID), x.cohort, x.key_range, array_agg(x.id ORDER BY x.id)
            FROM (SELECT t.cohort, u.id, u.id >> \(pushKeyRangeShift) AS key_range FROM taken t, unnest(t.device_ids) AS u(id)) x
            GROUP BY x.cohort, x.key_range
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM taken), (SELECT count(*) FROM sorted)
        """
    }

    /// Counts one key range of a broadcast's sorted wave-1 pushes towards dormancy (`device_pushes`, migration
    /// 0011; sorted by ``sortPushes(broadcastID:batches:)``) and deletes its rows of `uncounted_pushes`, in one
    /// statement: every push counted once. The lowest range with a row nobody else holds is taken, with every row of
    /// it nobody else holds (`SKIP LOCKED`): two workers never wait for each other.
    ///
    /// The devices are counted in id order (the primary key's order), neighbours together: a device's first count
    /// inserts its row at 0; later each probes the receipts primary key once, for the edition it was pushed before; a
    /// device already counted for this edition (another broadcast of it) counts nothing. A device whose dormancy
    /// changes (the count reached `dormantAfter`, or started again) has `devices.dormant` written; the others' devices
    /// rows are not touched. The dormant ones are added to their wave-1 cohort's `dormant`.
    ///
    /// Returns one row: the rows taken (0: none left to this worker), the devices counted, the dormant ones.
    static func countPushes(broadcastID: UUID, editionID: UUID, dormantAfter: Int) -> PostgresQuery {
        """
        WITH taken AS (
            DELETE FROM uncounted_pushes WHERE id IN (
                SELECT id FROM uncounted_pushes WHERE broadcast_id = \(broadcastID) AND key_range = (
                    SELECT key_range FROM uncounted_pushes WHERE broadcast_id = \(broadcastID) AND key_range IS NOT NULL
                    ORDER BY key_range LIMIT 1 FOR UPDATE SKIP LOCKED)
                FOR UPDATE SKIP LOCKED)
            RETURNING cohort, device_ids
        ), pushed AS (
            SELECT DISTINCT ON (u.id) u.id, t.cohort FROM taken t, unnest(t.device_ids) AS u(id) ORDER BY u.id
        ), counted AS (
            INSERT INTO device_pushes AS p (device_id, pushed_edition, editions_unanswered)
            SELECT pushed.id, \(editionID), 0 FROM pushed ORDER BY pushed.id
            ON CONFLICT (device_id) DO UPDATE SET
                editions_unanswered = CASE
                    WHEN EXISTS (SELECT 1 FROM receipts r WHERE r.device_id = p.device_id AND r.edition_id = p.pushed_edition) THEN 0
                    ELSE least(p.editions_unanswered + 1, 10000) END,
                pushed_edition = EXCLUDED.pushed_edition
            WHERE p.pushed_edition <> EXCLUDED.pushed_edition
            RETURNING p.device_id, \(dormantAfter) > 0 AND p.editions_unanswered >= \(dormantAfter) AS dormant
        ), flagged AS (
            UPDATE devices d SET dormant = counted.dormant FROM counted WHERE d.id = counted.device_id AND d.dormant <> counted.dormant
        ), tallied AS (
            UPDATE broadcast_cohorts c SET dormant = c.dormant + n.dormant
            FROM (SELECT pushed.cohort, count(*)::integer AS dormant FROM counted JOIN pushed ON pushed.id = counted.device_id
                WHERE counted.dormant GROUP BY pushed.cohort) n
            WHERE c.broadcast_id = \(broadcastID) AND c.wave = 1 AND c.cohort = n.cohort
        )
        SELECT (SELECT count(*) FROM taken), (SELECT count(*) FROM counted), (SELECT count(*) FROM counted WHERE dormant)
        """
    }

    /// The broadcasts with wave-1 pushes not yet counted towards dormancy, among those not running (cancelled,
    /// expired, failed, completed): a skip scan of `uncounted_pushes_by_broadcast`, one probe per broadcast that has rows.
    static let endedBroadcastsWithUncountedPushes: PostgresQuery = BroadcastRepository.selectBroadcasts(
        """
        WHERE b.id = ANY (ARRAY(
            WITH RECURSIVE ids (id) AS (
                (SELECT broadcast_id FROM uncounted_pushes ORDER BY broadcast_id LIMIT 1)
                UNION ALL
                SELECT (SELECT u.broadcast_id FROM uncounted_pushes u WHERE u.broadcast_id > ids.id ORDER BY u.broadcast_id LIMIT 1)
                FROM ids WHERE ids.id IS NOT NULL)
            SELECT id FROM ids WHERE id IS NOT NULL)) AND b.state <> 'running'
        """
    )

    /// Whether a broadcast has wave-1 pushes not yet counted towards dormancy.
    static func hasUncountedPushes(broadcastID: UUID) -> PostgresQuery {
        "SELECT EXISTS (SELECT 1 FROM uncounted_pushes WHERE broadcast_id = \(broadcastID))"
    }

    // MARK: Receipts

    /// ``RecordReceipt``'s statement with its values bound, as the catalogue explains it.
    static func recordReceipt(appID: Int, candidates: [PushToken], _ report: ReceiptReport) -> PostgresQuery {
        PostgresQuery(unsafeSQL: RecordReceipt.sql, binds: RecordReceipt(appID: appID, candidates: candidates, report).makeBindings())
    }

    /// ``RecordReceipts``'s statement with its values bound, as the catalogue explains it.
    static func recordReceipts(_ receipts: [RecordReceipt]) -> PostgresQuery {
        PostgresQuery(unsafeSQL: RecordReceipts.sql, binds: RecordReceipts(receipts: receipts).makeBindings())
    }

    // The edition as `(SELECT …)`, a value the planner does not see: see `WaveAudience.condition`.
    /// ``FindReceipt``'s statement with its values bound, as the catalogue explains it.
    static func findReceipt(deviceID: Int64, editionID: UUID) -> PostgresQuery {
        PostgresQuery(unsafeSQL: FindReceipt.sql, binds: FindReceipt(deviceID: deviceID, editionID: editionID).makeBindings())
    }

    // MARK: Broadcasts

    static func existingBroadcast(editionID: UUID, environment: APNsEnvironment) -> PostgresQuery {
        BroadcastRepository.selectBroadcasts(
            "WHERE b.edition_id = \(editionID) AND b.environment = \(environment.storageCode) AND b.state NOT IN ('cancelled', 'failed') ORDER BY b.created_at DESC LIMIT 1"
        )
    }

    // The edition is picked first: with the EXISTS beside the ORDER BY … LIMIT, the planner may evaluate it
    // hashed, for every edition of the publication, reading all broadcasts.
    static func newestEdition(publicationID: Int, environment: APNsEnvironment) -> PostgresQuery {
        """
        SELECT e.id, e.issue_date::text, e.deadline, e.published_at,
            EXISTS (
                SELECT 1 FROM broadcasts b
                WHERE b.edition_id = e.id AND b.environment = \(environment.storageCode) AND b.state NOT IN ('cancelled', 'failed')
            )
        FROM (
            SELECT id, issue_date, deadline, published_at FROM editions
            WHERE publication_id = \(publicationID)
            ORDER BY published_at DESC, issue_date DESC LIMIT 1
        ) e
        """
    }

    static let runningBroadcasts: PostgresQuery = "SELECT id FROM broadcasts WHERE state = 'running'"
}
