import Foundation
import PaperboyCore
import PaperboyDispatch

/// The push providers as the simulation sees them: what each push's answer is and when, as the providers' rules and
/// the seed's faults say, and the log of every push written, which the invariants read as the truth (what reached a
/// device, who wrote it, under which answer).
///
/// It answers at the level of the channels' answers (``BatchSendMachine/Answer``): the HTTP/2 clients' own retries
/// (429, 5xx, GOAWAY) are tested against the real simulators elsewhere and show here as latency; what is left is what
/// a worker sees: accepted, rejected with the provider's reason and verdict, written without an answer, never written,
/// our credentials refused.
struct SimulatedProvider {
    /// One push written to a provider.
    struct Push: Sendable {
        var device: Int64
        var broadcast: UUID
        var wave: Int
        var worker: String
        var batch: Int64
        var lease: Int
        var writtenAt: Date
        /// Whether it reached the device (accepted, or written and lost with its answer but processed).
        var delivered: Bool
        var answer: String
        /// The answer asked for the device's deactivation (at once, or held).
        var deactivates: Bool
        /// Answered "not valid for this app" because the app was misconfigured, not because of the token.
        var byMisconfiguration: Bool
    }

    /// How a device's token stands at the provider.
    enum Token: Sendable {
        case valid
        /// The app was uninstalled at this instant: `410 Unregistered`.
        case uninstalled(Date)
        /// A stray token not valid for the app.
        case invalid
    }

    /// The key generations the provider accepts, per app and provider (a revoked key is removed).
    var accepted: [AppProvider: Set<Int>] = [:]
    /// Apps misconfigured at a provider now.
    var misconfigured: Set<AppProvider> = []
    var tokens: [Int64: Token] = [:]
    /// While set, the provider takes no connection and answers nothing.
    var outage: (from: Date, until: Date)?
    var log: [Push] = []
    var notSentChance: Double
    var fateUnknownChance: Double
    /// How long a request waits for a connection before it is not sent, and for its answer before its fate is unknown.
    static let connectWait: TimeInterval = 10
    static let requestTimeout: TimeInterval = 10

    /// When a push handed over at `now` is written, and when (and what) it is answered, for a push through `key` with
    /// credentials of `generation` to `device`.
    mutating func decide(
        device: Int64,
        provider: PushProvider,
        key: AppProvider,
        generation: Int,
        now: Date,
        latency: TimeInterval,
        random: inout SimulationRandom
    ) -> (writtenAt: Date?, answerAt: Date, answer: BatchOutcome.Result, refused: Bool, hint: String?, delivered: Bool, misconfiguration: Bool) {
        var written: Date? = now
        if let outage, now >= outage.from && now < outage.until {
            if outage.until.timeIntervalSince(now) > Self.connectWait {
                return (nil, now.addingTimeInterval(Self.connectWait), .notSent, false, nil, false, false)
            }
            written = outage.until
        }
        if random.chance(notSentChance) { return (nil, written!.addingTimeInterval(latency), .notSent, false, nil, false, false) }
        var answerAt = written!.addingTimeInterval(latency)
        if let outage, answerAt >= outage.from && written! < outage.until {
            // Written before the provider went quiet: answered when it is back, or never (fate unknown) past the timeout.
            answerAt = max(answerAt, outage.until.addingTimeInterval(latency))
            if answerAt.timeIntervalSince(written!) > Self.requestTimeout {
                return (written, written!.addingTimeInterval(Self.requestTimeout), .fateUnknown, false, nil, random.chance(0.5), false)
            }
        }
        if random.chance(fateUnknownChance) {
            return (written, written!.addingTimeInterval(Self.requestTimeout), .fateUnknown, false, nil, random.chance(0.5), false)
        }
        guard accepted[key]?.contains(generation) == true else {
            return (written, answerAt, .rejected(reason: "InvalidProviderToken", deactivates: nil), true, nil, false, false)
        }
        let reason = provider == .apns ? "DeviceTokenNotForTopic" : "SENDER_ID_MISMATCH"
        if misconfigured.contains(key) {
            return (written, answerAt, .rejected(reason: reason, deactivates: .deferred), false, "the app's configuration", false, true)
        }
        switch tokens[device] ?? .valid {
        case .valid:
            return (written, answerAt, .accepted, false, nil, true, false)
        case .uninstalled(let since):
            return (written, answerAt, .rejected(reason: "Unregistered", deactivates: .at(since)), false, nil, false, false)
        case .invalid:
            return (
                written, answerAt, .rejected(reason: provider == .apns ? "BadDeviceToken" : reason, deactivates: .deferred), false, "a stray token",
                false, false
            )
        }
    }
}
