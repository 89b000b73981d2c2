import APNs
import ArgumentParser
import FCM
import Foundation
import Logging
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore
import PaperboyText
import PostgresNIO
import ServiceLifecycle

/// Where broadcasts are sent and how this process takes part: shared by `serve` and `worker`.
struct DispatchOptions: ParsableArguments {
    @Option(
        name: .customLong("apns-endpoint"),
        help: ArgumentHelp(
            "Send every environment's pushes here instead of Apple's servers: a URL such as http://127.0.0.1:2197 (`paperboy apns-sim`). Default: $PAPERBOY_APNS_ENDPOINT, else Apple's.",
            valueName: "url"
        )
    )
    var apnsEndpoint: String?

    @Option(
        name: .customLong("fcm-endpoint"),
        help: ArgumentHelp(
            "Send FCM messages here instead of fcm.googleapis.com: a URL such as http://127.0.0.1:4100 (`paperboy fcm-sim`). Default: $PAPERBOY_FCM_ENDPOINT, else FCM's. Access tokens come from each service account's token_uri.",
            valueName: "url"
        )
    )
    var fcmEndpoint: String?

    @Option(name: .customLong("worker-name"), help: "This worker's name in batch leases (default: host:pid:random).")
    var workerName: String?

    @Option(
        name: .customLong("lease"),
        help: ArgumentHelp("How long a leased batch waits for a worker that died before another takes it over.", valueName: "duration")
    )
    var lease = "30s"

    @Option(
        name: .customLong("max-batch"),
        help: "The most devices in one leased batch: what a worker killed mid-send may have sent without recording it."
    )
    var maxBatch = 1000

    @Option(
        name: .customLong("count-ahead"),
        help: ArgumentHelp(
            "How long before a follow-up wave's start its audience is counted: longer than the count takes (about 15 s at 1 million devices, minutes at 10 million), so that the wave starts on time.",
            valueName: "duration"
        )
    )
    var countAhead = "5m"

    @Option(
        name: .customLong("drain-timeout"),
        help: ArgumentHelp(
            "On SIGTERM, how long pushes already sent may take to be answered; every device not sent by then goes back to its cohort for another worker (1s to 1h). The worker then has 8 s to record what it sent and 5 s more to close: keep it 14 s under the orchestrator's grace period (10s fits Kubernetes' 30 s).",
            valueName: "duration"
        )
    )
    var drainTimeout = "10s"

    @Option(
        name: .customLong("fail-after"),
        help: ArgumentHelp(
            "A running broadcast fails when workers report they cannot send for its app (credentials missing or refused) and none has sent for it this long.",
            valueName: "duration"
        )
    )
    var failAfter = "5m"

    func validate() throws {
        _ = try endpoints()
        do { _ = try FCMOptions.resolvedEndpoint(fcmEndpoint) } catch { throw ValidationError("\(error)") }
        _ = try leaseSeconds()
        _ = try countAheadSeconds()
        _ = try drainSeconds()
        _ = try failAfterSeconds()
        guard (1...100_000).contains(maxBatch) else { throw ValidationError("--max-batch: between 1 and 100000, got \(maxBatch)") }
    }

    func endpoints() throws -> APNsEndpoints {
        let text = apnsEndpoint ?? ProcessInfo.processInfo.environment["PAPERBOY_APNS_ENDPOINT"]
        do {
            return try APNsEndpoints(override: text)
        } catch {
            throw ValidationError("--apns-endpoint / PAPERBOY_APNS_ENDPOINT: \(error)")
        }
    }

    /// `text` as seconds within `range`, or an error naming `flag` (a duration is bounded where it is parsed: `1e300s`
    /// would trap converting to a `Duration`).
    private static func seconds(_ text: String, flag: String, _ range: ClosedRange<TimeInterval>, why: String = "") throws -> TimeInterval {
        let seconds: TimeInterval
        do { seconds = try StaggerPlan.seconds(parsing: text, allowingZero: true) } catch { throw ValidationError("\(flag): \(error)") }
        guard range.contains(seconds) else {
            let bounds =
                range.lowerBound == 0
                ? "at most \(TerminalText.duration(range.upperBound))"
                : "between \(TerminalText.duration(range.lowerBound)) and \(TerminalText.duration(range.upperBound))"
            throw ValidationError("\(flag): \(bounds)\(why), got \(text)")
        }
        return seconds
    }

    private func leaseSeconds() throws -> TimeInterval {
        try Self.seconds(lease, flag: "--lease", 3...3600, why: " (at least 3s, so that heartbeats, every third of it, keep up)")
    }

    private func drainSeconds() throws -> TimeInterval {
        try Self.seconds(drainTimeout, flag: "--drain-timeout", 1...3600, why: " (at least 1s, so that pushes already sent can be answered)")
    }

    /// How long `serve` and `worker` wait for their services to stop on SIGTERM: the drain, the dispatcher's write
    /// grace to record what it sent (``Dispatcher/Configuration/drainWriteGrace``), and half a second to close
    /// connections; then what is left is cancelled (``ProcessServices``, 5 s at most). 23.5 s by default.
    func gracefulStop() throws -> Duration {
        .seconds(try drainSeconds()) + Dispatcher.Configuration().drainWriteGrace + .milliseconds(500)
    }

    private func failAfterSeconds() throws -> TimeInterval {
        try Self.seconds(failAfter, flag: "--fail-after", 10...86_400)
    }

    private func countAheadSeconds() throws -> TimeInterval {
        try Self.seconds(countAhead, flag: "--count-ahead", 0...86_400)
    }

    /// The dispatcher and the APNs and FCM clients it sends with: run all in the service group, the clients
    /// listed before the dispatcher so that they stop after it.
    func makeDispatcher(client: PostgresClient, logger: Logger) throws -> (Dispatcher, APNsClients, FCMClients) {
        // The worker paces its own sends and retries (`pacedByDispatcher`).
        let clients = APNsClients(logger: Logger(label: "paperboy.apns")) { $0.pacedByDispatcher() }
        let channels = APNsChannels(clients: clients, endpoints: try endpoints())
        let fcmClients = FCMClients(endpoint: try FCMOptions.resolvedEndpoint(fcmEndpoint), logger: Logger(label: "paperboy.fcm")) {
            $0.pacedByDispatcher()
        }
        let fcmChannels = FCMChannels(clients: fcmClients)
        var configuration = Dispatcher.Configuration(owner: workerName ?? Dispatcher.Configuration.defaultOwner())
        configuration.leaseDuration = .seconds(try leaseSeconds())
        configuration.maxBatchSize = maxBatch
        configuration.countAhead = .seconds(try countAheadSeconds())
        configuration.drainTimeout = .seconds(try drainSeconds())
        configuration.failAfter = .seconds(try failAfterSeconds())
        let dispatcher = Dispatcher(
            repository: BroadcastRepository(client: client),
            editions: EditionRepository(client: client),
            channels: channels,
            fcmChannels: fcmChannels,
            configuration: configuration,
            logger: Logger(label: "paperboy.dispatch")
        )
        return (dispatcher, clients, fcmClients)
    }
}
