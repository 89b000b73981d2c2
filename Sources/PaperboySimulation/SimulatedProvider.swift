import Foundation
import PaperboyCore
import PaperboyDispatch

/// The push providers as the simulation sees them: when each push is written and answered, and with what, as the
/// providers' rules and the seed's faults say, and the log of every push written, which the invariants read as the truth
/// (what reached a device, who wrote it, under which answer).
///
/// It answers as APNs and FCM do, with an HTTP status and the provider's reason (`410 Unregistered`, `503
/// UNAVAILABLE`, `400 TopicDisallowed`…), and what an answer means is the provider modules' own reading of it
/// (``APNsRejection/verdict``, ``FCMRejection/verdict``), which the worker's ``AnswerRules`` then apply: the simulation
/// picks the answers, production's code says what they mean. What is a model is the transport: a push never written,
/// written without an answer, held while the provider takes no connection, or cut off when it closes every connection
/// (the HTTP/2 clients' own retries are tested against the real simulators elsewhere and show here as latency).
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
        /// A visible alert (the alert wave's, or the ready alert), not a background push.
        var alert = false
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
    /// Apps whose every push the provider refuses for the app's configuration now (`TopicDisallowed`).
    var topicDisallowed: Set<AppProvider> = []
    /// The reasons it answers then: never a device's outcome.
    static let configurationReasons: Set<String> = ["TopicDisallowed", "THIRD_PARTY_AUTH_ERROR"]
    var tokens: [Int64: Token] = [:]
    /// While set, the provider takes no connection (a connect is refused) and answers nothing written before it.
    var outage: (from: Date, until: Date)?
    /// Until then, a push handed over waits for a new connection (``Scenario/Fault/connectionsReset``).
    var reconnecting: Date?
    /// While set, the provider takes every request and answers that it is unavailable.
    var failing: (from: Date, until: Date)?
    /// While set, the provider answers that share of the requests that it is overloaded.
    var throttling: (from: Date, until: Date, share: Double)?
    /// The reasons a failing or overloaded provider answers with (APNs', FCM's): never a device's final outcome.
    static let transientReasons: Set<String> = ["ServiceUnavailable", "UNAVAILABLE", "TooManyRequests", "QUOTA_EXCEEDED"]
    var log: [Push] = []
    var notSentChance: Double
    var fateUnknownChance: Double
    /// How long a written request waits for its answer before its fate is unknown.
    static let requestTimeout: TimeInterval = 10

    /// When a push is written, when (and what) it is answered, and what that says: the verdict and reason the
    /// provider's answer reads as (``answer(_:status:reason:since:)``), which ``AnswerRules`` turns into the machine's
    /// answer here as in the worker.
    struct Decision {
        var writtenAt: Date?
        var answerAt: Date
        var verdict: PushVerdict
        /// The provider's reason when it answered with an error.
        var reason: String?
        var delivered = false
        var misconfiguration = false
    }

    /// An error answer of `provider` with its status and reason, and what the provider's module reads it as.
    static func answer(_ provider: PushProvider, status: Int, reason: String, since: Date? = nil) -> (verdict: PushVerdict, reason: String) {
        switch provider {
        case .apns: (APNsRejection(status: status, reason: APNsReason(rawValue: reason), timestamp: since).verdict, reason)
        case .fcm: (FCMRejection(status: status, code: FCMErrorCode(reason), message: "").verdict, reason)
        }
    }

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
    ) -> Decision {
        // A push handed over while the provider takes no connection never comes here: the worker's pool answers it
        // `notSent` at once (``Simulation/poolRefuses(worker:provider:)``).
        var written: Date? = now
        if let reconnecting, written! < reconnecting { written = reconnecting }
        if random.chance(notSentChance) { return Decision(writtenAt: nil, answerAt: written!.addingTimeInterval(latency), verdict: .notSent) }
        /// Taken but answered that the provider is failing or overloaded, with APNs' or FCM's reason.
        /// Taken and answered with an error: its status, and APNs' or FCM's reason.
        func rejected(_ status: Int, apns: String, fcm: String, at answerAt: Date? = nil, since: Date? = nil) -> Decision {
            let read = Self.answer(provider, status: status, reason: provider == .apns ? apns : fcm, since: since)
            return Decision(
                writtenAt: written,
                answerAt: answerAt ?? written!.addingTimeInterval(latency),
                verdict: read.verdict,
                reason: read.reason
            )
        }
        if let failing, written! >= failing.from && written! < failing.until {
            return rejected(503, apns: "ServiceUnavailable", fcm: "UNAVAILABLE")
        }
        if let throttling, written! >= throttling.from && written! < throttling.until, random.chance(throttling.share) {
            return rejected(429, apns: "TooManyRequests", fcm: "QUOTA_EXCEEDED")
        }
        var answerAt = written!.addingTimeInterval(latency)
        if let outage, answerAt >= outage.from && written! < outage.until {
            // Written before the provider went quiet: answered when it is back, or never (fate unknown) past the timeout.
            answerAt = max(answerAt, outage.until.addingTimeInterval(latency))
            if answerAt.timeIntervalSince(written!) > Self.requestTimeout {
                return Decision(
                    writtenAt: written,
                    answerAt: written!.addingTimeInterval(Self.requestTimeout),
                    verdict: .fateUnknown,
                    delivered: random.chance(0.5)
                )
            }
        }
        if random.chance(fateUnknownChance) {
            return Decision(
                writtenAt: written,
                answerAt: written!.addingTimeInterval(Self.requestTimeout),
                verdict: .fateUnknown,
                delivered: random.chance(0.5)
            )
        }
        guard accepted[key]?.contains(generation) == true else {
            return rejected(provider == .apns ? 403 : 401, apns: "InvalidProviderToken", fcm: "UNAUTHENTICATED", at: answerAt)
        }
        if topicDisallowed.contains(key) {
            return rejected(provider == .apns ? 400 : 401, apns: "TopicDisallowed", fcm: "THIRD_PARTY_AUTH_ERROR", at: answerAt)
        }
        if misconfigured.contains(key) {
            var decision = rejected(provider == .apns ? 400 : 403, apns: "DeviceTokenNotForTopic", fcm: "SENDER_ID_MISMATCH", at: answerAt)
            decision.misconfiguration = true
            return decision
        }
        switch tokens[device] ?? .valid {
        case .valid:
            return Decision(writtenAt: written, answerAt: answerAt, verdict: .accepted, delivered: true)
        case .uninstalled(let since):
            return rejected(provider == .apns ? 410 : 404, apns: "Unregistered", fcm: "UNREGISTERED", at: answerAt, since: since)
        case .invalid:
            return rejected(provider == .apns ? 400 : 403, apns: "BadDeviceToken", fcm: "SENDER_ID_MISMATCH", at: answerAt)
        }
    }
}
