import Foundation
import Logging
import PaperboyCore

/// Tells a misconfigured app from a fleet of dead tokens, as pure code, so that a misconfiguration never deactivates
/// a fleet.
///
/// A wrong bundle id, tokens of the other APNs environment, or a service account of another Firebase project make the
/// provider answer "this token is not valid for this app" (`DeviceTokenNotForTopic`, `BadDeviceToken`,
/// `SENDER_ID_MISMATCH`, an invalid registration token) for every device at once. Each provider documents these
/// answers as the token's fault, and for one device they are: a debug build's sandbox token registered as production,
/// a token of another app. In a healthy fleet they are a few per cent of the answers at most (stray tokens;
/// uninstalled apps answer `410 Unregistered` / `UNREGISTERED`, which this guard does not count and which stay
/// per-device truth). So when more than ``Configuration/share`` of an app's last ``Configuration/window`` answers
/// through a provider at this worker say so, and at least ``Configuration/minimumInvalid`` of them, the app's
/// configuration is suspected, not its fleet: sending through that provider is held for an operator, and the
/// deactivations those answers asked for are held too (applied only if the operator confirms them, dropped when the
/// configuration is fixed). Below the threshold the deactivations are deferred, never applied while a hold exists.
public struct MisconfigurationGuard: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// How many of the latest answers per app and provider are looked at.
        public var window: Int = 200
        /// At least this many "token not valid" answers among them…
        public var minimumInvalid: Int = 10
        /// …and more than this share of them. Answers older than ``maxAge`` are forgotten: a configuration fixed
        /// since must not be judged by what the old one earned.
        public var share: Double = 0.5
        public var maxAge: TimeInterval = 300
        /// The fleet rule (``judge(_:)``): an app with fewer active devices than this through a provider is a small
        /// fleet, held when more than ``share`` of it, and at least ``smallFleetMinimum``, answered "not valid".
        public var smallFleet: Int = 20
        public var smallFleetMinimum: Int = 3
        /// A held deactivation is applied once a push accepted through the same configuration was sent at least this
        /// long after its answer was recorded (``MisconfigurationGuard/appliedBefore(_:configuration:)``): more than
        /// the workers' clocks may differ from the database's, which stamped the answer.
        public var acceptedAfter: TimeInterval = 1

        public init(window: Int = 200, minimumInvalid: Int = 10, share: Double = 0.5, maxAge: TimeInterval = 300) {
            self.window = window
            self.minimumInvalid = minimumInvalid
            self.share = share
            self.maxAge = maxAge
        }
    }

    /// A suspected misconfiguration: what to hold and what to tell the operator.
    public struct Suspicion: Sendable, Equatable {
        public var appID: Int
        /// The environment of the broadcasts whose answers these were: the hold covers that one only.
        public var environment: APNsEnvironment = .production
        public var provider: PushProvider
        /// The most frequent answer, as the provider spells it (`DeviceTokenNotForTopic`).
        public var answer: String
        /// What that answer from every device means, from the provider's own module.
        public var likelyCause: String
        public var invalid: Int
        public var answers: Int
        /// The app's configuration version the answers were to: a hold for an older one is not raised (the operator
        /// changed the configuration since, and answers to sends made before say nothing of the new one).
        public var version: Int = 0

        /// Judged from every worker's answers (``MisconfigurationGuard/judge(_:configuration:)``), not one worker's.
        public var fleet = false

        /// What the hold covers.
        public var key: HoldKey { HoldKey(appID: appID, environment: environment, provider: provider) }

        /// The one-line reason shown in status, the console, logs and `apps holds`.
        public var reason: String {
            fleet
                ? "\(invalid) of \(answers) \(provider.displayName) answers from every worker said \(answer): \(likelyCause)"
                : "\(invalid) of the last \(answers) \(provider.displayName) answers said \(answer): \(likelyCause)"
        }
    }

    struct Tally: Sendable, Equatable {
        /// The latest answers, oldest first: the reason of each that said "token not valid" (nil for the others), and
        /// when it came (monotonic).
        var recent: [String?] = []
        var times: [TimeInterval] = []
        var start = 0
        var invalid = 0
        var reasons: [String: Int] = [:]
        var hints: [String: String] = [:]
        /// The app's configuration version the answers tallied were to.
        var version = 0
    }

    public let configuration: Configuration
    var tallies: [HoldKey: Tally] = [:]

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Forgets the tally of `appID` through `provider` in `environment`: a hold covers it, or its configuration changed.
    public mutating func reset(appID: Int, environment: APNsEnvironment = .production, provider: PushProvider) {
        tallies[HoldKey(appID: appID, environment: environment, provider: provider)] = nil
    }

    /// Takes in answers of `appID` through `provider` that came at `now` (monotonic), to sends made under the app's
    /// configuration `version`, with their reasons as the provider spells them; returns the suspicion when they pass the
    /// threshold (once: the tally starts again after it). Answers to an older configuration than the tally's are
    /// ignored; a newer one starts the tally again.
    public mutating func observe(
        appID: Int,
        environment: APNsEnvironment = .production,
        provider: PushProvider,
        _ answers: [(reason: String, hint: String?)],
        now: TimeInterval = 0,
        version: Int = 0
    ) -> Suspicion? {
        guard !answers.isEmpty else { return nil }
        let key = HoldKey(appID: appID, environment: environment, provider: provider)
        var tally = tallies[key] ?? Tally()
        if version < tally.version { return nil }
        if version > tally.version { tally = Tally(version: version) }
        func dropOldest() {
            if let old = tally.recent[tally.start] {
                tally.invalid -= 1
                tally.reasons[old, default: 1] -= 1
            }
            tally.start += 1
        }
        while tally.start < tally.recent.count && tally.times[tally.start] < now - configuration.maxAge { dropOldest() }
        for answer in answers {
            if tally.recent.count - tally.start >= configuration.window { dropOldest() }
            tally.times.append(now)
            if let hint = answer.hint {
                tally.invalid += 1
                tally.reasons[answer.reason, default: 0] += 1
                tally.hints[answer.reason] = hint
                tally.recent.append(answer.reason)
            } else {
                tally.recent.append(nil)
            }
        }
        if tally.start > 4 * configuration.window {
            tally.recent.removeFirst(tally.start)
            tally.times.removeFirst(tally.start)
            tally.start = 0
        }
        let seen = tally.recent.count - tally.start
        if tally.invalid >= configuration.minimumInvalid && Double(tally.invalid) > configuration.share * Double(seen) {
            tallies[key] = nil
            let answer = tally.reasons.max { ($0.value, $1.key) < ($1.value, $0.key) }!.key
            return Suspicion(
                appID: appID,
                environment: environment,
                provider: provider,
                answer: answer,
                likelyCause: tally.hints[answer] ?? "",
                invalid: tally.invalid,
                answers: seen,
                version: version
            )
        }
        tallies[key] = tally
        return nil
    }
}

