import Foundation
import Logging
import PaperboyCore
import PaperboyStore

/// A broadcast to start: what the scheduler (or any other caller) asks for.
public struct BroadcastRequest: Sendable, Equatable {
    public var editionID: UUID
    public var environment: APNsEnvironment
    public var options: BroadcastOptions
    /// Who asks: `cli`, `api`, `schedule:ID`.
    public var origin: String

    /// The audit entry a started broadcast is written with: for a schedule, surface and role `scheduler`, the
    /// schedule as the name.
    public var audit: AuditEntry? {
        guard origin.hasPrefix("schedule:") else { return nil }
        return AuditEntry(
            surface: .scheduler,
            role: "scheduler",
            name: "schedule " + origin.dropFirst("schedule:".count),
            address: nil,
            action: "start broadcast",
            detail: "\(environment.rawValue), fired by its schedule"
        )
    }

    public init(editionID: UUID, environment: APNsEnvironment, options: BroadcastOptions, origin: String) {
        self.editionID = editionID
        self.environment = environment
        self.options = options
        self.origin = origin
    }
}

extension BroadcastRepository {
    /// Starts the broadcasts a ``Scheduler`` asks for (or attaches to the edition's), saying what happened.
    public func starter(logger: Logger) -> Scheduler.Start {
        { request in
            try await BroadcastPreflight.check(
                editionID: request.editionID,
                environment: request.environment,
                editions: EditionRepository(client: self.client),
                apps: AppRepository(client: self.client),
                logger: logger
            )
            let start = try await self.start(
                editionID: request.editionID,
                environment: request.environment,
                options: request.options,
                origin: request.origin,
                now: Date(),
                audit: request.audit,
                logger: logger
            )
            let id = start.broadcast.id.uuidString.lowercased()
            return start.created ? "broadcast \(id) started" : "attached to broadcast \(id) (\(start.broadcast.state.rawValue))"
        }
    }
}
