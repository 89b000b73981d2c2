import Foundation
import Logging
import PaperboyCore
import PostgresNIO

/// Bulk-inserts a synthetic fleet of devices for benchmarks and the demo, far faster than registering
/// them through the API (one `INSERT … SELECT FROM unnest(…)` per chunk of ``chunkSize`` rows).
///
/// Rows are written as ``DeviceRepository/register(appID:token:_:logger:)`` writes them: the cohort key is
/// ``DeviceToken/storedCohortKey``, subscriptions are the publications' ids in id order, environment and
/// tier use their storage codes, and the device is active.
///
/// A share of the fleet (`fcmShare`, 0 by default) is Android devices registered with FCM: tokens of today's
/// FCM shape (an 11-character instance id, `:`, `APA91b` and 134 characters; 152 in all), stored as their
/// ASCII bytes, in the production environment (FCM has none other).
///
/// Everything is deterministic from `seed` and the device's index: the same seed and options give the
/// same tokens and attributes, so seeding twice inserts nothing the second time (existing tokens are left
/// alone: `ON CONFLICT DO NOTHING`).
public struct DeviceSeeder: Sendable {
    /// Rows per INSERT statement.
    public static let chunkSize = 10_000
    /// Chunks in flight at once (each generating or inserting).
    public static let concurrency = 2
    /// The largest fleet one call seeds.
    public static let maximumCount = 50_000_000
    /// The token length, in bytes (64 hex characters), as APNs issues them today.
    public static let tokenLength = 32
    /// The longest token prefix, in hex characters; the rest of the token stays random.
    public static let maximumPrefixLength = 32

    /// A hex prefix given to a share of the fleet's tokens, e.g. so that the APNs simulator's
    /// `--token-outcome dead=410:Unregistered` answers for 5% of the devices.
    public struct TokenPrefix: Sendable, Equatable {
        public var hex: String
        public var share: Double

        public init(hex: String, share: Double) {
            self.hex = hex
            self.share = share
        }
    }

    /// How the fleet is split between image tiers; the shares are relative (normalized to their sum).
    public struct TierShares: Sendable, Equatable {
        public var small: Double
        public var medium: Double
        public var large: Double

        public init(small: Double, medium: Double, large: Double) {
            self.small = small
            self.medium = medium
            self.large = large
        }