extension MisconfigurationGuard {
    /// What the fleet's answers say of an app's provider (``judge(_:configuration:)``).
    public enum FleetVerdict: Sendable, Equatable {
        /// No misconfiguration suspected: the due held deactivations may be applied.
        case apply
        /// Most answers since the oldest held one said "not valid", but too few to tell a misconfiguration from a few
        /// stray tokens: nothing applied, nothing held; the next answers decide (accepted ones clear the tokens, more
        /// "not valid" ones raise a hold). The devices stay active and are sent again meanwhile.
        case wait
        /// The fleet's answers say misconfiguration: hold the provider, apply nothing.
        case hold(Suspicion)
    }

    /// The rule every worker's per-second duty applies before any held deactivation of `fleet`'s app and provider,
    /// over every worker's answers since the oldest held one (``FleetAnswers``):
    ///
    /// - more than ``Configuration/share`` of them said "not valid", and at least ``Configuration/minimumInvalid``: a
    ///   hold, as one worker's guard raises for its own answers;
    /// - a fleet smaller than ``Configuration/smallFleet`` with more than that share of its devices held (at least
    ///   ``Configuration/smallFleetMinimum``): a hold;
    /// - more than that share said "not valid", but fewer: wait for more answers;
    /// - else, or once an operator confirmed (``FleetAnswers/confirmed``): apply.
    ///
    /// One worker's guard trips within seconds on a big fleet; this catches what it cannot see: a small or slowly paced
    /// app whose answers are spread over several workers, or a misconfiguration that began after most devices were
    /// answered. The held deactivations count as "not valid" answers where the evidence has fewer (it is kept a day).
    public static func judge(_ fleet: FleetAnswers, configuration: Configuration = Configuration()) -> FleetVerdict {
        guard !fleet.confirmed, fleet.held > 0 else { return .apply }
        let invalid = max(fleet.invalid, fleet.held)
        let answers = max(fleet.answers, invalid)
        let mostlyInvalid = Double(invalid) > configuration.share * Double(answers)
        let byShare = mostlyInvalid && invalid >= configuration.minimumInvalid
        let smallFleet =
            fleet.activeDevices < configuration.smallFleet && fleet.held >= configuration.smallFleetMinimum
            && Double(fleet.held) > configuration.share * Double(fleet.activeDevices)
        guard byShare || smallFleet else { return mostlyInvalid ? .wait : .apply }
        let counted = byShare ? (invalid, answers) : (fleet.held, fleet.activeDevices)
        return .hold(
            Suspicion(
                appID: fleet.appID,
                environment: fleet.environment,
                provider: fleet.provider,
                answer: fleet.reason,
                likelyCause: fleet.hint,
                invalid: counted.0,
                answers: counted.1,
                version: fleet.version,
                fleet: true
            )
        )
    }
}

extension MisconfigurationGuard {
    /// Which of `fleet`'s due held deactivations may be applied once ``judge(_:configuration:)`` clears them: those
    /// whose answer was recorded before this time; nil: none yet.
    ///
    /// A misconfiguration answers every push through the provider "not valid", so a push the provider accepted
    /// through the same configuration, sent after a "not valid" answer was recorded, shows that the configuration was
    /// good then and that the answer was the token's. No share of the answers can tell one "not valid" answer from a
    /// stray token where a misconfiguration began at the end of a broadcast (`paperboy-sim --slow-database`, seeds
    /// 1621, 5742, 6057, 6674, 8215 and 9629: one to 22 devices deactivated); this can, at any rate and fleet size. The
    /// cost: a stray token answered at a broadcast's end waits for the next broadcast's accepted pushes, and is sent
    /// to once more. An operator's confirmation (``FleetAnswers/confirmed``) says the answers are the tokens' truth:
    /// every due one is applied.
    public static func appliedBefore(_ fleet: FleetAnswers, configuration: Configuration = Configuration()) -> Date? {
        if fleet.confirmed { return .distantFuture }
        return fleet.lastAccepted.map { $0.addingTimeInterval(-configuration.acceptedAfter) }
    }
}

extension MisconfigurationGuard.Suspicion {
    /// The log's metadata for a hold: app, environment, provider and reason.
    public var metadata: Logger.Metadata {
        [
            LogKey.app: "\(appID)", LogKey.environment: "\(environment.rawValue)", LogKey.provider: "\(provider.rawValue)",
            LogKey.reason: "\(reason)",
        ]
    }
}
