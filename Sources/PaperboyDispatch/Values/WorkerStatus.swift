import Foundation
import PaperboyCore

/// A worker as it last said of itself (`workers`, migration 0014).
public struct WorkerStatus: Sendable, Equatable, Codable {
    public var name: String
    public var startedAt: Date
    public var seenAt: Date
    public var draining: Bool
    /// Batches it held when it last said so.
    public var batches: Int
    /// What it cannot send, one line per app and provider.
    public var problems: [String]
    /// The providers it has paused because they answer that they are unavailable (``cannotSend`` has them as text).
    public var pauses: [ProviderPause]
    public var lastError: String?
    public var lastErrorAt: Date?

    /// What it cannot send, one line each: its ``problems``, then its ``pauses``. A worker of an earlier version wrote
    /// its pauses among its problems, and no pauses: listed once either way.
    public var cannotSend: [String] {
        problems + pauses.map(\.description)
    }

    public init(
        name: String,
        startedAt: Date,
        seenAt: Date,
        draining: Bool = false,
        batches: Int = 0,
        problems: [String] = [],
        pauses: [ProviderPause] = [],
        lastError: String? = nil,
        lastErrorAt: Date? = nil
    ) {
        self.pauses = pauses
        self.name = name
        self.startedAt = startedAt
        self.seenAt = seenAt
        self.draining = draining
        self.batches = batches
        self.problems = problems
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
    }
}
