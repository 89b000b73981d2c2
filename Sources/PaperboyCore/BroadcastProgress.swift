import Foundation

/// Where a broadcast stands: per wave and cohort, what was planned, sent, what APNs said, and what the
/// devices reported. `paperboy broadcast status` and `GET /v1/broadcasts/{id}` show this value.
public struct BroadcastProgress: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        /// Waves are being sent, or will be.
        case running
        /// Every wave that could be sent was sent.
        case completed
        /// An operator cancelled it; nothing more is sent.
        case cancelled
        /// The edition's deadline passed with work left; nothing more is sent.
        case expired
        /// Nothing could be sent (the app's APNs key unreadable, a push over APNs' limit); ``failure`` says
        /// why. Fix the cause and start the edition's broadcast again.
        case failed
    }

    /// Counts of one wave or one cohort of a wave.
    public struct Counts: Codable, Sendable, Equatable {
        /// Targets planned when the wave was made.
        public var planned: Int
        /// Pushes handed to APNs (accepted, rejected, or without an answer).
        public var sent: Int
        public var accepted: Int
        /// Rejections by APNs reason (`Unregistered`, `BadDeviceToken`, …), and `fateUnknown` / `notSent`
        /// for pushes without an answer.
        public var rejected: [String: Int]
        /// Planned devices not sent, by why: `received` (the edition arrived meanwhile), `hourlyBudget`,
        /// `deadline`, `gone` (deactivated or unsubscribed meanwhile).
        public var skipped: [String: Int]
        /// Receipts by result (`newData`, `noData`, `failed`), each counted in the last wave that reached
        /// the device.
        public var receipts: [String: Int]
        /// What was sent through each provider (`apns`, `fcm`) and what it answered; empty before anything was sent.
        public var byProvider: [String: ProviderCounts]
        /// Wave 1: devices pushed that are dormant (no receipt after their last
        /// ``BroadcastOptions/dormantAfter`` editions), so they get no follow-ups. 0 in later waves.
        public var dormant: Int

        public init(
            planned: Int = 0,
            sent: Int = 0,
            accepted: Int = 0,
            rejected: [String: Int] = [:],
            skipped: [String: Int] = [:],
            receipts: [String: Int] = [:],
            byProvider: [String: ProviderCounts] = [:],
            dormant: Int = 0
        ) {
            self.planned = planned
            self.sent = sent
            self.accepted = accepted
            self.rejected = rejected
            self.skipped = skipped
            self.receipts = receipts
            self.byProvider = byProvider
            self.dormant = dormant
        }

        /// Planned devices dealt with: sent or skipped.
        public var done: Int { sent + skipped.values.reduce(0, +) }

        public static func + (lhs: Counts, rhs: Counts) -> Counts {
            Counts(
                planned: lhs.planned + rhs.planned,
                sent: lhs.sent + rhs.sent,
                accepted: lhs.accepted + rhs.accepted,
                rejected: lhs.rejected.merging(rhs.rejected, uniquingKeysWith: +),
                skipped: lhs.skipped.merging(rhs.skipped, uniquingKeysWith: +),
                receipts: lhs.receipts.merging(rhs.receipts, uniquingKeysWith: +),
                byProvider: lhs.byProvider.merging(rhs.byProvider, uniquingKeysWith: +),
                dormant: lhs.dormant + rhs.dormant
            )
        }
    }

    /// What one provider was handed and answered.
    public struct ProviderCounts: Codable, Sendable, Equatable {
        public var sent: Int
        public var accepted: Int
        /// Rejections by the provider's reason (`Unregistered`, `UNREGISTERED`, …), `fateUnknown`, `notSent`.
        public var rejected: [String: Int]
        /// Receipts by result of the devices of this provider, counted as ``Counts/receipts`` is.
        public var receipts: [String: Int]

        public init(sent: Int = 0, accepted: Int = 0, rejected: [String: Int] = [:], receipts: [String: Int] = [:]) {
            self.sent = sent
            self.accepted = accepted
            self.rejected = rejected
            self.receipts = receipts
        }

        enum CodingKeys: String, CodingKey {
            case sent, accepted, rejected, receipts
        }

        /// `receipts` may be missing: progress written before the tallies (migration 0019) had none per provider.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            sent = try container.decode(Int.self, forKey: .sent)
            accepted = try container.decode(Int.self, forKey: .accepted)
            rejected = try container.decode([String: Int].self, forKey: .rejected)
            receipts = try container.decodeIfPresent([String: Int].self, forKey: .receipts) ?? [:]
        }

        public static func + (lhs: ProviderCounts, rhs: ProviderCounts) -> ProviderCounts {
            ProviderCounts(
                sent: lhs.sent + rhs.sent,
                accepted: lhs.accepted + rhs.accepted,
                rejected: lhs.rejected.merging(rhs.rejected, uniquingKeysWith: +),
                receipts: lhs.receipts.merging(rhs.receipts, uniquingKeysWith: +)
            )
        }

        /// Reads the stored flat counts, `<provider>/sent`, `<provider>/accepted`, `<provider>/<reason>`.
        public static func split(_ flat: [String: Int]) -> [String: ProviderCounts] {
            var counts: [String: ProviderCounts] = [:]
            for (key, value) in flat {
                guard let slash = key.firstIndex(of: "/") else { continue }
                let provider = String(key[..<slash])
                let name = String(key[key.index(after: slash)...])
                switch name {
                case "sent": counts[provider, default: .init()].sent += value
                case "accepted": counts[provider, default: .init()].accepted += value
                default: counts[provider, default: .init()].rejected[name, default: 0] += value
                }
            }
            return counts
        }
    }

    public struct Cohort: Codable, Sendable, Equatable {
        public var cohort: Int
        public var startsAt: Date
        public var endsAt: Date
        public var counts: Counts

        public init(cohort: Int, startsAt: Date, endsAt: Date, counts: Counts) {
            self.cohort = cohort
            self.startsAt = startsAt
            self.endsAt = endsAt
            self.counts = counts
        }
    }

    public struct Wave: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable {
            case background
            case alert
        }

        public var wave: Int
        public var kind: Kind
        public var startsAt: Date
        /// Sends per second, shared by all workers.
        public var rate: Double
        public var window: TimeInterval
        public var finishedAt: Date?
        /// How far the wave's most recent slot lies behind its plan, in seconds: after a stall the devices
        /// that were due go out later at the wave's rate, never faster. nil or 0 when on plan.
        public var behindSeconds: Double?
        /// The sum of the cohorts.
        public var counts: Counts
        public var cohorts: [Cohort]

        public init(
            wave: Int,
            kind: Kind,
            startsAt: Date,
            rate: Double,
            window: TimeInterval,
            finishedAt: Date?,
            behindSeconds: Double? = nil,
            cohorts: [Cohort]
        ) {
            self.wave = wave
            self.behindSeconds = behindSeconds
            self.kind = kind
            self.startsAt = startsAt
            self.rate = rate
            self.window = window
            self.finishedAt = finishedAt
            self.cohorts = cohorts
            self.counts = cohorts.reduce(Counts()) { $0 + $1.counts }
        }
    }

    public var id: UUID
    public var editionID: UUID
    public var publication: String
    public var issueDate: String
    public var environment: APNsEnvironment
    public var state: State
    public var origin: String
    public var options: BroadcastOptions
    public var createdAt: Date
    public var deadline: Date
    public var finishedAt: Date?
    /// Why a `failed` broadcast failed.
    public var failure: String?
    /// Why it started later or runs slower than asked (the content origin it shares was busy), if it did.
    public var note: String?
    /// The app's providers held for a suspected misconfiguration while it runs: their devices wait, none is
    /// deactivated, until an operator fixes the configuration or confirms the deactivations. Nil when none is.
    public var held: [Hold]?
    /// The app's providers that workers have paused while it runs because they answer that they are unavailable
    /// (5xx, 429, timeouts): their devices wait unrecorded, a probe goes out with backoff, and sending resumes at the
    /// plan's rate once the provider answers. Nil when none is.
    public var paused: [Pause]?
    public var waves: [Wave]
    /// Receipts for the edition from all devices, by result (also those that reported without a push).
    public var receipts: [String: Int]
    /// The receipt counts (here and per wave and cohort) hold the receipts that arrived up to this instant, the
    /// database's clock: a few seconds ago while workers run (they tally every 2 s), exact for a broadcast that
    /// has ended once it was recounted. nil where not known.
    public var receiptsCountedThrough: Date?
    /// Whether the edition was there when the readers looked (``ReadyAtOpen``); nil where not counted.
    public var readyAtOpen: ReadyAtOpen?

    /// A provider of the broadcast's app held for a suspected misconfiguration (`paperboy apps holds`).
    public struct Hold: Codable, Sendable, Equatable {
        public var provider: PushProvider
        /// What most devices answered and what that means, e.g. "120 of the last 120 APNs answers said
        /// DeviceTokenNotForTopic: the app's bundle id (apns-topic) is not the one its devices registered with".
        public var reason: String
        public var since: Date
        /// Deactivations the hold keeps from being applied.
        public var heldDeactivations: Int

        public init(provider: PushProvider, reason: String, since: Date, heldDeactivations: Int) {
            self.provider = provider
            self.reason = reason
            self.since = since
            self.heldDeactivations = heldDeactivations
        }
    }

    /// A provider of the broadcast's app that workers have paused (`paperboy_provider_unavailable_since_seconds`).
    public struct Pause: Codable, Sendable, Equatable {
        public var provider: PushProvider
        /// When the first of the workers that paused it did so.
        public var since: Date
        /// How many of the workers seen in the last minute have paused it, of how many.
        public var workers: Int
        public var ofWorkers: Int

        public init(provider: PushProvider, since: Date, workers: Int, ofWorkers: Int) {
            self.provider = provider
            self.since = since
            self.workers = workers
            self.ofWorkers = ofWorkers
        }
    }

    public init(
        id: UUID,
        editionID: UUID,
        publication: String,
        issueDate: String,
        environment: APNsEnvironment,
        state: State,
        origin: String,
        options: BroadcastOptions,
        createdAt: Date,
        deadline: Date,
        finishedAt: Date?,
        failure: String? = nil,
        note: String? = nil,
        waves: [Wave],
        receipts: [String: Int],
        receiptsCountedThrough: Date? = nil
    ) {
        self.failure = failure
        self.note = note
        self.receiptsCountedThrough = receiptsCountedThrough
        self.id = id
        self.editionID = editionID
        self.publication = publication
        self.issueDate = issueDate
        self.environment = environment
        self.state = state
        self.origin = origin
        self.options = options
        self.createdAt = createdAt
        self.deadline = deadline
        self.finishedAt = finishedAt
        self.waves = waves
        self.receipts = receipts
    }

    /// The wave being sent or last sent: the highest wave number present, or `nil` before the first.
    public var currentWave: Wave? { waves.max { $0.wave < $1.wave } }

    /// How many waves the broadcast may send at most; never fewer than the waves already present. With a
    /// fixed ``BroadcastOptions/maxPushesPerDevice``, one background wave per allowed push and the alert
    /// wave when it is the last resort; with `auto`, the wave slots (`waveInterval` apart from wave 1's
    /// start, or from the creation before wave 1) that start before the deadline, the last of them the
    /// alert's when it is the last resort.
    public var expectedWaves: Int {
        let planned: Int
        switch options.maxPushesPerDevice {
        case .fixed(let count):
            planned = count + (options.alertLastResort ? 1 : 0)
        case .auto:
            planned = Self.waveSlots(from: waves.min { $0.wave < $1.wave }?.startsAt ?? createdAt, to: deadline, interval: options.waveInterval)
        }
        return max(planned, waves.map(\.wave).max() ?? 0)
    }

    /// Wave starts `interval` apart from `start` (the first at `start`) that fall before `deadline`; at least 1.
    public static func waveSlots(from start: Date, to deadline: Date, interval: TimeInterval) -> Int {
        let span = deadline.timeIntervalSince(start)
        guard interval > 0, span > 0, span.isFinite else { return 1 }
        return max(1, Int((span / interval).rounded(.up)))
    }

    /// Devices that have the edition: receipts `newData` and `noData`.
    public static func received(_ receipts: [String: Int]) -> Int { (receipts["newData"] ?? 0) + (receipts["noData"] ?? 0) }

    /// All waves together.
    public var totals: Counts { waves.reduce(Counts()) { $0 + $1.counts } }

    enum CodingKeys: String, CodingKey {
        case id
        case editionID = "editionId"
        case publication, issueDate, environment, state, origin, options, createdAt, deadline, finishedAt, failure, note, held, paused
        case waves, receipts, receiptsCountedThrough, readyAtOpen
    }

    /// Ids as lowercase UUIDs, as everywhere in the API.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(editionID.uuidString.lowercased(), forKey: .editionID)
        try container.encode(publication, forKey: .publication)
        try container.encode(issueDate, forKey: .issueDate)
        try container.encode(environment, forKey: .environment)
        try container.encode(state, forKey: .state)
        try container.encode(origin, forKey: .origin)
        try container.encode(options, forKey: .options)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(deadline, forKey: .deadline)
        try container.encodeIfPresent(finishedAt, forKey: .finishedAt)
        try container.encodeIfPresent(failure, forKey: .failure)
        try container.encodeIfPresent(note, forKey: .note)
        // The API's schema has had `held` and `paused` since they were added to the status; until 2026-12-05 the JSON
        // left them out, so that only the terminal report and the console showed a hold or a pause.
        try container.encodeIfPresent(held, forKey: .held)
        try container.encodeIfPresent(paused, forKey: .paused)
        try container.encode(waves, forKey: .waves)
        try container.encode(receipts, forKey: .receipts)
        try container.encodeIfPresent(receiptsCountedThrough, forKey: .receiptsCountedThrough)
        try container.encodeIfPresent(readyAtOpen, forKey: .readyAtOpen)
    }
}
