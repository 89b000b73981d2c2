import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PostgresNIO

/// The receipt tallies' work in a dispatcher's advance loop (every second, on every worker): a step when one is
/// due and no other worker is taking it, then, by ``ReceiptTallyPolicy``, the recount of a broadcast that ended.
/// Whichever worker gets the watermark's lock does the work; the others return at once.
struct ReceiptTallier: Sendable {
    let tallies: ReceiptTallies
    let policy: ReceiptTallyPolicy

    init(client: PostgresClient, configuration: ReceiptTallies.Configuration = .init(), policy: ReceiptTallyPolicy = .init()) {
        self.tallies = ReceiptTallies(client: client, configuration: configuration)
        self.policy = policy
    }

    /// One round; `now` is the dispatcher's clock, which wrote the broadcasts' ends.
    func run(now: Date, logger: Logger) async throws {
        guard let step = try await tallies.step(logger: logger) else { return }
        logger.debug(
            "receipts tallied",
            metadata: [
                LogKey.receipts: "\(step.receipts)", LogKey.upgrades: "\(step.upgrades)",
                LogKey.countedThrough: "\(step.countedThrough.formatted(.iso8601))",
            ]
        )
        let ended = try await tallies.endedBroadcasts(logger: logger)
        guard let due = policy.due(ended, now: now) else { return }
        _ = try await tallies.recountIfNeeded(broadcastID: due.id, recountedBefore: due.recountedBefore, now: now, logger: logger)
    }
}