        /// 20% small, 30% medium, 50% large.
        public static let standard = TierShares(small: 0.2, medium: 0.3, large: 0.5)
    }

    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Inserts `count` synthetic devices of the app, all subscribed to `publicationSlugs`.
    ///
    /// - Parameters:
    ///   - seed: Makes tokens and attributes repeatable; device `i` of seed `s` is always the same.
    ///   - tokenPrefix: A hex prefix for every token not given one of `prefixes`.
    ///   - prefixes: Hex prefixes given to shares of the fleet (the first `prefixes[0].share` of it, and so on).
    ///   - alertsShare: The share of devices with alerts authorized (0...1); these asked for edition alerts too
    ///     (`editionAlerts`), so that a seeded fleet's alert last resort reaches them.
    ///   - autoDownloadShare: The share of devices with auto-download on (0...1), i.e. broadcast targets.
    ///   - fcmShare: The share of devices that are Android devices registered with FCM (0...1); production only.
    ///   - tiers: The split between image tiers.
    ///   - timeZone: The IANA time zone every device reports.
    ///   - progress: Called after each chunk with the number of devices processed so far.
    /// - Returns: How many devices were inserted (tokens already stored are skipped).
    /// - Throws: ``StoreError`` `.notFound` with field `publication` for a slug that names no publication of
    ///   the app; `.invalid` for a count, share or prefix out of range.
    public func seed(
        appID: Int,
        publicationSlugs: [String],
        count: Int,
        environment: APNsEnvironment,
        seed: UInt64,
        tokenPrefix: String = "",
        prefixes: [TokenPrefix] = [],
        alertsShare: Double,
        autoDownloadShare: Double,
        fcmShare: Double = 0,
        tiers: TierShares = .standard,
        timeZone: String = "Asia/Tokyo",
        progress: (Int) -> Void = { _ in },
        logger: Logger
    ) async throws -> Int {
        let generator = try Generator(
            seed: seed,
            tokenPrefix: tokenPrefix,
            prefixes: prefixes,
            alertsShare: alertsShare,
            autoDownloadShare: autoDownloadShare,
            fcmShare: fcmShare,
            tiers: tiers
        )
        guard fcmShare == 0 || environment == .production else {
            throw StoreError(code: .invalid, field: "fcmShare", message: "FCM devices are production devices (FCM has no sandbox)")
        }
        guard (0...Self.maximumCount).contains(count) else {
            throw StoreError(code: .invalid, field: "count", message: "must be between 0 and \(Self.maximumCount), got \(count)")
        }
        guard TimeZone(identifier: timeZone) != nil else {
            throw StoreError(code: .invalid, field: "timeZone", message: "'\(timeZone)' is not an IANA time zone, e.g. Asia/Tokyo")
        }
        let subscriptions = try await publicationIDs(appID: appID, slugs: publicationSlugs, logger: logger)
        guard count > 0 else { return 0 }

        // Chunks are generated and inserted by `concurrency` tasks at once, so that generating one chunk
        // overlaps inserting another and PostgreSQL can use more than one core.
        let concurrency = max(1, min(Self.concurrency, (count + Self.chunkSize - 1) / Self.chunkSize))
        let client = client
        var inserted = 0
        var done = 0
        try await withThrowingTaskGroup(of: (rows: Int, inserted: Int).self) { group in
            var next = 0
            func addChunk() {
                let start = next
                let rows = min(Self.chunkSize, count - start)
                next += rows
                group.addTask {
                    let chunk = generator.chunk(start: start, count: rows)
                    let inserted = try await Self.insert(
                        chunk,
                        client: client,
                        appID: appID,
                        environment: environment,
                        subscriptions: subscriptions,
                        timeZone: timeZone,
                        logger: logger
                    )
                    return (rows, inserted)
                }
            }
            for _ in 0..<concurrency where next < count { addChunk() }
            while let finished = try await group.next() {
                inserted += finished.inserted
                done += finished.rows
                if next < count { addChunk() }
                progress(done)
            }
        }
        // The planner's statistics, now: until autovacuum's next round analyzes the table, the planner knows
        // nothing of the new devices (the last ANALYZE saw the other apps only). The demo's third strategy,
        // seeded right before its broadcast, sent wave 1 at under a third of its plan's pace without this.
        if inserted > 0 {
            try await client.query("ANALYZE devices", logger: logger)
        }
        logger.debug("seeded devices", metadata: [LogKey.app: "\(appID)", LogKey.count: "\(count)", LogKey.inserted: "\(inserted)"])
        return inserted
    }

    /// The APNs token of device `index` for these options (a fleet without FCM devices), as ``seed(appID:publicationSlugs:count:environment:seed:tokenPrefix:prefixes:alertsShare:autoDownloadShare:fcmShare:tiers:timeZone:progress:logger:)`` stores it.
    public static func token(
        index: Int,
        seed: UInt64,
        tokenPrefix: String = "",
        prefixes: [TokenPrefix] = []
    ) throws -> DeviceToken {
        let generator = try Generator(
            seed: seed,
            tokenPrefix: tokenPrefix,
            prefixes: prefixes,
            alertsShare: 0,
            autoDownloadShare: 0,
            fcmShare: 0,
            tiers: .standard
        )
        return DeviceToken(bytes: generator.device(index).token)
    }

    /// The token of device `index` of a fleet with `fcmShare` FCM devices, with its provider.
    public static func pushToken(
        index: Int,
        seed: UInt64,
        tokenPrefix: String = "",
        prefixes: [TokenPrefix] = [],
        fcmShare: Double
    ) throws -> PushToken {
        let generator = try Generator(
            seed: seed,
            tokenPrefix: tokenPrefix,
            prefixes: prefixes,
            alertsShare: 0,
            autoDownloadShare: 0,
            fcmShare: fcmShare,
            tiers: .standard
        )
        let device = generator.device(index)
        return PushToken(provider: device.provider, bytes: device.token)
    }

    // MARK: - Inserting

