import Foundation
import PaperboyCore

/// How a batch ends: why targets go back to the cohort, and what the worker writes.
extension BatchSendMachine {
    /// Why one provider's targets go back to the cohort.
    public enum Unsendable: Sendable, Equatable {
        /// This worker cannot load the app's credentials for it (a file missing, a variable not set).
        case unavailable(String)
        /// The provider refused this worker's credentials, also after they were read again.
        case refused(String)
        /// Held for a suspected misconfiguration of the app at the provider.
        case held(String)
        /// The provider said the app's configuration, or the endpoint, is wrong for every push (`TopicDisallowed`).
        case misconfigured(String)

        public var reason: String {
            switch self {
            case .unavailable(let reason), .refused(let reason), .held(let reason), .misconfigured(let reason): reason
            }
        }

        /// `load`, `refused`, `held` or `misconfigured`: the `reason` dimension of `paperboy_worker_unable_to_send`.
        public var code: String {
            switch self {
            case .unavailable: "load"
            case .refused: "refused"
            case .held: "held"
            case .misconfigured: "misconfigured"
            }
        }
    }

    /// Why targets go back: a drain, and the providers this worker could not send through.
    public struct GiveBack: Sendable, Equatable {
        public var draining: Bool
        public var providers: [PushProvider: Unsendable]

        public init(draining: Bool = false, providers: [PushProvider: Unsendable] = [:]) {
            self.draining = draining
            self.providers = providers
        }

        /// Every provider the targets go back for, in order: what the store keeps with the batch
        /// (`given_back_providers`), so that a worker that cannot send through them either leaves it to others.
        public var providerList: [PushProvider] { providers.keys.sorted { $0.rawValue < $1.rawValue } }

        /// Those of ``providerList`` held for a suspected misconfiguration: they wait for an operator on every worker,
        /// and time spent held is no failure to send, so it does not count towards `--fail-after` (counted, a keyless
        /// pod reporting after the operator's fix failed the broadcast at once).
        public var heldProviders: [PushProvider] {
            providerList.filter { if case .held = providers[$0] { true } else { false } }
        }

        /// How `broadcast status` shows it: `draining`, or `<provider>: <reason>` per provider.
        public var description: String {
            if draining { return "draining" }
            return providers.keys.sorted { $0.rawValue < $1.rawValue }.map { "\($0.rawValue): \(providers[$0]!.reason)" }
                .joined(separator: "; ")
        }
    }

    public enum Completion: Sendable, Equatable {
        /// Every target has its outcome.
        case record([BatchOutcome])
        /// Record these, and give the targets at `returned` back to the cohort under the lease.
        case giveBack(recorded: [BatchOutcome], returned: [Int], because: GiveBack)
        /// The lease was lost: record nothing.
        case abandon
    }
}
