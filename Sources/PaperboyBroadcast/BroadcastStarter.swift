import Foundation
import Logging
import PaperboyCore

/// A broadcast to start: what the scheduler (or any other caller) asks for.
public struct BroadcastRequest: Sendable, Equatable {
    public var editionID: UUID
    public var environment: APNsEnvironment
    public var options: BroadcastOptions
    /// Who asks: `cli`, `api`, `schedule:ID`.
    public var origin: String

    public init(editionID: UUID, environment: APNsEnvironment, options: BroadcastOptions, origin: String) {
        self.editionID = editionID
        self.environment = environment
        self.options = options
        self.origin = origin
    }
}
