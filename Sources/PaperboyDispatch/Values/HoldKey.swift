import Foundation
import PaperboyCore

/// An app's provider in one APNs environment: what a hold for a suspected misconfiguration covers (`provider_holds`,
/// migration 0032), and what a provider's outage pauses (``ProviderPause``). A sandbox build's wrong tokens hold the
/// app's sandbox broadcasts, never its production ones.
public struct HoldKey: Hashable, Sendable, Comparable, Codable {
    public var appID: Int
    public var environment: APNsEnvironment
    public var provider: PushProvider

    public init(appID: Int, environment: APNsEnvironment, provider: PushProvider) {
        self.appID = appID
        self.environment = environment
        self.provider = provider
    }

    public static func < (lhs: HoldKey, rhs: HoldKey) -> Bool {
        (lhs.appID, lhs.environment.rawValue, lhs.provider.rawValue) < (rhs.appID, rhs.environment.rawValue, rhs.provider.rawValue)
    }
}
