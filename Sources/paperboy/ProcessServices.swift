import Logging
import PaperboyCore
import ServiceLifecycle
import Synchronization
import UnixSignals

/// How the long-running commands (`serve`, `worker`) run their services and stop on SIGTERM or SIGINT, or when
/// one of them ends: each service stops gracefully, the last one given first (the worker's dispatcher drains while
/// the database client and the provider clients are still up); what has not stopped within ``gracefulStop`` is
/// cancelled, logged by name as abandoned, and the process still exits 0 (non-zero when a service failed).
///
/// Why a bound: Kubernetes kills a pod 30 s after SIGTERM by default, and a service waiting on a database
/// that went away waits as long as its own limits allow (the dispatcher's lease call 30 s, its advance
/// 30 minutes; a query written as PostgreSQL closed the connection is never answered): a `paperboy serve`
/// whose PostgreSQL was stopped under it was still running 20 minutes after SIGTERM. A healthy stop (the
/// dispatcher finishing the batches it holds) takes a few seconds.
enum ProcessServices {
    /// How long the services together may take to stop gracefully before what is left is cancelled, in a process
    /// without a dispatcher; with one, its drain timeout plus 8.5 s (``DispatchOptions/gracefulStop()``).
    static let gracefulStop: Duration = .seconds(10)
    /// How long cancelled services may take to end; past it ServiceLifecycle ends the process with a
    /// fatal error (a bug in a service: something ignores cancellation), which is still an exit.
    static let cancellationLimit: Duration = .seconds(5)

    /// One service of the process.
    struct Entry {
        /// How the log names it.
        var name: String
        var service: any Service
        /// Whether its end ends the process (the worker's dispatcher); otherwise its end before the stop is logged as
        /// unexpected, and the process stops all the same, gracefully.
        var endsProcess = false
    }

    /// Runs `entries` in one group, started in order and stopped in reverse, until SIGTERM or SIGINT (or a
    /// service's end); then stops them as described above.
    static func run(_ entries: [Entry], gracefulStop: Duration = gracefulStop, logger: Logger) async throws {
        var configuration = ServiceGroupConfiguration(
            services: entries.map { entry in
                // Whatever ends first, and however (the dispatcher's end, a listener that fails, a client that
                // stops), the others stop in order, gracefully: never cancelled at once. Cancelling the group
                // cancelled the database client under a draining dispatcher, which could then not record the
                // batches it had sent (seen in the operations drill: a worker whose APNs service ended 4 s into its
                // drain; its three batches were leased again and sent twice). Only the time bound cancels.
                ServiceGroupConfiguration.ServiceConfiguration(
                    service: Watched(name: entry.name, service: entry.service, logger: logger, endsProcess: entry.endsProcess),
                    successTerminationBehavior: .gracefullyShutdownGroup,
                    failureTerminationBehavior: .gracefullyShutdownGroup
                )
            },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        configuration.maximumGracefulShutdownDuration = gracefulStop
        configuration.maximumCancellationDuration = cancellationLimit
        try await ServiceGroup(configuration: configuration).run()
    }

    /// A service whose cancellation (the stop ran out of time, or another service failed) is logged with
    /// its name and ends it without an error: the process is stopping anyway, and an operator reading the
    /// log learns what did not finish (the dispatcher's batches go back to other workers when their leases
    /// expire; a scheduler tick is tried again by the next leader).
    struct Watched: Service {
        var name: String
        var service: any Service
        var logger: Logger
        var endsProcess = false

        func run() async throws {
            let stop = StopOrder()
            do {
                try await withTaskCancellationHandler {
                    try await withGracefulShutdownHandler {
                        try await service.run()
                    } onGracefulShutdown: {
                        stop.record(.asked)
                    }
                } onCancel: {
                    stop.record(.cancelled)
                }
            } catch  where Task.isCancelled {
                cancelled(asked: stop.wasAskedFirst, error: error)
                return
            }
            if Task.isCancelled {
                cancelled(asked: stop.wasAskedFirst, error: nil)
            } else if !endsProcess && !stop.wasAsked {
                logger.error(
                    "stop: the service ended before the process was asked to stop; the others stop in order",
                    metadata: [LogKey.service: "\(name)"]
                )
            }
        }

        private func cancelled(asked: Bool, error: (any Error)?) {
            var metadata: Logger.Metadata = [LogKey.service: "\(name)"]
            if let error { metadata[LogKey.error] = "\(String(reflecting: error))" }
            if asked {
                logger.warning("stop: the service did not stop in time and was cancelled; what it was doing is abandoned", metadata: metadata)
            } else {
                // Its turn (services stop in reverse order) had not come: it ends without finishing its work.
                logger.notice("stop: the service was cancelled before its turn to stop", metadata: metadata)
            }
        }
    }

    /// Which came first to a service: the request to stop gracefully, or cancellation. A service cancelled
    /// before its turn to stop may be asked afterwards, as the group goes on through the services.
    final class StopOrder: Sendable {
        enum Event: UInt8 {
            case asked = 1
            case cancelled = 2
        }

        private let first = Atomic<UInt8>(0)

        func record(_ event: Event) {
            _ = first.compareExchange(expected: 0, desired: event.rawValue, ordering: .relaxed)
        }

        var wasAskedFirst: Bool { first.load(ordering: .relaxed) == Event.asked.rawValue }

        /// Whether it was asked or cancelled at all.
        var wasAsked: Bool { first.load(ordering: .relaxed) != 0 }
    }
}
