import Hummingbird
import Logging
import PaperboyStore
import PostgresNIO

/// `/health/live` (the process answers) and `/health/ready` (the database answers, its migrations are
/// current, and the process's dispatcher can send for every app it tried), for load balancers and orchestrators.
struct HealthRoutes {
    let client: PostgresClient
    let migrator: Migrator
    let timeout: Duration
    /// Why the process cannot send some pushes, one line per app and provider.
    let senderProblems: @Sendable () -> [String]

    struct Status: ResponseEncodable {
        var status: String
    }

    func add(to router: Router<APIRequestContext>) {
        router.get("health/live") { _, _ in Status(status: "live") }
        router.get("health/ready") { _, context in try await ready(logger: context.logger) }
    }

    private func ready(logger: Logger) async throws -> Status {
        let status: MigrationStatus
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
            throw APIError(.serviceUnavailable, code: .migrationsMismatch, message: error.description)
        } catch {
            logger.warning("readiness check: database unavailable", metadata: ["error": "\(String(reflecting: error))"])
            throw APIError(.serviceUnavailable, code: .databaseUnavailable, message: "the database did not answer within \(timeout)")
        }
        guard status.isCurrent else {
            throw APIError(
                .serviceUnavailable,
                code: .migrationsPending,
                message: "pending migrations: \(status.pending.joined(separator: ", ")); run `paperboy migrate`"
            )
        }
        let problems = senderProblems()
        guard problems.isEmpty else {
            throw APIError(.serviceUnavailable, code: .cannotSend, message: "cannot send: " + problems.joined(separator: "; "))
        }
        return Status(status: "ready")
    }
}
