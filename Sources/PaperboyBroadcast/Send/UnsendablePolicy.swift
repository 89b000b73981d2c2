import Foundation
import PaperboyCore
import PaperboyStore

/// When a broadcast fails because nobody can send it, as pure code. A worker that cannot send through a provider
/// for an app gives the batch back and says so (`sender_status`); that is the broadcast's failure only when no
/// worker can: some report a problem, and none has sent for the app through that provider for ``Configuration/failAfter``.
/// One misconfigured pod (a missing secret mount) never fails a broadcast that the others send.
public enum UnsendablePolicy {
    public struct Configuration: Sendable, Equatable {
        /// How long nobody may have sent for the app through the provider, with problems reported, before its
        /// broadcasts fail (`--fail-after`, 5 minutes).
        public var failAfter: TimeInterval = 300
        /// A problem not reported again for this long is a worker's that is gone (workers report one at each try,
        /// at most ``SenderHealth/maximumBackoff`` apart).
        public var staleAfter: TimeInterval = 180

        public init(failAfter: TimeInterval = 300, staleAfter: TimeInterval = 180) {
            self.failAfter = failAfter
            self.staleAfter = staleAfter
        }
    }

    /// A broadcast to end as failed, and why.
    public struct Failure: Sendable, Equatable {
        public var broadcastID: UUID
        public var provider: PushProvider
        public var reason: String
    }

    /// The broadcasts to fail at `now`.
    public static func failures(_ broadcasts: [GivenBackBroadcast], now: Date, configuration: Configuration) -> [Failure] {
        broadcasts.compactMap { broadcast in
            for provider in PushProvider.allCases {
                let statuses = broadcast.statuses.filter { $0.provider == provider }
                let current = statuses.filter { $0.problem != nil && now.timeIntervalSince($0.updatedAt) <= configuration.staleAfter }
                guard !current.isEmpty else { continue }
                let lastSent = statuses.compactMap(\.lastSentAt).max() ?? .distantPast
                let firstProblem = current.compactMap(\.problemSince).min() ?? now
                let silentSince = max(lastSent, firstProblem)
                guard now.timeIntervalSince(silentSince) >= configuration.failAfter else { continue }
                let workers = current.sorted { $0.worker < $1.worker }.map { "\($0.worker): \($0.problem ?? "")" }
                let reason =
                    "no worker could send its \(provider.displayName) pushes for \(Int(now.timeIntervalSince(silentSince)))s "
                    + "(--fail-after \(Int(configuration.failAfter))s): " + workers.joined(separator: "; ")
                return Failure(broadcastID: broadcast.broadcastID, provider: provider, reason: reason)
            }
            return nil
        }
    }
}
