import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore

extension ProviderHoldRepository {
    /// Holds what `suspicion` names (its app, environment and provider), for its configuration version, raised by
    /// `worker`: one worker's guard (``Dispatcher``) or the fleet rule (``BroadcastDuties``).
    /// - Returns: whether this call raised it.
    func raise(_ suspicion: MisconfigurationGuard.Suspicion, by worker: String, logger: Logger) async throws -> Bool {
        try await raise(
            appID: suspicion.appID,
            environment: suspicion.environment,
            provider: suspicion.provider,
            answer: suspicion.answer,
            likelyCause: suspicion.likelyCause,
            reason: suspicion.reason,
            by: worker,
            version: suspicion.version,
            logger: logger
        )
    }
}
