import Foundation
import PaperboyCore

/// An app's provider, in one environment, that answers that it is busy or failing (nothing but a probe goes to it until
/// it answers otherwise), or that cannot be reached (the batches hold their sends until it can): `BatchSendMachine`.
/// Each worker finds its own, and says so in its status (`workers`, migration 0033), where `paperboy broadcast status`
/// and the console read them.
public struct ProviderPause: Sendable, Equatable, Codable {
    /// The same scope as a hold's: one app's provider in one environment.
    public typealias Key = HoldKey

    public var key: Key
    public var since: Date

    public init(key: Key, since: Date) {
        self.key = key
        self.since = since
    }

    /// How a worker's status shows it.
    public var description: String {
        "app \(key.appID) \(key.provider.displayName) (\(key.environment.rawValue)): the provider answers that it is unavailable, or "
            + "cannot be reached; sends paused since \(since.formatted(.iso8601)), probing until it answers"
    }
}
