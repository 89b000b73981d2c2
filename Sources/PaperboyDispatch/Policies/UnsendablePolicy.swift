import Foundation
import PaperboyCore

/// When a broadcast fails because nobody can send it, as pure code. A worker that cannot send through a provider
/// for an app gives that provider's targets back and says so (`sender_status`); that is the broadcast's failure only
/// when no worker can: some report a problem now, and nobody has sent for the app through that provider since the
/// broadcast's oldest batch still given back for it was given back, for ``Configuration/failAfter``. The silence is
/// counted in this broadcast: a worker's last send of an earlier broadcast says nothing about this one. One
/// misconfigured pod (a missing secret mount) never fails a broadcast that the others send, even when it is the
/// first to lease. A provider held for a suspected misconfiguration is not counted here: it waits for an operator.
public enum UnsendablePolicy {
    public struct Configuration: Sendable, Equatable {
        /// How long nobody may have sent for the app through the provider, with problems reported, before its
        /// broadcasts fail (`--fail-after`, 5 minutes).
        public var failAfter: TimeInterval = 300
        /// A problem not reported again for this long is a worker's that is gone or no longer tries: workers report
        /// one at each try, at most ``SenderHealth/maximumBackoff`` apart, so twice that.
        public var staleAfter: TimeInterval = 2 * SenderHealth.maximumBackoff

        public init(failAfter: TimeInterval = 300, staleAfter: TimeInterval = 2 * SenderHealth.maximumBackoff) {
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
                guard let givenBackSince = broadcast.givenBackSince[provider] else { continue }
                let statuses = broadcast.statuses.filter { $0.provider == provider }
                let current = statuses.filter { $0.problem != nil && now.timeIntervalSince($0.updatedAt) <= configuration.staleAfter }
                guard !current.isEmpty else { continue }
                let lastSent = statuses.compactMap(\.lastSentAt).max() ?? .distantPast
                let silentSince = max(lastSent, givenBackSince)
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