    private static func insert(
        _ chunk: Chunk,
        client: PostgresClient,
        appID: Int,
        environment: APNsEnvironment,
        subscriptions: [Int32],
        timeZone: String,
        logger: Logger
    ) async throws -> Int {
        let rows = try await client.query(
            """
            WITH inserted AS (
                INSERT INTO devices (
                    app_id, provider, platform, environment, cohort_key, token, auto_download, alerts_authorized, edition_alerts, tier,
                    subscriptions, time_zone
                )
                SELECT \(appID), s.provider, s.platform, \(environment.storageCode), s.cohort_key, s.token, s.auto_download,
                    s.alerts_authorized, s.alerts_authorized, s.tier, \(subscriptions)::integer[], \(timeZone)
                FROM unnest(\(chunk.providers)::smallint[], \(chunk.platforms)::smallint[], \(chunk.cohortKeys)::integer[],
                    \(chunk.tokens)::bytea[], \(chunk.autoDownload)::boolean[], \(chunk.alerts)::boolean[], \(chunk.tiers)::smallint[])
                    AS s (provider, platform, cohort_key, token, auto_download, alerts_authorized, tier)
                ON CONFLICT (app_id, token, provider, environment) DO NOTHING
                RETURNING 1
            )
            SELECT count(*) FROM inserted
            """,
            logger: logger
        )
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// The ids of the publications, in id order as registration stores them.
    private func publicationIDs(appID: Int, slugs: [String], logger: Logger) async throws -> [Int32] {
        let wanted = Array(Set(slugs)).sorted()
        let rows = try await client.query(
            "SELECT id, slug FROM publications WHERE app_id = \(appID) AND slug = ANY(\(wanted)) ORDER BY id",
            logger: logger
        )
        var ids = [Int32]()
        var found = Set<String>()
        for try await (id, slug) in rows.decode((Int32, String).self) {
            ids.append(id)
            found.insert(slug)
        }
        let unknown = wanted.filter { !found.contains($0) }
        guard unknown.isEmpty else {
            throw StoreError(
                code: .notFound,
                field: "publication",
                message: "no publication named \(unknown.joined(separator: ", ")) for app \(appID); declare it with `paperboy publications add`"
            )
        }
        return ids
    }

    // MARK: - Generating

    /// One chunk's columns, bound as arrays.
    struct Chunk: Sendable {
        var count: Int
        var providers: [Int16]
        var platforms: [Int16]
        var cohortKeys: [Int32]
        var tokens: [ByteBuffer]
        var autoDownload: [Bool]
        var alerts: [Bool]
        var tiers: [Int16]
    }

    /// One device's generated values.
    struct GeneratedDevice {
        var provider: PushProvider
        /// The raw bytes of an APNs token, the ASCII bytes of an FCM token.
        var token: [UInt8]
        var autoDownload: Bool
        var alerts: Bool
        var tier: ImageTier
    }

    /// Device `i` from SplitMix64 outputs keyed by the seed and `i`: independent of chunking.
    struct Generator: Sendable {
        /// A prefix as whole bytes plus, for an odd number of hex digits, one high nibble.
        struct Prefix: Sendable {
            var bytes: [UInt8]
            var nibble: UInt8?
        }

        let seed: UInt64
        let defaultPrefix: Prefix
        /// Each prefix with the cumulative share (as a threshold on 0..<2^53) below which a device gets it.
        let prefixes: [(prefix: Prefix, below: UInt64)]
        let alertsBelow: UInt64
        let autoDownloadBelow: UInt64
        let fcmBelow: UInt64
        let smallBelow: UInt64
        let mediumBelow: UInt64

        init(
            seed: UInt64,
            tokenPrefix: String,
            prefixes: [TokenPrefix],
            alertsShare: Double,
            autoDownloadShare: Double,
            fcmShare: Double,
            tiers: TierShares
        ) throws {
            func share(_ value: Double, _ field: String) throws -> Double {
                guard value.isFinite, (0...1).contains(value) else {
                    throw StoreError(code: .invalid, field: field, message: "a share between 0 and 1, got \(value)")
                }
                return value
            }
            self.seed = seed
            defaultPrefix = try Self.parse(tokenPrefix, field: "tokenPrefix")
            var cumulative = 0.0
            var parsed: [(prefix: Prefix, below: UInt64)] = []
            for (index, prefix) in prefixes.enumerated() {
                cumulative += try share(prefix.share, "prefixes[\(index)].share")
                guard cumulative <= 1 + 1e-9 else {
                    throw StoreError(code: .invalid, field: "prefixes", message: "the shares add up to more than 1")
                }
                parsed.append((try Self.parse(prefix.hex, field: "prefixes[\(index)].hex"), Self.threshold(cumulative)))
            }
            self.prefixes = parsed
            alertsBelow = Self.threshold(try share(alertsShare, "alertsShare"))
            autoDownloadBelow = Self.threshold(try share(autoDownloadShare, "autoDownloadShare"))
            fcmBelow = Self.threshold(try share(fcmShare, "fcmShare"))
            let weights = [tiers.small, tiers.medium, tiers.large]
            guard weights.allSatisfy({ $0.isFinite && $0 >= 0 }), weights.reduce(0, +) > 0 else {
                throw StoreError(code: .invalid, field: "tiers", message: "shares must be non-negative with a positive sum")
            }
            let total = weights.reduce(0, +)
            smallBelow = Self.threshold(tiers.small / total)
            mediumBelow = Self.threshold((tiers.small + tiers.medium) / total)
        }

        static let unit: UInt64 = 1 << 53

        static func threshold(_ share: Double) -> UInt64 {
            share >= 1 ? unit : UInt64((share * Double(unit)).rounded())
        }

        static func parse(_ hex: String, field: String) throws -> Prefix {
            let digits = Array(hex.lowercased().utf8)
            guard digits.count <= DeviceSeeder.maximumPrefixLength else {
                throw StoreError(
                    code: .invalid,
                    field: field,
                    message: "at most \(DeviceSeeder.maximumPrefixLength) hex digits, got \(digits.count)"
                )
            }
            var nibbles = [UInt8]()
            for digit in digits {
                switch digit {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(digit - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(digit - UInt8(ascii: "a") + 10)
                default: throw StoreError(code: .invalid, field: field, message: "'\(hex)' is not hex")
                }
            }
            var prefix = Prefix(bytes: [], nibble: nil)
            var index = 0
            while index + 1 < nibbles.count {
                prefix.bytes.append(nibbles[index] << 4 | nibbles[index + 1])
                index += 2
            }
            if index < nibbles.count { prefix.nibble = nibbles[index] << 4 }
            return prefix
        }

        /// SplitMix64's output for position `n` of the stream started at `state`.
        @inline(__always)
        static func mix(_ state: UInt64, _ n: UInt64) -> UInt64 {
            var z = state &+ (n &+ 1) &* 0x9e37_79b9_7f4a_7c15
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }

        /// A uniform draw on 0..<2^53 for `purpose` of device `index`.
        @inline(__always)
        func draw(_ index: Int, _ purpose: UInt64) -> UInt64 {
            Self.mix(seed ^ 0x5eed_0f_de71ce5, UInt64(index) &* 8 &+ purpose) >> 11
        }

        func device(_ index: Int) -> GeneratedDevice {
            // The draw decides FCM only when there is a share, so that a fleet without one is the fleet this
            // seed gave before FCM (same tokens, same attributes).
            let fcm = fcmBelow > 0 && draw(index, 4) < fcmBelow
            var token: [UInt8]
            if fcm {
                token = fcmToken(index)
            } else {
                token = [UInt8](repeating: 0, count: DeviceSeeder.tokenLength)
                fillToken(index, into: &token)
            }
            let tierDraw = draw(index, 3)
            return GeneratedDevice(
                provider: fcm ? .fcm : .apns,
                token: token,
                autoDownload: draw(index, 1) < autoDownloadBelow,
                alerts: draw(index, 2) < alertsBelow,
                tier: tierDraw < smallBelow ? .small : (tierDraw < mediumBelow ? .medium : .large)
            )
        }

        @inline(__always)
        func fillToken(_ index: Int, into token: inout [UInt8]) {
            token.withUnsafeMutableBytes { raw in
                for word in 0..<(DeviceSeeder.tokenLength / 8) {
                    let value = Self.mix(seed, UInt64(index) &* 4 &+ UInt64(word)).bigEndian
                    raw.storeBytes(of: value, toByteOffset: word * 8, as: UInt64.self)
                }
            }
            var prefix = defaultPrefix
            if !prefixes.isEmpty {
                let choice = draw(index, 0)
                if let match = prefixes.first(where: { choice < $0.below }) { prefix = match.prefix }
            }
            for (offset, byte) in prefix.bytes.enumerated() { token[offset] = byte }
            if let nibble = prefix.nibble {
                token[prefix.bytes.count] = nibble | (token[prefix.bytes.count] & 0x0f)
            }
        }

        /// The ASCII bytes of an FCM token of today's shape for device `index`: an 11-character instance id,
        /// `:APA91b`, and 134 characters, all base64url.
        func fcmToken(_ index: Int) -> [UInt8] {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
            var random: [UInt8] = []
            random.reserveCapacity(150)
            for word in 0..<15 {
                var value = Self.mix(seed ^ 0xfc_0000_0000_0fcb, UInt64(index) &* 16 &+ UInt64(word))
                for _ in 0..<10 {
                    random.append(alphabet[Int(value & 63)])
                    value >>= 6
                }
            }
            return Array(random[0..<11]) + Array(":APA91b".utf8) + Array(random[11..<145])
        }

        func chunk(start: Int, count: Int) -> Chunk {
            var chunk = Chunk(count: count, providers: [], platforms: [], cohortKeys: [], tokens: [], autoDownload: [], alerts: [], tiers: [])
            chunk.cohortKeys.reserveCapacity(count)
            chunk.tokens.reserveCapacity(count)
            for index in start..<(start + count) {
                let device = device(index)
                chunk.providers.append(device.provider.storageCode)
                // FCM devices of a seeded fleet are Android devices.
                chunk.platforms.append((device.provider == .apns ? DevicePlatform.ios : .android).storageCode)
                chunk.cohortKeys.append(StoredCohortKey.stored(DeviceToken.cohortKey(of: device.token)))
                chunk.tokens.append(ByteBuffer(bytes: device.token))
                chunk.autoDownload.append(device.autoDownload)
                chunk.alerts.append(device.alerts)
                chunk.tiers.append(device.tier.storageCode)
            }
            return chunk
        }
    }
}

/// How many devices an app has: all rows, and those broadcasts may send to.
public struct DeviceCounts: Sendable, Codable, Equatable {
    public struct Counts: Sendable, Codable, Equatable {
        /// Every stored row, deleted and unregistered ones included.
        public var total: Int
        /// Registered, not deleted, not unregistered by APNs since.
        public var active: Int
        /// Active with auto-download on: what a broadcast of a publication they subscribe to targets.
        public var activeAutoDownload: Int

        public init(total: Int = 0, active: Int = 0, activeAutoDownload: Int = 0) {
            self.total = total
            self.active = active
            self.activeAutoDownload = activeAutoDownload
        }
    }

    public var appID: Int
    public var total: Int
    public var active: Int
    public var production: Counts
    public var sandbox: Counts
    /// The devices registered with FCM (Android, and iOS through Firebase), counted in ``production`` too:
    /// FCM has no sandbox.
    public var fcm: Counts
}

extension DeviceRepository {
    /// The app's device counts, overall, per environment and for FCM, in one query.
    public func counts(appID: Int, logger: Logger) async throws -> DeviceCounts {
        let rows = try await client.query(
            """
            SELECT environment, provider, count(*), count(*) FILTER (WHERE active), count(*) FILTER (WHERE active AND auto_download)
            FROM devices WHERE app_id = \(appID) GROUP BY environment, provider
            """,
            logger: logger
        )
        var counts = DeviceCounts(appID: appID, total: 0, active: 0, production: .init(), sandbox: .init(), fcm: .init())
        func add(_ row: DeviceCounts.Counts, to counts: inout DeviceCounts.Counts) {
            counts.total += row.total
            counts.active += row.active
            counts.activeAutoDownload += row.activeAutoDownload
        }
        for try await (environment, provider, total, active, autoDownload) in rows.decode((Int16, Int16, Int, Int, Int).self) {
            let row = DeviceCounts.Counts(total: total, active: active, activeAutoDownload: autoDownload)
            if APNsEnvironment(storageCode: environment) == .production { add(row, to: &counts.production) } else { add(row, to: &counts.sandbox) }
            if PushProvider(storageCode: provider) == .fcm { add(row, to: &counts.fcm) }
            counts.total += total
            counts.active += active
        }
        return counts
    }
}
