import Foundation
import Hummingbird
import Logging
import Metrics
import PaperboyCore
import PaperboyStore
import PostgresNIO
import Synchronization

/// `/health/live` (the process answers) and `/health/ready` (the database answers, its migrations are current, and,
/// in a worker, its dispatcher can send for every app it tried), for load balancers and orchestrators.
///
/// A stranger learns up or down only: a 503's body says `not_ready`, never why (a secret's path, a migration's
/// name). The reasons go to the log (when they change), to the metrics (`paperboy_ready`, and
/// `paperboy_unready{reason}` per reason code), and, on `serve --admin-port`'s listener, to `/health/ready` itself
/// (``detailed``).
struct HealthRoutes {
    let client: PostgresClient
    let migrator: Migrator
    let timeout: Duration
    /// Why the process cannot send some pushes, one line per app and provider.
    let senderProblems: @Sendable () -> [String]
    /// Whether sender problems make the process unready: a worker's do (its work belongs to the others); a serve's
    /// API does not (one app's missing key must not take every API replica out of the load balancer).
    let sendersGateReadiness: Bool
    /// Whether `/health/ready` says why (the admin listener) or only up or down (any other).
    let detailed: Bool
    let memory: ReadinessMemory
    /// One check at a time, its outcome shared for a second: probes from anyone cost the database one query a second,
    /// and an answer is at most that old.
    let checks = SharedAnswers<Int, Result<Detail, Unready>>(timeToLive: 1, capacity: 1)

    struct Status: ResponseEncodable {
        var status: String
    }

    /// The admin listener's answer when ready: what was checked.
    struct Detail: ResponseEncodable, Sendable {
        var status: String
        var database: String
        var migrations: String
        /// Apps and providers this process's dispatcher cannot send for (a serve's API stays ready with them).
        var cannotSend: [String]
    }

    /// What was wrong, with the code clients and metrics see and the reason operators read.
    struct Unready: Error, Sendable {
        var code: APIError.Code
        var reason: String
    }

    static let reasonCodes: [APIError.Code] = [.databaseUnavailable, .migrationsPending, .migrationsMismatch, .cannotSend]

    func add(to router: Router<APIRequestContext>) {
        router.get("health/live") { _, _ in Status(status: "live") }
        router.get("health/ready") { request, context in try await ready(request, context: context) }
    }

    private func ready(_ request: Request, context: APIRequestContext) async throws -> Response {
        let logger = context.logger
        let outcome = try await checks.value(0, now: Date()) { () async -> Result<Detail, Unready> in
            do throws(Unready) {
                return .success(try await check(logger: logger))
            } catch {
                return .failure(error)
            }
        }.value
        memory.record(outcome.failure, logger: logger)
        switch outcome {
        case .success(let detail):
            return detailed
                ? try detail.response(from: request, context: context) : try Status(status: "ready").response(from: request, context: context)
        case .failure(let unready):
            if detailed { throw APIError(.serviceUnavailable, code: unready.code, message: unready.reason) }
            throw APIError(
                .serviceUnavailable,
                code: .notReady,
                message: "not ready; the reason is in the server's log and metrics (paperboy_unready), and on its admin port"
            )
        }
    }

    private func check(logger: Logger) async throws(Unready) -> Detail {
        let status: MigrationStatus
        let started = ContinuousClock.now
        do {
            status = try await withThrowingTaskGroup(of: MigrationStatus?.self) { group in
                group.addTask { try await migrator.status(client: client, logger: logger) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let status = first else { throw CancellationError() }
                return status
            }
        } catch let error as MigrationError {
            throw Unready(code: .migrationsMismatch, reason: error.description)
        } catch {
            throw Unready(code: .databaseUnavailable, reason: "the database did not answer within \(timeout): \(String(reflecting: error))")
        }
        let took = ContinuousClock.now - started
        guard status.isCurrent else {
            throw Unready(code: .migrationsPending, reason: "pending migrations: \(status.pending.joined(separator: ", ")); run `paperboy migrate`")
        }
        let problems = senderProblems()
        if sendersGateReadiness, !problems.isEmpty {
            throw Unready(code: .cannotSend, reason: "cannot send: " + problems.joined(separator: "; "))
        }
        return Detail(
            status: "ready",
            database: "answered in \(took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000) ms",
            migrations: "current (\(status.applied.count) applied)",
            cannotSend: problems
        )
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}

/// The last readiness outcome of a process: a change is logged once (not every probe), and the gauges say the
/// current one.
final class ReadinessMemory: Sendable {
    private let last = Mutex<String?>("")

    func record(_ unready: HealthRoutes.Unready?, logger: Logger) {
        let reason = unready.map { "\($0.code): \($0.reason)" }
        let changed = last.withLock { last in
            defer { last = reason }
            return last != reason
        }
        Gauge(label: "paperboy_ready").record(unready == nil ? 1 : 0)
        for code in HealthRoutes.reasonCodes {
            Gauge(label: "paperboy_unready", dimensions: [("reason", code.rawValue)]).record(unready?.code == code ? 1 : 0)
        }
        guard changed else { return }
        if let unready {
            logger.warning("not ready", metadata: [LogKey.reason: "\(unready.code)", LogKey.error: "\(unready.reason)"])
        } else {
            logger.info("ready")
        }
    }
}
