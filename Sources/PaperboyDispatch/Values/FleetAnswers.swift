import Foundation
import PaperboyCore

/// What every worker's answers through one app's provider say, read from the store before any of its held
/// deactivations is applied (`answer_tallies`, migration 0031): the evidence ``MisconfigurationGuard``'s fleet rule
/// judges, so that a misconfiguration spread thin over many workers is caught as surely as one a single worker sees.
public struct FleetAnswers: Sendable, Equatable {
    public var appID: Int
    /// The environment of the broadcasts the answers were to: each is judged, and held, on its own.
    public var environment: APNsEnvironment
    public var provider: PushProvider
    /// The app's configuration version now (`apps.credentials_version`): a hold raised from this evidence is for it.
    public var version: Int
    /// Deactivations held for the app's provider, and how many of them are old enough to apply.
    public var held: Int
    public var due: Int
    /// Answers recorded through the provider for the app by every worker since shortly before the oldest held one
    /// (accepted and rejected; not those the provider called transient), and how many said "not valid for this app".
    public var answers: Int
    public var invalid: Int
    /// The "not valid" answer most of them were, as the provider spells it, and what it means from every device.
    public var reason: String
    public var hint: String
    /// The app's devices its broadcasts reach through the provider in the environment (active, downloading editions by
    /// themselves: the broadcast scan's index, one probe), counted up to ``MisconfigurationGuard/Configuration/smallFleet``
    /// (a larger fleet counts as that many): a fleet so small that its held answers are most of it.
    public var activeDevices: Int
    /// An operator confirmed that "not valid" answers to this configuration are the tokens' truth
    /// (`paperboy apps confirm-deactivations`, within the last 24 hours).
    public var confirmed: Bool
    /// When the latest push the provider accepted through the app's configuration was sent, of those answered since
    /// the oldest held one (nil: none): the held deactivations recorded before it were the tokens' truth
    /// (``MisconfigurationGuard/appliedBefore(_:configuration:)``).
    public var lastAccepted: Date?

    public init(
        appID: Int,
        environment: APNsEnvironment = .production,
        provider: PushProvider,
        version: Int,
        held: Int,
        due: Int,
        answers: Int,
        invalid: Int,
        reason: String,
        hint: String,
        activeDevices: Int,
        confirmed: Bool,
        lastAccepted: Date? = nil
    ) {
        self.appID = appID
        self.environment = environment
        self.provider = provider
        self.version = version
        self.held = held
        self.due = due
        self.answers = answers
        self.invalid = invalid
        self.reason = reason
        self.hint = hint
        self.activeDevices = activeDevices
        self.confirmed = confirmed
        self.lastAccepted = lastAccepted
    }
}
