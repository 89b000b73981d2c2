import Foundation
import Metrics
import PaperboyCore
import Synchronization

/// The apps and providers a worker cannot send through now, as its machine last said: for the worker's readiness
/// and `paperboy_worker_unable_to_send`.
public final class WorkerHealth: Sendable {
    private let current = Mutex<[SenderHealth.Problem]>([])
    private let paused = Mutex<[ProviderPause]>([])

    public init() {}

    /// Why this worker cannot send some pushes, one line per app and provider; empty when it can.
    public var problems: [String] {
        current.withLock { $0 }.map { "app \($0.appID) \($0.provider.displayName): \($0.reason)" }
    }

    package func update(_ problems: [SenderHealth.Problem]) {
        let gone = current.withLock { current -> [SenderHealth.Problem] in
            defer { current = problems }
            return current.filter { old in !problems.contains { $0.appID == old.appID && $0.provider == old.provider && $0.code == old.code } }
        }
        for problem in gone { Self.gauge(problem).record(0) }
        for problem in problems { Self.gauge(problem).record(1) }
    }

    /// The providers this worker's batches found busy or failing (`paperboy_provider_unavailable_since_seconds`, the
    /// pause's start in Unix seconds while it lasts), as its status stores them (`workers.pauses`).
    public var pauses: [ProviderPause] {
        paused.withLock { $0 }
    }

    /// - Returns: the pauses that began and those that ended since the last update.
    package func update(_ pauses: [ProviderPause]) -> (began: [ProviderPause], ended: [ProviderPause]) {
        let (began, ended) = paused.withLock { current -> ([ProviderPause], [ProviderPause]) in
            defer { current = pauses }
            return (
                pauses.filter { new in !current.contains { $0.key == new.key } },
                current.filter { old in !pauses.contains { $0.key == old.key } }
            )
        }
        // The value is the pause's start, which does not change while it lasts: recorded once, not at every step.
        for pause in ended { Self.gauge(pause).destroy() }
        for pause in began { Self.gauge(pause).record(pause.since.timeIntervalSince1970) }
        return (began, ended)
    }

    private static func gauge(_ pause: ProviderPause) -> Gauge {
        Gauge(
            label: "paperboy_provider_unavailable_since_seconds",
            dimensions: [
                ("app", "\(pause.key.appID)"), ("environment", pause.key.environment.rawValue), ("provider", pause.key.provider.rawValue),
            ]
        )
    }

    private static func gauge(_ problem: SenderHealth.Problem) -> Gauge {
        Gauge(
            label: "paperboy_worker_unable_to_send",
            dimensions: [("app", "\(problem.appID)"), ("provider", problem.provider.rawValue), ("reason", problem.code)]
        )
    }
}
