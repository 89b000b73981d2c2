import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import PostgresNIO
import ServiceLifecycle

/// Keeps each running broadcast's counters over time for the console's charts: every
/// ``ConsoleConfiguration/sampleInterval`` it reads the progress of the broadcasts that run (and of those that just
/// ended, for their final counts) and stores a sample and a snapshot (`console_samples`, `console_snapshots`).
///
/// Every `paperboy serve` with the console runs one; at any moment one of them samples, the one holding a
/// transaction-level advisory lock (another process skips that tick), so the cost does not grow with the number
/// of processes or of people watching. What it costs: one `progress` read per running broadcast per interval, and
/// never more often than ten times the time the last one took (a broadcast whose progress takes a second to count
/// is sampled every 10 s at most).
public struct ConsoleSampler: Service {
    let client: PostgresClient
    let configuration: ConsoleConfiguration
    let logger: Logger

    public func run() async throws {
        var lastPrune: Date?
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await tick()
                let now = configuration.now()
                if lastPrune.map({ now.timeIntervalSince($0) >= 3600 }) ?? true {
                    lastPrune = now
                    let pruned = try await ConsoleRepository(client: client).pruneSamples(
                        before: now.addingTimeInterval(-configuration.sampleRetention),
                        logger: logger
                    )
                    if pruned > 0 { logger.info("console samples pruned", metadata: [LogKey.count: "\(pruned)"]) }
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("console sampling failed; trying again", metadata: [LogKey.error: "\(String(reflecting: error))"])
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: configuration.sampleInterval) }
            } catch is CancellationError {
                return
            }
        }
    }

    /// One round: samples every broadcast that is due, unless another process is sampling.
    /// - Returns: how many broadcasts were sampled, or nil when another process holds the lock.
    @discardableResult
    public func tick() async throws -> Int? {
        let repository = ConsoleRepository(client: client)
        let broadcasts = BroadcastRepository(client: client)
        let configuration = self.configuration
        let logger = self.logger
        return try await repository.whileSampling(logger: logger) {
            let now = configuration.now()
            var sampled = 0
            for candidate in try await repository.broadcastsToSample(now: now, logger: logger) {
                if let at = candidate.sampledAt,
                    now.timeIntervalSince(at) < Self.spacing(interval: configuration.sampleInterval, took: candidate.took)
                {
                    continue
                }
                let started = ContinuousClock.now
                guard let progress = try await broadcasts.progress(id: candidate.id, logger: logger) else { continue }
                let took = ContinuousClock.now - started
                try await repository.record(progress, at: configuration.now(), took: Self.seconds(took), logger: logger)
                sampled += 1
            }
            return sampled
        }
    }

    /// Seconds between two samples of a broadcast: the interval, less a little so that a tick that comes a moment
    /// early still samples, and at least ten times what reading the progress took.
    static func spacing(interval: Duration, took: Double) -> Double {
        max(seconds(interval) * 0.8, took * 10)
    }

    /// After how long a running broadcast's snapshot is too old to show as current: a sampler has stopped.
    static func staleAfter(interval: Duration, took: Double) -> Double {
        max(seconds(interval) * 3, took * 10 + seconds(interval) * 2)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
